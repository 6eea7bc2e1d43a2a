//! One WebSocket connection of a run. Rule: open (connect, handshake, timed), then send
//! messages on the connection's schedule and match each echo to the oldest message in flight
//! (an echo answers in order); each message's round trip counts from its *intended* send time,
//! so a server that stalls delays every message behind it in the figures, not only in the
//! schedule. A message that was still in the future when the connection last looked at its
//! schedule was waited for, and counts from its send: the timer's lateness (tokio's timer has
//! millisecond granularity) is the generator's, not the server's, as in the HTTP open model. Open model (`rate`): the message due at `start + k / rate` is sent then (or at
//! once if the writer is behind), whatever is in flight; closed model: the next message leaves
//! when the echo of the last arrives, one in flight at a time. Every message sent ends in one
//! class: ok, timeout, reset, protocol error, or closed by the server. With `--ws-messages N`
//! the connection's schedule ends after its N-th message, and it closes (1000) when the last
//! echo is in.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::BytesMut;
use gatebench_h2io::H2Io;
use gatebench_tls::MaybeTls;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use super::codec::{self, Decoder, Event};
use super::handshake::{self, Answer};
use super::{random_u64, ConnStats, WsConfig};
use crate::connect::{connect, Stream, Transport};

/// How long an HTTP/2 server has to announce extended CONNECT (RFC 8441) after the handshake.
const SETTINGS_WAIT: Duration = Duration::from_secs(2);

/// Most bytes of queued frames not yet written before the schedule waits for the socket.
const MAX_UNWRITTEN: usize = 256 * 1024;

/// How a connection's message phase ended, for the messages still in flight.
enum End {
    /// The schedule is over and every echo came back.
    Done,
    Timeout,
    Reset,
    /// The server broke the protocol; the client closes with this code.
    Protocol(u16),
    /// The server closed, with this code if it gave one.
    Closed(Option<u16>),
}

/// An open WebSocket connection: over its own HTTP/1.1 connection (the bytes read past the
/// 101 with it), or an HTTP/2 stream opened with an extended CONNECT (RFC 8441).
enum Opened {
    H1(Stream, BytesMut),
    H2(Box<H2Io>),
}

/// Opens the connection (TCP, TLS for `wss://`, then the upgrade, or with `http2` an HTTP/2
/// connection and an extended CONNECT on it), or makes the stats entry.
async fn open(
    config: &WsConfig,
    transport: &Transport,
    started: Instant,
    stats: &mut ConnStats,
) -> Option<Opened> {
    stats.attempted += 1;
    let opened = tokio::time::timeout(config.timeout, async {
        let (mut tcp, _) = match connect(config.addr, transport, config.timeout).await {
            Ok(c) => c,
            Err(outcome) => {
                stats.failure.get_or_insert(outcome);
                return Err(None);
            }
        };
        if config.http2 {
            return extended_connect(config, tcp)
                .await
                .map(|io| Opened::H2(Box::new(io)));
        }
        let key = handshake::new_key();
        tcp.write_all(&handshake::request(&config.authority, &config.path, &key))
            .await
            .map_err(|_| None)?;
        let mut buf = BytesMut::with_capacity(1024);
        loop {
            if tcp.read_buf(&mut buf).await.map_err(|_| None)? == 0 {
                return Err(None);
            }
            match handshake::check(&buf, &key) {
                Answer::Partial => continue,
                Answer::Refused(why) => return Err(Some(why)),
                Answer::Accepted(len) => {
                    let _ = buf.split_to(len);
                    return Ok(Opened::H1(tcp, buf));
                }
            }
        }
    })
    .await;
    match opened {
        Ok(Ok(open)) => {
            stats.opened += 1;
            crate::stats::record(&mut stats.handshake, started.elapsed());
            Some(open)
        }
        Ok(Err(Some(why))) => {
            stats.refused += 1;
            stats.refusal.get_or_insert(why);
            None
        }
        Ok(Err(None)) | Err(_) => {
            stats.failed += 1;
            None
        }
    }
}

