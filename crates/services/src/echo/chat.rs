//! The echo's emulated model: `POST /v1/chat/completions` with `"stream": true` answered as
//! OpenAI streams a chat completion — server-sent events of `chat.completion.chunk` objects,
//! one per token, then `data: [DONE]` — on a schedule the benchmark sets: the time to the first
//! token, the interval between tokens with an optional jitter, and the number of tokens.
//!
//! The stream: at once a chunk with the role only (`"delta":{"role":"assistant","content":""}`,
//! as vLLM and OpenAI open), then each token's chunk at its time, then a chunk with
//! `finish_reason` and `data: [DONE]` right after the last token. Each event is its own body
//! frame, which the servers write and flush as it is produced (`h1::server`, `h2::server`):
//! nothing waits for the next event. The times are kept against the request's arrival, not
//! against the previous token, so a late timer does not push every later token back.
//!
//! The schedule comes from `serve echo`'s flags ([`ChatConfig`]), and a request may set its own
//! with `x-gatebench-first-token-ms`, `x-gatebench-token-interval-ms`,
//! `x-gatebench-token-jitter-ms` and `x-gatebench-tokens`; the request's `max_tokens` caps the
//! count (and the finish reason is then `length`). Each gap is the interval plus a uniform
//! draw in ±jitter (never below zero).
//!
//! With stamps on (`--chat-stamp`), each token's event carries the echo's wall clock as it
//! produced the event, a comment line `: sent <nanoseconds since the Unix epoch>` before its
//! data: every SSE reader skips comments, and `gatebench load --stream`/`--llm` times each
//! stamped event from it to its arrival, so what an intermediary adds to one event can be read
//! through it and beside it (`bench/sse-accuracy.sh`).
//!
//! With a log file, each stream that was sent to its end adds one line: the time from the
//! request's arrival to the first token's frame, then each gap between token frames, in
//! microseconds, as the echo handed them to the server — what a benchmark's measured time to
//! first token and inter-token latency can be compared with (`bench/sse-accuracy.sh`).
//!
//! It does not read the messages, and it answers a request without `"stream": true` as any
//! other POST: its body echoed.

use std::fs::File;
use std::future::Future;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderMap, Response};
use hyper::body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use crate::error::ServicesError;
use crate::failure::BodyError;
use crate::protocol::body::{Produced, ResBody};

/// The path of the chat-completions endpoint.
pub(crate) const PATH: &str = "/v1/chat/completions";

/// Most tokens one stream may be asked for (by flag or header).
pub const MAX_TOKENS: u32 = 1_000_000;

/// The words the tokens cycle through.
const WORDS: [&str; 8] = [
    " lorem",
    " ipsum",
    " dolor",
    " sit",
    " amet",
    " consectetur",
    " adipiscing",
    " elit",
];

/// The emulated model's schedule, and where it logs its own times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatConfig {
    /// From the request's arrival to the first token.
    pub first_token: Duration,
    /// Between tokens.
    pub interval: Duration,
    /// Each gap is `interval` plus a uniform draw in ±`jitter` (never below zero).
    pub jitter: Duration,
    /// Tokens per completion (at least 1, at most [`MAX_TOKENS`]).
    pub tokens: u32,
    /// Append each finished stream's own times here (see the module note).
    pub log: Option<PathBuf>,
    /// Stamp each token's event with the wall clock (see the module note).
    pub stamp: bool,
}

impl Default for ChatConfig {
    /// 100 ms to the first token, then 16 tokens 20 ms apart, no jitter, no log.
    fn default() -> Self {
        ChatConfig {
            first_token: Duration::from_millis(100),
            interval: Duration::from_millis(20),
            jitter: Duration::ZERO,
            tokens: 16,
            log: None,
            stamp: false,
        }
    }
}

impl ChatConfig {
    /// Checks the token count and the jitter.
    pub fn validate(&self) -> Result<(), ServicesError> {
        if self.tokens == 0 || self.tokens > MAX_TOKENS {
            return Err(ServicesError::invalid(
                "chat tokens",
                format!("must be 1 to {MAX_TOKENS}, got {}", self.tokens),
            ));
        }
        for (what, d) in [
            ("chat first token", self.first_token),
            ("chat interval", self.interval),
            ("chat jitter", self.jitter),
        ] {
            if d > Duration::from_secs(3600) {
                return Err(ServicesError::invalid(what, "must be at most an hour"));
            }
        }
        Ok(())
    }
}

/// What the echo keeps for its chat streams: the schedule and the open log.
#[derive(Debug)]
pub(crate) struct Chat {
    config: ChatConfig,
    log: Option<Mutex<BufWriter<File>>>,
    /// Numbers the completions (their ids) and seeds their jitter.
    next: AtomicU64,
}

