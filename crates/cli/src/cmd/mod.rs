//! One module per subcommand.

pub mod compare;
pub mod cost;
pub mod find_max;
pub mod history;
pub mod host;
pub mod k8s;
pub mod load;
pub mod merge;
pub mod report;
pub mod run;
pub mod serve;
