//! Resource limits checked before a run: enough file descriptors for the asked concurrency.
//! Failing here, with the number needed, beats failing mid-run with EMFILE.

use crate::error::LoadgenError;

/// Descriptors a process needs besides its connections (runtime, stdio, files, slack).
const RESERVED_FDS: u64 = 64;

/// Makes sure the open-files limit can hold `connections` sockets, raising the soft limit up to
/// the hard one if needed.
pub fn ensure_fd_limit(connections: u64) -> Result<(), LoadgenError> {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let needed = connections + RESERVED_FDS;
    let lim = getrlimit(Resource::Nofile);
    // `None` is RLIM_INFINITY.
    let (soft, hard) = (
        lim.current.unwrap_or(u64::MAX),
        lim.maximum.unwrap_or(u64::MAX),
    );
    if soft >= needed {
        return Ok(());
    }
    if hard >= needed {
        let raised = Rlimit {
            current: Some(needed),
            maximum: lim.maximum,
        };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            return Ok(());
        }
    }
    Err(LoadgenError::FdLimit {
        connections,
        needed,
        soft,
        hard,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impossible_concurrency_fails_with_the_number_needed() {
        let err = ensure_fd_limit(50_000_000).unwrap_err().to_string();
        assert!(err.contains("50000064"), "{err}");
        assert!(err.contains("ulimit -n"), "{err}");
    }

    #[test]
    fn modest_concurrency_is_fine() {
        ensure_fd_limit(100).unwrap();
    }
}
