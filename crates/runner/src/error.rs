//! The runner's one error type: what stops a suite from starting or a results directory from
//! being read. A cell that fails (a process that does not start, a wrong answer) is not an
//! error here: it is recorded as a failed cell and the run goes on.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Errors of suite validation, planning and the results directory.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunnerError {
    /// The suite is invalid. `file` names it (`suite.toml`, or `built-in suite`); `message` is
    /// one line naming the key and what is wrong.
    #[error("{file}: {message}")]
    Suite {
        /// The suite file's name.
        file: String,
        /// What is wrong, naming the key.
        message: String,
    },
    /// A suite value is wrong: the key (`[load] timeout`, `scenario "a": backend`) and what is
    /// wrong with it. Validation turns it into [`RunnerError::Suite`], which names the file.
    #[error("{key}: {problem}")]
    SuiteValue {
        /// The key, with the table or scenario it is in.
        key: String,
        /// What is wrong with its value.
        problem: String,
    },
    /// Include/exclude filters left no cell to run.
    #[error(
        "no cell left to run: the include/exclude filters matched none of the {planned} cells"
    )]
    NothingToRun {
        /// Cells before filtering.
        planned: usize,
    },
    /// A file or directory could not be read or written.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// What was being done (`create`, `write`, `read`).
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A results directory could not be written or read.
    #[error(transparent)]
    Results(#[from] gatebench_results::ResultsError),
    /// The matrix expands to more cells than a run may have.
    #[error(
        "the matrix expands to {} cells (scenarios × protocols × users or rates × sizes \
         × delays × repeats); at most {}",
        cells.map_or_else(|| "more than 2^64".to_owned(), |n| n.to_string()),
        max
    )]
    TooManyCells {
        /// How many cells it expands to; `None` past 2^64.
        cells: Option<u64>,
        /// The most a run may have (`suite::MAX_CELLS`).
        max: u64,
    },
    /// A command-line change to the suite cannot apply (`--duration 0`, a `--variant` without
    /// `=`, `--sut-args` for a suite without a built-in SUT): one line naming the flag.
    #[error("{0}")]
    Flag(String),
    /// A `--variant` name is not a plain word.
    #[error("--variant: the name `{label}` must be letters, digits, '-' or '_'")]
    VariantName {
        /// The name given.
        label: String,
    },
    /// `sh` could not be run for a setup command.
    #[error("cannot run sh")]
    RunShell {
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A setup command ran and failed.
    #[error(
        "`{command}` {status} (see {log}){}",
        last_line.as_deref().map(|l| format!(": {l}")).unwrap_or_default()
    )]
    SetupCommand {
        /// The command line, as given to `sh -c`.
        command: String,
        /// How it ended.
        status: std::process::ExitStatus,
        /// The name of its log file.
        log: String,
        /// The last non-blank line of that log, if any.
        last_line: Option<String>,
    },
    /// A setup command line could not be expanded.
    #[error("setup")]
    SetupCommandLine {
        /// The cause.
        #[source]
        source: Box<RunnerError>,
    },
    /// A cell failed because its scenario's setup command failed.
    #[error("setup failed: {reason}")]
    SetupFailed {
        /// How the setup failed (from the [`crate::launch::Launcher`]).
        reason: String,
    },
    /// No free loopback ports could be bound for a cell's processes.
    #[error("cannot pick free ports")]
    FreePorts {
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A scenario's `gc_log` path could not be expanded.
    #[error("gc_log")]
    GcLogPath {
        /// The cause.
        #[source]
        source: Box<RunnerError>,
    },
    /// A process's command line could not be expanded.
    #[error("{name}")]
    Command {
        /// The process (`backend-1`, …, `sut`).
        name: String,
        /// The cause.
        #[source]
        source: Box<RunnerError>,
    },
    /// A program could not be started.
    #[error("cannot start {}", program.display())]
    Start {
        /// The program.
        program: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A cell's process could not be started.
    #[error("{name}")]
    Launch {
        /// The process (`backend-1`, …, `sut`).
        name: String,
        /// The cause (from the [`crate::launch::Launcher`]).
        #[source]
        source: Box<RunnerError>,
    },
    /// A process exited, or the readiness timeout passed, before it was ready.
    #[error("{name} ({shown}) {why} before it was ready{}{hint}", log_tail.as_deref().map(|t| format!(": {t}")).unwrap_or_default())]
    NotReady {
        /// The process.
        name: String,
        /// Its command line, shortened.
        shown: String,
        /// What happened (`exited with status 1`, `not ready after 30s: …`).
        why: String,
        /// The last line of its log, if any.
        log_tail: Option<String>,
        /// A hint on what to do, starting with `; `, or empty.
        hint: &'static str,
    },
    /// A readiness attempt: the port does not accept connections.
    #[error("{addr} does not accept connections ({error})")]
    NotAccepting {
        /// The address tried.
        addr: SocketAddr,
        /// What connecting said (part of this one-line message, not a separate cause).
        error: io::Error,
    },
    /// A readiness attempt by URL failed before an answer: `what` is `cannot connect`, …
    #[error("{url}: {}", ready_request(what, error.as_ref()))]
    ReadyRequest {
        /// The readiness URL.
        url: String,
        /// What failed (`not an http:// URL`, `cannot resolve`, `cannot connect`, …); empty
        /// when the I/O error says it all.
        what: &'static str,
        /// The I/O error, if one was the reason (part of this one-line message).
        error: Option<io::Error>,
    },
    /// A readiness attempt by URL got an answer other than 2xx.
    #[error("{url} answered {status}")]
    ReadyStatus {
        /// The readiness URL.
        url: String,
        /// The status code of the answer.
        status: u16,
    },
    /// A process ended while it was awaited; `how` says how (`exited with status 2`).
    #[error("{how}")]
    Exited {
        /// How it ended.
        how: String,
    },
    /// Ctrl-C while waiting.
    #[error("interrupted")]
    Interrupted,
    /// The readiness timeout passed; the cause is the last attempt's answer.
    #[error("not ready after {}", humantime::format_duration(*after))]
    ReadyTimeout {
        /// The readiness timeout.
        after: std::time::Duration,
        /// The last attempt's answer.
        #[source]
        last: Box<RunnerError>,
    },
    /// The target did not answer the verification request correctly.
    #[error("verification failed: {reason}")]
    Verification {
        /// What was wrong (from the [`crate::driver::Driver`]).
        reason: String,
    },
    /// The load generator refused the cell's load.
    #[error("invalid load: {reason}")]
    InvalidLoad {
        /// What the load generator said.
        reason: String,
    },
    /// The load failed.
    #[error("the load failed: {reason}")]
    Load {
        /// What failed (from the [`crate::driver::Driver`]).
        reason: String,
    },
    /// A process exited by itself while the load ran.
    #[error("{name} {how} during the load")]
    ExitedDuringLoad {
        /// The process.
        name: String,
        /// How it ended (`exited with status 1`, `was killed by signal 9`).
        how: String,
    },
    /// A command line has a `}` that closes nothing.
    #[error("unmatched `}}` (write `}}}}` for a literal brace)")]
    UnmatchedClose,
    /// A command line has a `{` that is never closed.
    #[error("unmatched `{{` (write `{{{{` for a literal brace)")]
    UnmatchedOpen,
    /// A command line names a placeholder that does not exist (or has no value there).
    #[error("unknown placeholder {{{name}}} (known: {known})")]
    UnknownPlaceholder {
        /// The name between the braces.
        name: String,
        /// Every placeholder known there, comma separated.
        known: String,
    },
    /// A `serve` line has a quote that is never closed.
    #[error("a quote is not closed in serve line `{line}`")]
    ServeLine {
        /// The line after its placeholders were replaced.
        line: String,
    },
    /// A host of the suite's `[hosts]` cannot be used (unreachable, key refused, tools
    /// missing, another system, a port in use), or a remote action on it failed.
    #[error("{host}: {message}")]
    Host {
        /// The host as written (`ssh://sut`), with its role when known (`ssh://sut (sut)`).
        host: String,
        /// What is wrong, one line.
        message: String,
    },
    /// A host is written neither `local` nor `ssh://[user@]host[:port]`.
    #[error("\"{given}\" is not a host (write {forms})")]
    NotAHost {
        /// The host as written.
        given: String,
        /// The forms accepted there, quoted (`"ssh://[user@]host[:port]"`).
        forms: &'static str,
    },
    /// A host's `:port` is not a port number (1 to 65535).
    #[error("\"{given}\": \"{port}\" is not a port")]
    HostPort {
        /// The host as written.
        given: String,
        /// What follows its last `:`.
        port: String,
    },
    /// `[hosts] ssh_config` is given but empty.
    #[error("[hosts] ssh_config is empty")]
    EmptySshConfig,
    /// The `ssh` client could not be run, or failed while it ran.
    #[error("{what}: {error}")]
    SshClient {
        /// What failed (`cannot run ssh`, `cannot run ssh -G`, `ssh failed`).
        what: &'static str,
        /// The I/O error (part of this one-line message, not a separate cause).
        error: io::Error,
    },
    /// `ssh -G` printed no `hostname` line for a host.
    #[error("ssh -G names no hostname")]
    SshNoHostName,
    /// The host name ssh connects to does not resolve here.
    #[error("cannot resolve {name}")]
    Resolve {
        /// The name (ssh's `HostName`).
        name: String,
    },
    /// A command run over ssh failed: the last line it or ssh printed on stderr, else ssh's
    /// exit status.
    #[error("{reason}")]
    Remote {
        /// That line, or `ssh exit status: 255`.
        reason: String,
    },
    /// `gatebench host ports` on a host did not print the free ports asked for.
    #[error("{}", match got {
        Some(got) => format!("asked for {asked} free ports, got {got}"),
        None => "gatebench host ports printed something else".to_owned(),
    })]
    HostPorts {
        /// How many were asked for.
        asked: usize,
        /// How many it printed; `None` when its output is not port numbers.
        got: Option<usize>,
    },
    /// `gatebench host clock` on a host gave no reading.
    #[error("cannot read the host's clock (gatebench host clock)")]
    HostClock,
    /// A shard of a load split across generator hosts could not be started.
    #[error("shard {index}/{count}: {}", error.chain())]
    ShardStart {
        /// The shard's index, from 0.
        index: usize,
        /// How many shards.
        count: usize,
        /// Why (part of this one-line message, with its causes).
        error: Box<RunnerError>,
    },
    /// A shard ended with another status than 0.
    #[error("shard {index}/{count} on {host} exited with status {code}: {last_line}")]
    ShardExited {
        /// The shard's index, from 0.
        index: usize,
        /// How many shards.
        count: usize,
        /// Its generator host, as written.
        host: String,
        /// Its exit status (255: ssh's own failure).
        code: i32,
        /// The last line it printed on stderr, or `no message`.
        last_line: String,
    },
    /// A shard's JSON record does not parse.
    #[error("shard {index}/{count}: its record does not read ({error})")]
    ShardRecord {
        /// The shard's index, from 0.
        index: usize,
        /// How many shards.
        count: usize,
        /// What parsing said (part of this one-line message).
        error: serde_json::Error,
    },
    /// The shards ran past the load's deadline.
    #[error("the shards had not finished {:.0} s after their start", after.as_secs_f64())]
    ShardsTimeout {
        /// The deadline, from their common start.
        after: std::time::Duration,
    },
    /// The shards' records could not be merged into one.
    #[error("merging the shards' records: {error}")]
    ShardMerge {
        /// What merging said (part of this one-line message).
        error: gatebench_model::merge::MergeError,
    },
    /// A cell's protocol and its target URL's scheme disagree.
    #[error(
        "protocol {protocol} needs a{} URL, got {url}",
        if *tls { "n https://" } else { " http://" }
    )]
    ProtocolScheme {
        /// The protocol's name (`h2`, …).
        protocol: &'static str,
        /// Whether the protocol needs TLS (`https://`).
        tls: bool,
        /// The URL given.
        url: String,
    },
}

