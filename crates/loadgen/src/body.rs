//! Body verification shared by the HTTP/1.1 and HTTP/2 clients: a response body, fed piece by
//! piece as it arrives, compared with the expected bytes without keeping it.

/// Compares a body, fed piece by piece, with the expected bytes (borrowed by the HTTP/1.1
/// client, a shared `Bytes` in an HTTP/2 stream).
#[derive(Debug)]
pub(crate) struct BodyCheck<E> {
    expected: Option<E>,
    pos: usize,
    equal: bool,
}

impl<E: AsRef<[u8]>> BodyCheck<E> {
    pub(crate) fn new(expected: Option<E>) -> Self {
        BodyCheck {
            expected,
            pos: 0,
            equal: true,
        }
    }

    #[inline]
    pub(crate) fn feed(&mut self, piece: &[u8]) {
        let Some(exp) = &self.expected else { return };
        if self.equal {
            let exp = exp.as_ref();
            let end = self.pos + piece.len();
            self.equal = end <= exp.len() && &exp[self.pos..end] == piece;
        }
        self.pos += piece.len();
    }

    pub(crate) fn matches(&self) -> bool {
        match &self.expected {
            None => true,
            Some(exp) => self.equal && self.pos == exp.as_ref().len(),
        }
    }
}
