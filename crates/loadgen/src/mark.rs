//! `--mark-header NAME`: which value of a response header each successful response carried,
//! kept per second as the first time each value was seen (what a route change's propagation
//! is measured with: back-ends name themselves in `x-gatebench-backend`).
//!
//! The rule: the hot path pays nothing without the option, and with it one case-insensitive
//! name comparison per field of the head and a look-up among the values already seen; values
//! are bounded ([`MAX_VALUES`] per worker, further ones are not marked), so a header that
//! differs on every response cannot grow a record without bound. HTTP/1.x responses only.

use std::cell::RefCell;

/// Most distinct values one worker marks.
pub const MAX_VALUES: usize = 64;

/// A worker's table of the marked header's values: a value's number is its place here.
#[derive(Debug)]
pub(crate) struct MarkTable {
    name: String,
    values: RefCell<Vec<String>>,
}

impl MarkTable {
    /// A table for header `name` (lower case).
    pub(crate) fn new(name: &str) -> MarkTable {
        MarkTable {
            name: name.to_owned(),
            values: RefCell::new(Vec::new()),
        }
    }

    /// The header's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The number of `value`, added when new; `None` once the table is full.
    pub(crate) fn id_of(&self, value: &[u8]) -> Option<u8> {
        let mut values = self.values.borrow_mut();
        if let Some(i) = values.iter().position(|v| v.as_bytes() == value) {
            return Some(i as u8);
        }
        if values.len() >= MAX_VALUES {
            return None;
        }
        values.push(String::from_utf8_lossy(value).into_owned());
        Some((values.len() - 1) as u8)
    }

    /// Calls `f` with value number `id`.
    pub(crate) fn with_value<R>(&self, id: u8, f: impl FnOnce(&str) -> R) -> Option<R> {
        self.values.borrow().get(usize::from(id)).map(|v| f(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_numbered_once_and_bounded() {
        let t = MarkTable::new("x-gatebench-backend");
        assert_eq!(t.id_of(b"b1"), Some(0));
        assert_eq!(t.id_of(b"b2"), Some(1));
        assert_eq!(t.id_of(b"b1"), Some(0));
        for i in 2..MAX_VALUES {
            assert!(t.id_of(format!("v{i}").as_bytes()).is_some());
        }
        assert_eq!(t.id_of(b"one too many"), None);
        assert_eq!(t.with_value(1, str::to_owned).as_deref(), Some("b2"));
    }
}