/// RFC 8441 over `tcp`: the HTTP/2 handshake, the server's SETTINGS awaited until they allow
/// extended CONNECT, then `CONNECT` with `:protocol websocket` on the path; a 200 opens the
/// stream, anything else is a refusal (its status, or why there was none).
async fn extended_connect(config: &WsConfig, tcp: Stream) -> Result<H2Io, Option<String>> {
    let (client, conn) = h2::client::handshake(tcp)
        .await
        .map_err(|e| Some(format!("the HTTP/2 handshake failed: {e}")))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    // SETTINGS_ENABLE_CONNECT_PROTOCOL comes with the server's first SETTINGS; a server that
    // sends none (or is no HTTP/2 server) refuses within the wait.
    let deadline = Instant::now() + SETTINGS_WAIT.min(config.timeout);
    let refused = || {
        Some(format!(
            "no HTTP/2 SETTINGS allowing extended CONNECT (RFC 8441) within {:?}: the server \
             does not take WebSocket over HTTP/2",
            SETTINGS_WAIT.min(config.timeout)
        ))
    };
    let mut client = client;
    loop {
        client = match tokio::time::timeout_at(deadline, client.ready()).await {
            Ok(Ok(c)) => c,
            Ok(Err(_)) | Err(_) => return Err(refused()),
        };
        if client.is_extended_connect_protocol_enabled() {
            break;
        }
        if Instant::now() >= deadline {
            return Err(refused());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let mut req = http::Request::builder()
        .method(http::Method::CONNECT)
        .uri(format!("{scheme}://{}{}", config.authority, config.path))
        .header("sec-websocket-version", "13")
        .header("user-agent", "gatebench")
        .body(())
        .map_err(|e| Some(e.to_string()))?;
    req.extensions_mut()
        .insert(h2::ext::Protocol::from_static("websocket"));
    let (response, send) = client
        .send_request(req, false)
        .map_err(|e| Some(format!("the extended CONNECT could not be sent: {e}")))?;
    let response = response.await.map_err(|_| None)?;
    if response.status() != http::StatusCode::OK {
        return Err(Some(format!(
            "the extended CONNECT was answered {} (200 opens a WebSocket over HTTP/2)",
            response.status()
        )));
    }
    Ok(H2Io::new(send, response.into_body()))
}

/// Runs one connection until `until`: opens, loads, closes; reopens after a failure while time
/// is left (after a pause, so a refusing server is not hammered).
pub(super) async fn run(
    config: &WsConfig,
    transport: &Transport,
    index: u64,
    until: Instant,
    stats: &mut ConnStats,
) {
    while Instant::now() < until {
        let Some(opened) = open(config, transport, Instant::now(), stats).await else {
            tokio::time::sleep(Duration::from_millis(100).min(until - Instant::now().min(until)))
                .await;
            continue;
        };
        if !load(config, index, opened, until, stats).await {
            return;
        }
    }
}

/// Opens one connection, its handshake timed from `intended`, sends its messages and closes:
/// once, whatever happens (a churning run's next connection is its own).
pub(super) async fn once(
    config: &WsConfig,
    transport: &Transport,
    index: u64,
    intended: Instant,
    until: Instant,
    stats: &mut ConnStats,
) {
    if let Some(opened) = open(config, transport, intended, stats).await {
        load(config, index, opened, until, stats).await;
    }
}

/// The message phase of one open connection; true when the connection broke and time is
/// left to open another. Reads go on while a write waits, so a large message echoed while the
/// next is being sent never deadlocks client and server on full buffers.
async fn load(
    config: &WsConfig,
    index: u64,
    opened: Opened,
    until: Instant,
    stats: &mut ConnStats,
) -> bool {
    let (mut io, mut buf): (Carrier, BytesMut) = match opened {
        Opened::H1(tcp, rest) => (Carrier::H1(tcp), rest),
        Opened::H2(stream) => (Carrier::H2(stream), BytesMut::new()),
    };
    let mut decoder = Decoder::new(config.size.max(125));
    let mut in_flight: VecDeque<Instant> = VecDeque::new();
    let mut phase = Phase {
        config,
        index,
        until,
        buf: &mut buf,
        decoder: &mut decoder,
        in_flight: &mut in_flight,
        stats,
    };
    // Plain TCP splits into borrowed halves for free; TLS state and an HTTP/2 stream are one
    // object each, shared by the halves behind tokio's lock.
    let end = match &mut io {
        Carrier::H1(MaybeTls::Plain(t)) => {
            let (rd, wr) = t.split();
            phase.run(rd, wr).await
        }
        Carrier::H1(MaybeTls::Tls(t)) => {
            let (rd, wr) = tokio::io::split(&mut **t);
            phase.run(rd, wr).await
        }
        Carrier::H2(stream) => {
            let (rd, wr) = tokio::io::split(&mut **stream);
            phase.run(rd, wr).await
        }
    };
    let left = in_flight.len() as u64;
    match &mut io {
        Carrier::H1(tcp) => finish(end, tcp, &mut buf, &mut decoder, left, stats).await,
        Carrier::H2(stream) => {
            finish(end, &mut **stream, &mut buf, &mut decoder, left, stats).await
        }
    }
}

/// What a WebSocket's frames travel over.
enum Carrier {
    H1(Stream),
    H2(Box<H2Io>),
}

/// The message phase's state that outlives it (the close handshake reads on).
struct Phase<'a> {
    config: &'a WsConfig,
    index: u64,
    until: Instant,
    buf: &'a mut BytesMut,
    decoder: &'a mut Decoder,
    in_flight: &'a mut VecDeque<Instant>,
    stats: &'a mut ConnStats,
}

impl Phase<'_> {
    /// Sends on the schedule and reads the echoes until the schedule is over or the connection
    /// breaks.
    async fn run<R, W>(&mut self, mut rd: R, mut wr: W) -> End
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let (config, index, until) = (self.config, self.index, self.until);
        let buf = &mut *self.buf;
        let decoder = &mut *self.decoder;
        let in_flight = &mut *self.in_flight;
        let stats = &mut *self.stats;
        let payload = vec![b'x'; config.size];
        let opcode = if config.binary {
            codec::BINARY
        } else {
            codec::TEXT
        };
        let mut pending: Vec<u8> = Vec::with_capacity(config.size + 14);
        let mut written = 0;
        let start = Instant::now();
        let gap = config.rate.map(|r| Duration::from_secs_f64(1.0 / r));
        let mut sent_k: u64 = 0;
        let mut seed = random_u64(index);
        // When the schedule was last looked at: a message still in the future then was waited
        // for, and counts from its send (the timer's lateness is the generator's, as in the
        // HTTP open model); one already due then counts from when it was due.
        let mut looked = start;
        // The last look stopped at the cap on unwritten frames: the server was not taking them.
        let mut capped = false;
        loop {
            let now = Instant::now();
            let held_back = std::mem::take(&mut capped);
            // Queue what is due: the schedule's messages up to now, or the closed model's next.
            let due = loop {
                if config.messages.is_some_and(|m| sent_k >= m) {
                    // All this connection's messages are sent.
                    break until;
                }
                let due = match gap {
                    Some(gap) => start + gap.mul_f64(sent_k as f64),
                    None if in_flight.is_empty() => now,
                    None => until,
                };
                // Past the run's end nothing more is queued: a backlog the socket never took
                // is not sent after it (the send lag says how far behind the schedule was).
                if due > now || due >= until || now >= until {
                    break due;
                }
                if pending.len() - written >= MAX_UNWRITTEN {
                    // The socket takes less than the schedule asks: what is due waits here,
                    // counted from its due time, rather than piling up in memory. The wait is
                    // the server's (it does not read), not the generator's send lag.
                    capped = true;
                    break due;
                }
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let mask = ((seed >> 32) as u32).to_le_bytes();
                codec::encode(&mut pending, true, opcode, &payload, mask);
                stats.sent += 1;
                sent_k += 1;
                // The closed model's message is intended when it is sent.
                in_flight.push_back(if gap.is_some() && due <= looked {
                    due
                } else {
                    now
                });
                if gap.is_some() && !held_back {
                    // Queued late by the generator's doing (its timer, a busy runtime); messages
                    // the cap held back for a server that did not read are not its lag.
                    crate::stats::record(&mut stats.send_lag, now.saturating_duration_since(due));
                }
            };
            looked = now;
            let all_sent = now >= until || config.messages.is_some_and(|m| sent_k >= m);
            if all_sent && in_flight.is_empty() && pending.is_empty() {
                break End::Done;
            }
            let timeout_at = in_flight.front().map(|&t| t + config.timeout);
            let wake = [(due < until).then_some(due), timeout_at, Some(until)]
                .into_iter()
                .flatten()
                .filter(|&t| t > now || Some(t) == timeout_at)
                .min()
                .unwrap_or(now + config.timeout);
            buf.reserve(4096);
            tokio::select! {
                w = wr.write(&pending[written..]), if written < pending.len() => match w {
                    Ok(n) if n > 0 => {
                        written += n;
                        if written == pending.len() {
                            pending.clear();
                            written = 0;
                        }
                    }
                    _ => break End::Reset,
                },
                r = rd.read_buf(buf) => match r {
                    Ok(n) if n > 0 => {
                        if let Some(end) = events(decoder, buf, &mut pending, in_flight, config, stats) {
                            break end;
                        }
                    }
                    _ => break End::Reset,
                },
                () = tokio::time::sleep_until(wake) => {
                    if timeout_at.is_some_and(|t| Instant::now() >= t) {
                        break End::Timeout;
                    }
                }
            }
        }
    }
}

