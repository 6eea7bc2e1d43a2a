//! One module per subcommand.

pub mod compare;
pub mod host;
pub mod load;
pub mod report;
pub mod run;
pub mod serve;
