//! Body verification shared by the HTTP/1.1 and HTTP/2 clients: a response body, fed piece by
//! piece as it arrives, compared with the expected bytes without keeping it.

/// Compares a body, fed piece by piece, with the expected bytes.
pub(crate) struct BodyCheck<'a> {
    expected: Option<&'a [u8]>,
    pos: usize,
    equal: bool,
}

impl<'a> BodyCheck<'a> {
    pub(crate) fn new(expected: Option<&'a [u8]>) -> Self {
        BodyCheck {
            expected,
            pos: 0,
            equal: true,
        }
    }

    #[inline]
    pub(crate) fn feed(&mut self, piece: &[u8]) {
        let Some(exp) = self.expected else { return };
        if self.equal {
            let end = self.pos + piece.len();
            self.equal = end <= exp.len() && &exp[self.pos..end] == piece;
        }
        self.pos += piece.len();
    }

    pub(crate) fn matches(&self) -> bool {
        match self.expected {
            None => true,
            Some(exp) => self.equal && self.pos == exp.len(),
        }
    }
}