/// Handles the events in `buf` (pongs queued on `pending`); `Some` when the connection's
/// message phase ends.
fn events(
    decoder: &mut Decoder,
    buf: &mut BytesMut,
    pending: &mut Vec<u8>,
    in_flight: &mut VecDeque<Instant>,
    config: &WsConfig,
    stats: &mut ConnStats,
) -> Option<End> {
    loop {
        let event = match decoder.next(buf) {
            Ok(Some(event)) => event,
            Ok(None) => return None,
            Err(violation) => return Some(End::Protocol(violation.close_code())),
        };
        match event {
            Event::Message { binary, data } => {
                let Some(intended) = in_flight.pop_front() else {
                    // An echo of nothing sent.
                    return Some(End::Protocol(1002));
                };
                if binary != config.binary || data.len() != config.size {
                    stats.protocol_error += 1;
                    continue;
                }
                stats.received += 1;
                crate::stats::record(&mut stats.latency, intended.elapsed());
            }
            Event::Ping(data) => {
                codec::encode(pending, true, codec::PONG, &data, [0x5a, 0x3c, 0x96, 0x0f]);
                stats.pings += 1;
            }
            Event::Pong(_) => {}
            Event::Close(code) => return Some(End::Closed(code)),
        }
    }
}

/// Sends a close frame with `code` (errors ignored: the connection ends anyway).
async fn close<S: AsyncWrite + Unpin>(tcp: &mut S, code: u16) {
    let mut out = Vec::new();
    codec::encode(
        &mut out,
        true,
        codec::CLOSE,
        &code.to_be_bytes(),
        [1, 2, 3, 4],
    );
    let _ = tcp.write_all(&out).await;
}

