//! [`PostSink`]: an HTTP endpoint on 127.0.0.1:0 that takes POSTs (a remote-write receiver in
//! tests): it reads each request's head and its `Content-Length` body, answers
//! `204 No Content`, and keeps both, one connection at a time. Blocking std networking on a
//! thread of its own, stopped when dropped.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// One POST as received: its head and its body.
pub type Post = (String, Vec<u8>);

/// The endpoint.
#[derive(Debug)]
pub struct PostSink {
    /// `http://127.0.0.1:PORT/PATH`.
    pub url: String,
    /// Every POST received, in order.
    pub got: Arc<Mutex<Vec<Post>>>,
    stop: Arc<AtomicBool>,
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl PostSink {
    /// Listens on 127.0.0.1:0; `path` is what [`PostSink::url`] ends with (the sink answers
    /// every path alike).
    pub fn start(path: &str) -> PostSink {
        let l = TcpListener::bind("127.0.0.1:0").expect("binding 127.0.0.1:0");
        let addr = l.local_addr().expect("a bound address");
        let got = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (g, s) = (got.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for c in l.incoming() {
                if s.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(mut c) = c else { continue };
                if let Some(post) = read_post(&mut c) {
                    g.lock().expect("sink lock").push(post);
                    let _ = c.write_all(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n");
                }
            }
        });
        PostSink {
            url: format!("http://{addr}{path}"),
            got,
            stop,
            addr,
            thread: Some(thread),
        }
    }

    /// The POSTs received so far.
    pub fn posts(&self) -> Vec<Post> {
        self.got.lock().expect("sink lock").clone()
    }
}

/// One request's head and body; `None` when the client closed before they ended.
fn read_post(c: &mut TcpStream) -> Option<Post> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = c.read(&mut chunk).ok().filter(|&n| n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let len: usize = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse().ok())
            .flatten()
    })?;
    while buf.len() < head_end + len {
        let n = c.read(&mut chunk).ok().filter(|&n| n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    }
    Some((head, buf[head_end..head_end + len].to_vec()))
}

impl Drop for PostSink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
