//! Resource limits checked before a run: enough file descriptors for the asked concurrency.
//! Failing here, with the number needed, beats failing mid-run with EMFILE.

use crate::error::LoadgenError;

/// Descriptors a process needs besides its connections (runtime, stdio, files, slack).
const RESERVED_FDS: u64 = 64;

/// Makes sure the open-files limit can hold `connections` sockets, raising the soft limit up to
/// the hard one if needed.
pub fn ensure_fd_limit(connections: u64) -> Result<(), LoadgenError> {
    let needed = connections + RESERVED_FDS;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Ok(()); // cannot tell; let the run report connect errors if any
    }
    let (soft, hard): (u64, u64) = (lim.rlim_cur, lim.rlim_max);
    if soft >= needed {
        return Ok(());
    }
    if hard >= needed {
        let raised = libc::rlimit {
            rlim_cur: needed,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit reads the struct we own.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
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