/// Classes the messages in flight by how the phase ended; on a clean end, runs the close
/// handshake. True when the connection broke (another may be opened).
async fn finish<S: AsyncRead + AsyncWrite + Unpin>(
    end: End,
    tcp: &mut S,
    buf: &mut BytesMut,
    decoder: &mut Decoder,
    left: u64,
    stats: &mut ConnStats,
) -> bool {
    match end {
        End::Done => {
            close(tcp, 1000).await;
            stats.closed_clean += 1;
            // The server's close answers ours; bytes before it are dropped.
            let answer = tokio::time::timeout(Duration::from_secs(1), async {
                loop {
                    while let Ok(Some(event)) = decoder.next(buf) {
                        if let Event::Close(code) = event {
                            return code;
                        }
                    }
                    buf.reserve(4096);
                    if !matches!(tcp.read_buf(buf).await, Ok(n) if n > 0) {
                        return None;
                    }
                }
            })
            .await;
            if let Ok(code) = answer {
                let key = code.map_or_else(|| "none".to_owned(), |c| c.to_string());
                *stats.close_codes.entry(key).or_default() += 1;
            }
            false
        }
        End::Timeout => {
            stats.timeout += left;
            true
        }
        End::Reset => {
            stats.reset += left;
            true
        }
        End::Protocol(code) => {
            close(tcp, code).await;
            stats.protocol_error += left;
            true
        }
        End::Closed(code) => {
            close(tcp, code.unwrap_or(1000)).await;
            stats.closed += left;
            let key = code.map_or_else(|| "none".to_owned(), |c| c.to_string());
            *stats.close_codes.entry(key).or_default() += 1;
            true
        }
    }
}

/// Opens one connection and closes it cleanly (the probe).
pub(super) async fn probe(config: &WsConfig, transport: &Transport, stats: &mut ConnStats) {
    let mut decoder = Decoder::new(config.size.max(125));
    match open(config, transport, Instant::now(), stats).await {
        Some(Opened::H1(mut tcp, mut buf)) => {
            finish(End::Done, &mut tcp, &mut buf, &mut decoder, 0, stats).await;
        }
        Some(Opened::H2(mut stream)) => {
            let mut buf = BytesMut::new();
            finish(End::Done, &mut *stream, &mut buf, &mut decoder, 0, stats).await;
        }
        None => {}
    }
}