/// `what (error)`, `what`, or `error` alone when `what` is empty.
fn ready_request(what: &str, error: Option<&io::Error>) -> String {
    match error {
        Some(e) if what.is_empty() => e.to_string(),
        Some(e) => format!("{what} ({e})"),
        None => what.to_owned(),
    }
}

impl RunnerError {
    /// The message with every cause after it, `: `-separated, on one line: what a cell's
    /// record says as its failure reason.
    pub fn chain(&self) -> String {
        let mut out = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(c) = cause {
            out.push_str(": ");
            out.push_str(&c.to_string());
            cause = c.source();
        }
        out
    }

    /// A wrong suite value found inside `outer` (`scenario "a"`): its key is prefixed with it.
    pub(crate) fn within(self, outer: &str) -> Self {
        match self {
            RunnerError::SuiteValue { key, problem } => RunnerError::SuiteValue {
                key: format!("{outer}: {key}"),
                problem,
            },
            other => other,
        }
    }

    /// Shorthand for an invalid suite.
    pub(crate) fn suite(file: &str, message: impl Into<String>) -> Self {
        RunnerError::Suite {
            file: file.to_owned(),
            message: message.into(),
        }
    }

    /// Shorthand for an I/O failure on `path`.
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        RunnerError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_shard_messages_read_as_they_did_as_strings() {
        let io = || io::Error::new(io::ErrorKind::NotFound, "No such file or directory");
        let cases: Vec<(RunnerError, String)> = vec![
            (
                RunnerError::NotAHost {
                    given: "sut".into(),
                    forms: "\"local\" or \"ssh://[user@]host[:port]\"",
                },
                r#""sut" is not a host (write "local" or "ssh://[user@]host[:port]")"#.into(),
            ),
            (
                RunnerError::HostPort {
                    given: "ssh://h:x".into(),
                    port: "x".into(),
                },
                r#""ssh://h:x": "x" is not a port"#.into(),
            ),
            (
                RunnerError::EmptySshConfig,
                "[hosts] ssh_config is empty".into(),
            ),
            (
                RunnerError::SshClient {
                    what: "cannot run ssh",
                    error: io(),
                },
                "cannot run ssh: No such file or directory".into(),
            ),
            (
                RunnerError::SshNoHostName,
                "ssh -G names no hostname".into(),
            ),
            (
                RunnerError::Resolve { name: "sut".into() },
                "cannot resolve sut".into(),
            ),
            (
                RunnerError::HostPorts {
                    asked: 3,
                    got: Some(2),
                },
                "asked for 3 free ports, got 2".into(),
            ),
            (
                RunnerError::HostPorts {
                    asked: 3,
                    got: None,
                },
                "gatebench host ports printed something else".into(),
            ),
            (
                RunnerError::HostClock,
                "cannot read the host's clock (gatebench host clock)".into(),
            ),
            (
                RunnerError::ShardStart {
                    index: 1,
                    count: 2,
                    error: Box::new(RunnerError::Host {
                        host: "ssh://gen2".into(),
                        message: "cannot start the sampler: no answer".into(),
                    }),
                },
                "shard 1/2: ssh://gen2: cannot start the sampler: no answer".into(),
            ),
            (
                RunnerError::ShardExited {
                    index: 0,
                    count: 2,
                    host: "ssh://gen1".into(),
                    code: 2,
                    last_line: "no message".into(),
                },
                "shard 0/2 on ssh://gen1 exited with status 2: no message".into(),
            ),
            (
                RunnerError::ShardRecord {
                    index: 1,
                    count: 2,
                    error: serde_json::from_str::<u8>("x").unwrap_err(),
                },
                "shard 1/2: its record does not read (expected value at line 1 column 1)".into(),
            ),
            (
                RunnerError::ShardsTimeout {
                    after: std::time::Duration::from_millis(42_400),
                },
                "the shards had not finished 42 s after their start".into(),
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.chain(), want);
        }
    }

