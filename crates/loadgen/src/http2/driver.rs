//! The task that moves one HTTP/2 connection's bytes: it writes what request tasks and the
//! protocol state queued, in one write per wake-up, and reads and handles whole frames.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::frame::{self, FrameHead, Reason};
use super::Shared;
use crate::connect::Stream;
use crate::exchange::classify_io;

/// Read buffer: room for two of the largest frames gatebench accepts.
const READ_BUF: usize = 2 * (frame::HEADER_LEN + frame::DEFAULT_MAX_FRAME);

pub(super) struct Driver {
    shared: Rc<Shared>,
    io: Stream,
    rbuf: Box<[u8]>,
    rpos: usize,
    rend: usize,
    wbuf: Vec<u8>,
    wpos: usize,
}

impl Driver {
    pub(super) fn new(shared: Rc<Shared>, io: Stream) -> Driver {
        Driver {
            shared,
            io,
            rbuf: vec![0; READ_BUF].into_boxed_slice(),
            rpos: 0,
            rend: 0,
            wbuf: Vec::with_capacity(16 * 1024),
            wpos: 0,
        }
    }

    /// Handles every complete frame in the read buffer.
    fn process(&mut self) {
        let mut st = self.shared.state.borrow_mut();
        while self.rend - self.rpos >= frame::HEADER_LEN {
            let h = FrameHead::parse(&self.rbuf[self.rpos..]);
            if h.len > frame::DEFAULT_MAX_FRAME {
                st.connection_error(Reason::FrameSizeError);
                return;
            }
            let end = self.rpos + frame::HEADER_LEN + h.len;
            if end > self.rend {
                break;
            }
            let payload = &self.rbuf[self.rpos + frame::HEADER_LEN..end];
            self.rpos = end;
            if let Err(reason) = st.on_frame(h, payload) {
                st.connection_error(reason);
                return;
            }
        }
        if self.rpos == self.rend {
            self.rpos = 0;
            self.rend = 0;
        } else if self.rbuf.len() - self.rend < frame::HEADER_LEN + frame::DEFAULT_MAX_FRAME {
            self.rbuf.copy_within(self.rpos..self.rend, 0);
            self.rend -= self.rpos;
            self.rpos = 0;
        }
    }

    /// Reads once. `Ready(true)` when bytes arrived, `Ready(false)` when the connection ended.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        let mut buf = ReadBuf::new(&mut self.rbuf[self.rend..]);
        match Pin::new(&mut self.io).poll_read(cx, &mut buf) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(())) => {
                let n = buf.filled().len();
                if n == 0 {
                    self.shared.state.borrow_mut().eof();
                    return Poll::Ready(false);
                }
                self.rend += n;
                Poll::Ready(true)
            }
            Poll::Ready(Err(e)) => {
                self.shared.state.borrow_mut().fail(classify_io(&e));
                Poll::Ready(false)
            }
        }
    }

    /// Writes everything queued. `Ready(Ok(true))` when something was written.
    fn poll_flush_out(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<bool>> {
        let mut wrote = false;
        loop {
            if self.wpos == self.wbuf.len() {
                self.wbuf.clear();
                self.wpos = 0;
                let mut st = self.shared.state.borrow_mut();
                st.wrote_out();
                if st.out.is_empty() {
                    break;
                }
                std::mem::swap(&mut st.out, &mut self.wbuf);
                st.took_out();
            }
            match Pin::new(&mut self.io).poll_write(cx, &self.wbuf[self.wpos..]) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()))
                }
                Poll::Ready(Ok(n)) => {
                    self.wpos += n;
                    wrote = true;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            }
        }
        if wrote {
            match Pin::new(&mut self.io).poll_flush(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(wrote))
    }

    /// Tells waiting request tasks to look at the stream limit again, when it changed.
    fn recheck(&self) {
        let mut st = self.shared.state.borrow_mut();
        if std::mem::take(&mut st.recheck_streams) {
            drop(st);
            self.shared.freed.notify_waiters();
        }
    }

    /// The end: whatever is queued (GOAWAY, resets) gets one try, then the socket closes.
    fn finish(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        self.shared.state.borrow_mut().close();
        let _ = self.poll_flush_out(cx);
        let _ = Pin::new(&mut self.io).poll_shutdown(cx);
        self.recheck();
        Poll::Ready(())
    }
}

impl Future for Driver {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        this.shared.state.borrow_mut().set_driver(cx.waker());
        loop {
            let mut progress = false;
            match this.poll_fill(cx) {
                Poll::Ready(true) => {
                    progress = true;
                    this.process();
                }
                Poll::Ready(false) => return this.finish(cx),
                Poll::Pending => {}
            }
            match this.poll_flush_out(cx) {
                Poll::Ready(Ok(wrote)) => progress |= wrote,
                Poll::Ready(Err(e)) => {
                    this.shared.state.borrow_mut().fail(classify_io(&e));
                    return this.finish(cx);
                }
                Poll::Pending => {}
            }
            this.recheck();
            if this.shared.state.borrow().finished() {
                return this.finish(cx);
            }
            if !progress {
                return Poll::Pending;
            }
        }
    }
}