impl Chat {
    /// Opens the log, if any.
    pub(crate) fn new(config: &ChatConfig) -> Result<Chat, ServicesError> {
        let log = match &config.log {
            Some(path) => Some(Mutex::new(BufWriter::new(
                File::options()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| {
                        ServicesError::invalid("chat log", format!("{}: {e}", path.display()))
                    })?,
            ))),
            None => None,
        };
        Ok(Chat {
            config: config.clone(),
            log,
            next: AtomicU64::new(1),
        })
    }

    /// Whether a request body asks for a stream: `"stream": true`, and its `max_tokens`.
    pub(crate) fn asks_for_stream(body: &[u8]) -> Option<Option<u64>> {
        let v: serde_json::Value = serde_json::from_slice(body).ok()?;
        (v.get("stream")? == &serde_json::Value::Bool(true))
            .then(|| v.get("max_tokens").and_then(serde_json::Value::as_u64))
    }

    /// The stream answering a request that arrived at `arrived` with these headers.
    pub(crate) fn respond(
        self: &Arc<Self>,
        headers: &HeaderMap,
        max_tokens: Option<u64>,
        arrived: Instant,
    ) -> Response<ResBody> {
        let c = &self.config;
        let ms = |name: &str, default: Duration| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite() && (0.0..=3_600_000.0).contains(v))
                .map_or(default, |v| Duration::from_secs_f64(v / 1e3))
        };
        let first = ms("x-gatebench-first-token-ms", c.first_token);
        let interval = ms("x-gatebench-token-interval-ms", c.interval);
        let jitter = ms("x-gatebench-token-jitter-ms", c.jitter);
        let asked = headers
            .get("x-gatebench-tokens")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u32>().ok())
            .filter(|n| (1..=MAX_TOKENS).contains(n))
            .unwrap_or(c.tokens);
        let tokens = max_tokens.map_or(asked, |m| {
            asked.min(m.clamp(1, u64::from(MAX_TOKENS)) as u32)
        });
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let body = ChatBody {
            chat: self.clone(),
            id: n,
            rng: splitmix(n ^ 0x005E_ED0F_C4A7),
            arrived,
            next_at: arrived + first,
            sleep: Box::pin(tokio::time::sleep_until(arrived + first)),
            interval,
            jitter,
            tokens,
            sent: 0,
            length: tokens < asked,
            state: State::Role,
            times: Vec::with_capacity(if self.log.is_some() {
                tokens as usize
            } else {
                0
            }),
        };
        let mut response = Response::new(ResBody::Produced(Produced(Box::pin(body))));
        let h = response.headers_mut();
        h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        response
    }
}

/// Where a stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The role chunk is next (at once).
    Role,
    /// Tokens are next, at their times.
    Tokens,
    /// The finish chunk and `[DONE]` are next (at once).
    Finish,
    /// Everything was sent.
    Done,
}

/// One emulated completion, produced frame by frame.
struct ChatBody {
    chat: Arc<Chat>,
    id: u64,
    rng: u64,
    arrived: Instant,
    /// When the next token is due.
    next_at: Instant,
    sleep: Pin<Box<Sleep>>,
    interval: Duration,
    jitter: Duration,
    tokens: u32,
    sent: u32,
    /// The count was cut by `max_tokens`.
    length: bool,
    state: State,
    /// With a log: when each token's frame was produced.
    times: Vec<Instant>,
}

