//! CPU placement: with `pin = true` the system under test runs on core 0 and the load generator
//! (and the backends) on the other cores, so they do not steal each other's cycles and the
//! SUT's CPU figure means one thing.
//!
//! The SUT is pinned by its launcher (between fork and exec). The generator is pinned by
//! setting the calling thread's affinity before the load starts: the load generator's worker
//! threads are spawned from it and inherit it. The previous affinity is restored afterwards.

use std::io;

use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};

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
    let set = sched_getaffinity(None)?;
    Ok((0..CpuSet::MAX_CPU).filter(|c| set.is_set(*c)).collect())
}

/// A CPU set holding `cpus` (those beyond the set's size are left out).
pub fn cpu_set(cpus: &[usize]) -> CpuSet {
    let mut set = CpuSet::new();
    for &c in cpus.iter().filter(|c| **c < CpuSet::MAX_CPU) {
        set.set(c);
    }
    set
}

/// Pins the calling thread (and the threads it spawns from now on) to `cpus`.
pub fn pin_current_thread(cpus: &[usize]) -> io::Result<()> {
    sched_setaffinity(None, &cpu_set(cpus))?;
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