    #[test]
    fn a_cell_reason_is_the_message_then_its_causes() {
        let e = RunnerError::Command {
            name: "sut".into(),
            source: Box::new(RunnerError::UnknownPlaceholder {
                name: "prot".into(),
                known: "port, host".into(),
            }),
        };
        // Display is this level only; the cause is in source().
        assert_eq!(e.to_string(), "sut");
        assert!(e
            .chain()
            .starts_with("sut: unknown placeholder {prot} (known: "));
        let e = RunnerError::io(
            "read template",
            "/t/nginx.conf",
            io::Error::new(io::ErrorKind::NotFound, "gone"),
        );
        assert_eq!(e.chain(), "cannot read template /t/nginx.conf: gone");
        let e = RunnerError::Launch {
            name: "sut".into(),
            source: Box::new(RunnerError::Start {
                program: "nginx".into(),
                source: io::Error::new(io::ErrorKind::NotFound, "No such file or directory"),
            }),
        };
        assert_eq!(
            e.chain(),
            "sut: cannot start nginx: No such file or directory"
        );
        let e = RunnerError::NotReady {
            name: "sut".into(),
            shown: "sh -c nginx".into(),
            why: "exited with status 1".into(),
            log_tail: Some("bind failed".into()),
            hint: "",
        };
        assert_eq!(
            e.chain(),
            "sut (sh -c nginx) exited with status 1 before it was ready: bind failed"
        );
    }
}