impl ChatBody {
    /// The next gap: the interval ± a uniform draw of the jitter, never below zero.
    fn gap(&mut self) -> Duration {
        if self.jitter.is_zero() {
            return self.interval;
        }
        self.rng = splitmix(self.rng);
        // A uniform draw in [-1, 1).
        let u = (self.rng >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
        let ns = self.interval.as_nanos() as f64 + u * self.jitter.as_nanos() as f64;
        Duration::from_nanos(ns.max(0.0) as u64)
    }

    fn chunk(&self, delta: &str, finish: Option<&str>) -> String {
        format!(
            "data: {{\"id\":\"chatcmpl-gb{}\",\"object\":\"chat.completion.chunk\",\"model\":\"gatebench-echo\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{}}}]}}\n\n",
            self.id,
            finish.map_or("null".to_owned(), |f| format!("\"{f}\""))
        )
    }

    /// Writes the stream's own times to the log.
    fn log(&self) {
        let Some(log) = &self.chat.log else { return };
        let mut line = String::new();
        let mut prev = self.arrived;
        for t in &self.times {
            line.push_str(&format!("{} ", t.duration_since(prev).as_micros()));
            prev = *t;
        }
        line.pop();
        line.push('\n');
        if let Ok(mut w) = log.lock() {
            let _ = w.write_all(line.as_bytes()).and_then(|()| w.flush());
        }
    }
}

impl Body for ChatBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        let data = match this.state {
            State::Done => return Poll::Ready(None),
            State::Role => {
                this.state = State::Tokens;
                this.chunk("{\"role\":\"assistant\",\"content\":\"\"}", None)
            }
            State::Tokens => {
                if this.sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                let word = WORDS[this.sent as usize % WORDS.len()];
                let mut data = this.chunk(&format!("{{\"content\":\"{word}\"}}"), None);
                if this.chat.config.stamp {
                    let now = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .unwrap_or_default()
                        .as_nanos();
                    data.insert_str(0, &format!(": sent {now}\n"));
                }
                if this.chat.log.is_some() {
                    this.times.push(Instant::now());
                }
                this.sent += 1;
                if this.sent == this.tokens {
                    this.state = State::Finish;
                } else {
                    let gap = this.gap();
                    this.next_at += gap;
                    let at = this.next_at;
                    this.sleep.as_mut().reset(at);
                }
                data
            }
            State::Finish => {
                this.state = State::Done;
                this.log();
                let reason = if this.length { "length" } else { "stop" };
                let mut d = this.chunk("{}", Some(reason));
                d.push_str("data: [DONE]\n\n");
                d
            }
        };
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(data)))))
    }

    fn is_end_stream(&self) -> bool {
        self.state == State::Done
    }

    fn size_hint(&self) -> SizeHint {
        // Unknown: HTTP/1.1 sends it chunked, each event its own chunk.
        SizeHint::default()
    }
}

/// splitmix64: a cheap, well-mixed step for the jitter's draws.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_requests_are_told_apart() {
        assert_eq!(
            Chat::asks_for_stream(br#"{"model":"m","stream":true,"max_tokens":5}"#),
            Some(Some(5))
        );
        assert_eq!(Chat::asks_for_stream(br#"{"stream":true}"#), Some(None));
        assert_eq!(Chat::asks_for_stream(br#"{"stream":false}"#), None);
        assert_eq!(Chat::asks_for_stream(b"not json"), None);
    }

    /// The frames of a stream: the role chunk at once, the tokens at their times (paused
    /// clock), the finish and `[DONE]` right after the last.
    #[tokio::test(start_paused = true)]
    async fn frames_come_on_the_schedule() {
        let chat = Arc::new(
            Chat::new(&ChatConfig {
                first_token: Duration::from_millis(200),
                interval: Duration::from_millis(20),
                jitter: Duration::from_millis(5),
                tokens: 3,
                log: None,
                stamp: false,
            })
            .unwrap(),
        );
        let t0 = Instant::now();
        let mut body = chat.respond(&HeaderMap::new(), None, t0).into_body();
        let mut frames = Vec::new();
        while let Some(f) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            let data = f.unwrap().into_data().unwrap();
            frames.push((t0.elapsed(), String::from_utf8(data.to_vec()).unwrap()));
        }
        assert_eq!(frames.len(), 5, "{frames:?}");
        assert_eq!(frames[0].0, Duration::ZERO);
        assert!(frames[0].1.contains("\"role\":\"assistant\""));
        assert_eq!(frames[1].0, Duration::from_millis(200));
        assert!(frames[1].1.contains("\"content\":\" lorem\""));
        for w in frames[1..4].windows(2) {
            let gap = w[1].0 - w[0].0;
            assert!(
                gap >= Duration::from_millis(15) && gap <= Duration::from_millis(25),
                "{gap:?}"
            );
        }
        assert_eq!(frames[4].0, frames[3].0);
        assert!(frames[4].1.contains("\"finish_reason\":\"stop\""));
        assert!(frames[4].1.ends_with("data: [DONE]\n\n"));
        // Headers override the flags; max_tokens caps the count.
        let mut h = HeaderMap::new();
        h.insert("x-gatebench-tokens", HeaderValue::from_static("10"));
        h.insert("x-gatebench-first-token-ms", HeaderValue::from_static("0"));
        let r = chat.respond(&h, Some(4), Instant::now());
        assert_eq!(r.headers()[CONTENT_TYPE], "text/event-stream");
        let mut body = r.into_body();
        let mut n = 0;
        let mut last = String::new();
        while let Some(f) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            n += 1;
            last = String::from_utf8(f.unwrap().into_data().unwrap().to_vec()).unwrap();
        }
        assert_eq!(n, 6, "role, 4 tokens, finish");
        assert!(last.contains("\"finish_reason\":\"length\""));
    }
}
