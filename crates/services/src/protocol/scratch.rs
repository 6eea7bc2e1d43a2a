//! Write buffers lent by their thread. The rule: a buffer that a write takes and gives back at
//! once is the thread's one spare (no allocation per message); one that had to wait is kept
//! until it is done, and one that grew past its keep limit is freed rather than kept.
//! Each user has its own spare ([`Spare`]), so a request head and its response do not take the
//! same buffer.

use std::cell::Cell;
use std::ops::{Deref, DerefMut};
use std::thread::LocalKey;

/// One thread-local spare buffer (declare it with `thread_local!`).
pub(crate) type Spare = LocalKey<Cell<Vec<u8>>>;

/// A buffer taken from `spare`, given back when dropped.
pub(crate) struct Scratch {
    buf: Vec<u8>,
    spare: &'static Spare,
    keep: usize,
}

impl Scratch {
    /// The thread's spare from `spare` (at least `initial` bytes of room); given back on drop
    /// unless it grew past `keep` bytes.
    pub(crate) fn take(spare: &'static Spare, initial: usize, keep: usize) -> Scratch {
        let mut buf = spare.with(Cell::take);
        if buf.capacity() == 0 {
            buf.reserve(initial);
        }
        Scratch { buf, spare, keep }
    }
}

impl Deref for Scratch {
    type Target = Vec<u8>;

    fn deref(&self) -> &Vec<u8> {
        &self.buf
    }
}

impl DerefMut for Scratch {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.buf.capacity() <= self.keep {
            self.buf.clear();
            let out = std::mem::take(&mut self.buf);
            self.spare.with(|spare| {
                let kept = spare.take();
                spare.set(if kept.capacity() == 0 { out } else { kept });
            });
        }
    }
}
