//! CPU placement: with `pin = true` the system under test runs on core 0 and the load generator
//! (and the backends) on the other cores, so they do not steal each other's cycles and the
//! SUT's CPU figure means one thing.
//!
//! The SUT is pinned by its launcher (between fork and exec). The generator is pinned by
//! setting the calling thread's affinity before the load starts: the load generator's worker
//! threads are spawned from it and inherit it. The previous affinity is restored afterwards.

use std::io;

/// Where processes go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    /// CPUs of the system under test; `None` = not pinned.
    pub sut: Option<Vec<usize>>,
    /// CPUs of the generator and the backends; `None` = not pinned.
    pub others: Option<Vec<usize>>,
}

impl Placement {
    /// The placement for `pin` on the CPUs this process may use. With fewer than two CPUs
    /// pinning is impossible: no placement, and a warning to print.
    pub fn new(pin: bool) -> (Placement, Option<String>) {
        if !pin {
            return (Placement::default(), None);
        }
        let cpus = allowed_cpus().unwrap_or_default();
        Placement::on(&cpus)
    }

    /// The placement on the given CPUs (first for the SUT, the rest for the others).
    pub fn on(cpus: &[usize]) -> (Placement, Option<String>) {
        match cpus {
            [sut, rest @ ..] if !rest.is_empty() => (
                Placement {
                    sut: Some(vec![*sut]),
                    others: Some(rest.to_vec()),
                },
                None,
            ),
            _ => (
                Placement::default(),
                Some(format!(
                    "pin = true needs at least 2 CPUs, this process may use {}: not pinning",
                    cpus.len()
                )),
            ),
        }
    }
}

/// The CPUs the calling thread may run on.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: sched_getaffinity writes into the zeroed set we own.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|c| libc::CPU_ISSET(*c, &set))
            .collect())
    }
}

/// A `cpu_set_t` holding `cpus`.
pub fn cpu_set(cpus: &[usize]) -> libc::cpu_set_t {
    // SAFETY: an all-zero cpu_set_t is the empty set; CPU_SET only writes bits inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            if c < libc::CPU_SETSIZE as usize {
                libc::CPU_SET(c, &mut set);
            }
        }
        set
    }
}

/// Pins the calling thread (and the threads it spawns from now on) to `cpus`.
pub fn pin_current_thread(cpus: &[usize]) -> io::Result<()> {
    let set = cpu_set(cpus);
    // SAFETY: sched_setaffinity reads the set we own; pid 0 is the calling thread.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_cpu_is_not_pinned_and_says_why() {
        let (p, warn) = Placement::on(&[0]);
        assert_eq!(p, Placement::default());
        assert!(warn.unwrap().contains("at least 2 CPUs"));
    }

    #[test]
    fn sut_gets_the_first_cpu_the_rest_the_others() {
        let (p, warn) = Placement::on(&[0, 1, 2, 3]);
        assert!(warn.is_none());
        assert_eq!(p.sut, Some(vec![0]));
        assert_eq!(p.others, Some(vec![1, 2, 3]));
    }

    #[test]
    fn pinning_this_thread_round_trips() {
        let before = allowed_cpus().unwrap();
        std::thread::spawn(move || {
            pin_current_thread(&before[..1]).unwrap();
            assert_eq!(allowed_cpus().unwrap(), before[..1].to_vec());
        })
        .join()
        .unwrap();
    }
}
