//! One module per subcommand.

pub mod compare;
pub mod host;
pub mod k8s;
pub mod load;
pub mod merge;
pub mod report;
pub mod run;
pub mod serve;
