//! Recorded traffic replayed at its own times (`--replay`): an access log in the common or
//! combined format, or a goreplay capture.
//!
//! The whole file is read and checked before anything is sent: a line that cannot be read is an
//! error naming the file and the line (`access.log:17: …`), never skipped. Each request keeps
//! its offset from the earliest one; the run sends it at that offset divided by the speed.
//!
//! - **Common and combined log formats** (Apache's `%h %l %u %t "%r" %>s %b`, combined adds
//!   `"%{Referer}i" "%{User-agent}i"`; nginx's default `combined` is the same): the method and
//!   the request target of `"%r"` are replayed, nothing else (no headers, no body). Their time
//!   stamps have one-second resolution, so the requests of one second are spread evenly across
//!   it, in file order: the k-th of n requests stamped second s is sent at s + k/n. Lines need
//!   not be in time order (a server logs when a request ends); requests are sent in time order.
//! - **goreplay** (`.gor` files): each payload is a header line `TYPE ID TIMESTAMP_NS LATENCY`,
//!   the raw HTTP/1.x message, and a line holding only `🐵🙈🙉`. Requests (type 1) are replayed
//!   with their headers and body; recorded responses (types 2 and 3) are read past. `Host`,
//!   `Content-Length`, `Connection` and `Transfer-Encoding` are not copied: every request goes
//!   to the URL's host, with the body's length, over the run's own connections (a chunked body
//!   is refused).

use std::collections::HashMap;
use std::path::Path;

use crate::error::LoadgenError;
use crate::mix::check_target;

/// The separator line of goreplay's payloads.
const GOR_SEPARATOR: &str = "🐵🙈🙉";

/// The format of a replay file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayFormat {
    /// Common log format: `host ident user [time] "request" status bytes`.
    Common,
    /// Combined log format: the common one and `"referer" "user-agent"`.
    Combined,
    /// goreplay's payload files.
    Goreplay,
}

impl ReplayFormat {
    /// The name `--replay-format` takes and records carry.
    pub fn name(self) -> &'static str {
        match self {
            ReplayFormat::Common => "common",
            ReplayFormat::Combined => "combined",
            ReplayFormat::Goreplay => "goreplay",
        }
    }
}

/// One recorded request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayRequest {
    /// Nanoseconds after the earliest request of the file (before the speed applies).
    pub at_ns: u64,
    /// HTTP method.
    pub method: String,
    /// The request target, origin form (`/path?query`).
    pub target: String,
    /// Header lines `Name: value` (goreplay only).
    pub headers: Vec<String>,
    /// The body (goreplay only).
    pub body: Vec<u8>,
    /// Its line in the file (1-based).
    pub line: usize,
}

/// A replay file, read and checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Replay {
    /// The file as given.
    pub file: String,
    /// Its format.
    pub format: ReplayFormat,
    /// Speed factor: 1 replays at the recorded pace, 10 ten times faster. Checked by
    /// `LoadConfig::try_new` (more than 0, at most 1e6).
    pub speed: f64,
    /// Its requests in time order; at least one.
    pub requests: Vec<ReplayRequest>,
}

impl Replay {
    /// Reads a replay file; `format` `None` detects it from the first line. Errors read
    /// `FILE:LINE: what is wrong`.
    pub fn read(path: &Path, format: Option<ReplayFormat>) -> Result<Replay, LoadgenError> {
        let file = path.display().to_string();
        let bytes = std::fs::read(path)
            .map_err(|e| LoadgenError::config(format!("cannot read replay file {file}: {e}")))?;
        Replay::parse(&file, &bytes, format)
    }

    /// Parses the contents of a replay file named `file`.
    pub fn parse(
        file: &str,
        bytes: &[u8],
        format: Option<ReplayFormat>,
    ) -> Result<Replay, LoadgenError> {
        let text = String::from_utf8_lossy(bytes);
        let format = format.unwrap_or_else(|| detect(&text));
        let at = |line: usize, msg: String| LoadgenError::config(format!("{file}:{line}: {msg}"));
        let mut requests = match format {
            ReplayFormat::Goreplay => parse_goreplay(bytes).map_err(|(l, m)| at(l, m))?,
            _ => parse_log(&text, format).map_err(|(l, m)| at(l, m))?,
        };
        if requests.is_empty() {
            return Err(LoadgenError::config(format!(
                "{file}: no requests to replay (read as {})",
                format.name()
            )));
        }
        requests.sort_by_key(|r| r.at_ns);
        let first = requests[0].at_ns;
        for r in &mut requests {
            r.at_ns -= first;
        }
        Ok(Replay {
            file: file.to_owned(),
            format,
            speed: 1.0,
            requests,
        })
    }

    /// The recorded span from the first request to the last, before the speed applies.
    pub fn span_ns(&self) -> u64 {
        self.requests.last().map_or(0, |r| r.at_ns)
    }
}

/// goreplay when the first non-empty line is a payload header, else an access log (combined
/// or common: the parser of [`ReplayFormat::Combined`] reads both).
fn detect(text: &str) -> ReplayFormat {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    if gor_header(first).is_some() {
        ReplayFormat::Goreplay
    } else {
        ReplayFormat::Combined
    }
}

/// `TYPE ID TIMESTAMP_NS [LATENCY]`: the type and the timestamp.
fn gor_header(line: &str) -> Option<(u8, u64)> {
    let mut f = line.trim_end().split(' ');
    let kind = f.next()?;
    let id = f.next()?;
    let ts = f.next()?;
    if !matches!(kind, "1" | "2" | "3")
        || id.is_empty()
        || !id.bytes().all(|b| b.is_ascii_alphanumeric())
        || ts.is_empty()
        || !ts.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    Some((kind.as_bytes()[0] - b'0', ts.parse().ok()?))
}

type LineError = (usize, String);

fn parse_goreplay(bytes: &[u8]) -> Result<Vec<ReplayRequest>, LineError> {
    let mut out = Vec::new();
    // Byte offsets in `bytes`: bodies are replayed as recorded, not as lossy text.
    let sep = format!("\n{GOR_SEPARATOR}");
    let mut pos = 0;
    // Line numbers counted as `pos` moves on, never from the start again.
    let (mut counted, mut lines) = (0, 1);
    let mut line_at = |pos: usize| {
        lines += bytes[counted..pos].iter().filter(|b| **b == b'\n').count();
        counted = pos;
        lines
    };
    while pos < bytes.len() {
        // Skip blank lines between payloads.
        if bytes[pos] == b'\n' || bytes[pos] == b'\r' {
            pos += 1;
            continue;
        }
        let line = line_at(pos);
        let end = find(&bytes[pos..], sep.as_bytes()).map(|i| pos + i);
        let Some(end) = end else {
            return Err((
                line,
                format!("a goreplay payload without its closing `{GOR_SEPARATOR}` line"),
            ));
        };
        let payload = &bytes[pos..end];
        pos = end + sep.len();
        // The separator line ends here (or at the end of the file).
        while pos < bytes.len() && (bytes[pos] == b'\r' || bytes[pos] == b'\n') {
            let nl = bytes[pos] == b'\n';
            pos += 1;
            if nl {
                break;
            }
        }
        let nl = payload
            .iter()
            .position(|b| *b == b'\n')
            .unwrap_or(payload.len());
        let header = String::from_utf8_lossy(&payload[..nl]);
        let Some((kind, ts)) = gor_header(&header) else {
            return Err((
                line,
                format!(
                    "not a goreplay payload header (TYPE ID TIMESTAMP_NS LATENCY): `{}`",
                    header.trim_end()
                ),
            ));
        };
        if kind != 1 {
            continue; // a recorded response: nothing to send
        }
        let message = payload.get(nl + 1..).unwrap_or(&[]);
        let req = parse_http_request(message).map_err(|m| (line + 1, m))?;
        out.push(ReplayRequest {
            at_ns: ts,
            line,
            ..req
        });
    }
    Ok(out)
}

/// A recorded HTTP/1.x request: method, target, the headers worth sending, the body.
fn parse_http_request(message: &[u8]) -> Result<ReplayRequest, String> {
    let mut headers = [httparse::EMPTY_HEADER; 100];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(message) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            return Err("the recorded request ends inside its head".into())
        }
        Err(e) => return Err(format!("not an HTTP request: {e}")),
    };
    let method = req.method.unwrap_or_default().to_owned();
    let target = req.path.unwrap_or_default().to_owned();
    check_target(&target)?;
    let mut kept = Vec::new();
    let mut length = None;
    for h in req.headers.iter() {
        let value = std::str::from_utf8(h.value)
            .map_err(|_| format!("header {} is not UTF-8", h.name))?
            .trim();
        match h.name.to_ascii_lowercase().as_str() {
            "content-length" => {
                length = Some(
                    value
                        .parse::<usize>()
                        .map_err(|_| format!("invalid Content-Length `{value}`"))?,
                )
            }
            "transfer-encoding" => {
                return Err("a chunked (Transfer-Encoding) request body cannot be replayed".into())
            }
            "host" | "connection" | "keep-alive" | "proxy-connection" => {}
            _ => kept.push(format!("{}: {value}", h.name)),
        }
    }
    let rest = &message[head_len..];
    let body = match length {
        Some(n) if rest.len() < n => {
            return Err(format!(
                "the body is {} bytes, shorter than its Content-Length {n}",
                rest.len()
            ))
        }
        Some(n) => rest[..n].to_vec(),
        None => rest.to_vec(),
    };
    Ok(ReplayRequest {
        at_ns: 0,
        method,
        target,
        headers: kept,
        body,
        line: 0,
    })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Access log lines: each stamped second's requests spread evenly across it.
fn parse_log(text: &str, format: ReplayFormat) -> Result<Vec<ReplayRequest>, LineError> {
    let mut out = Vec::new();
    let mut per_second: HashMap<i64, Vec<usize>> = HashMap::new();
    let mut seconds = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (sec, method, target) = parse_log_line(line, format).map_err(|m| (i + 1, m))?;
        per_second.entry(sec).or_default().push(out.len());
        seconds.push(sec);
        out.push(ReplayRequest {
            at_ns: 0,
            method,
            target,
            headers: Vec::new(),
            body: Vec::new(),
            line: i + 1,
        });
    }
    let Some(&min) = seconds.iter().min() else {
        return Ok(out);
    };
    for (sec, idx) in per_second {
        let n = idx.len() as u64;
        let base = (sec - min) as u64 * 1_000_000_000;
        for (k, i) in idx.into_iter().enumerate() {
            out[i].at_ns = base + k as u64 * 1_000_000_000 / n;
        }
    }
    Ok(out)
}

/// One line: its second (Unix time), method and target.
fn parse_log_line(line: &str, format: ReplayFormat) -> Result<(i64, String, String), String> {
    let fmt = format.name();
    let bad = |what: &str| format!("not a {fmt} log line: {what}");
    let open = line.find(" [").ok_or_else(|| bad("no [time]"))?;
    let close = line[open..]
        .find("] \"")
        .ok_or_else(|| bad("no \"request\" after [time]"))?
        + open;
    let sec = parse_log_time(&line[open + 2..close]).map_err(|w| bad(&w))?;
    let rest = &line[close + 3..];
    let end = closing_quote(rest).ok_or_else(|| bad("unterminated \"request\""))?;
    let request = &rest[..end];
    let mut parts = request.split(' ');
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(bad(&format!(
            "the request `{request}` is not `METHOD /path HTTP/x.y`"
        )));
    };
    if method.is_empty() || !method.bytes().all(crate::target::is_token_byte) {
        return Err(bad(&format!(
            "the request `{request}` is not `METHOD /path HTTP/x.y`"
        )));
    }
    check_target(target)?;
    let tail: Vec<&str> = rest[end + 1..].split_whitespace().collect();
    let status_ok = tail
        .first()
        .is_some_and(|s| s.len() == 3 && s.bytes().all(|b| b.is_ascii_digit()));
    let bytes_ok = tail
        .get(1)
        .is_some_and(|s| *s == "-" || s.bytes().all(|b| b.is_ascii_digit()));
    if !status_ok || !bytes_ok {
        return Err(bad("no status and size after the request"));
    }
    let quoted = rest[end + 1..].matches('"').count();
    match format {
        ReplayFormat::Common if tail.len() != 2 => {
            return Err(bad(
                "more fields after the size (a combined log? --replay-format combined)",
            ))
        }
        ReplayFormat::Combined if tail.len() > 2 && quoted < 4 => {
            return Err(bad("the \"referer\" \"user-agent\" fields are not quoted"))
        }
        _ => {}
    }
    Ok((sec, method.to_owned(), target.to_owned()))
}

/// The index of the first `"` not escaped by a backslash (Apache escapes quotes as `\"`).
fn closing_quote(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// `10/Oct/2000:13:55:36 -0700` as Unix seconds.
fn parse_log_time(s: &str) -> Result<i64, String> {
    let bad = || format!("the time `{s}` is not DD/Mon/YYYY:HH:MM:SS +ZZZZ");
    let (stamp, zone) = s.split_once(' ').ok_or_else(bad)?;
    let mut f = stamp.splitn(4, [':', '/']);
    let (Some(d), Some(mon), Some(y)) = (f.next(), f.next(), f.next()) else {
        return Err(bad());
    };
    let hms = f.next().ok_or_else(bad)?;
    let mut t = hms.split(':');
    let num = |x: Option<&str>, max: i64| -> Result<i64, String> {
        let v: i64 = x
            .filter(|v| v.len() == 2)
            .ok_or_else(bad)?
            .parse()
            .map_err(|_| bad())?;
        if v > max {
            return Err(bad());
        }
        Ok(v)
    };
    let (h, mi, sec) = (num(t.next(), 23)?, num(t.next(), 59)?, num(t.next(), 60)?);
    let day: i64 = d.parse().map_err(|_| bad())?;
    let year: i64 = y.parse().map_err(|_| bad())?;
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| *m == mon).ok_or_else(bad)? as i64 + 1;
    if !(1..=31).contains(&day) || !(1..=9999).contains(&year) {
        return Err(bad());
    }
    let zb = zone.as_bytes();
    if zb.len() != 5 || !matches!(zb[0], b'+' | b'-') || !zb[1..].iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    let zh: i64 = zone[1..3].parse().map_err(|_| bad())?;
    let zm: i64 = zone[3..5].parse().map_err(|_| bad())?;
    let offset = (zh * 3600 + zm * 60) * if zb[0] == b'-' { -1 } else { 1 };
    Ok(days_from_civil(year, month, day) * 86_400 + h * 3600 + mi * 60 + sec - offset)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMBINED: &str = concat!(
        "127.0.0.1 - - [25/Nov/2026:16:00:00 +0000] \"GET /a?x=1 HTTP/1.1\" 200 12 \"-\" \"curl/8\"\n",
        "127.0.0.1 - frank [25/Nov/2026:16:00:00 +0000] \"POST /b HTTP/1.1\" 201 - \"http://r/\" \"ua \\\"q\\\"\"\n",
        "\n",
        "127.0.0.1 - - [25/Nov/2026:17:00:02 +0100] \"GET /c HTTP/1.0\" 404 0 \"-\" \"-\"\n",
        "127.0.0.1 - - [25/Nov/2026:16:00:00 +0000] \"GET /d HTTP/1.1\" 200 1 \"-\" \"-\"\n",
    );

    #[test]
    fn a_combined_log_spreads_each_second_and_sorts_by_time() {
        let r = Replay::parse("a.log", COMBINED.as_bytes(), None).unwrap();
        assert_eq!(r.format, ReplayFormat::Combined);
        let got: Vec<(u64, &str, &str, usize)> = r
            .requests
            .iter()
            .map(|q| (q.at_ns, q.method.as_str(), q.target.as_str(), q.line))
            .collect();
        let third = 1_000_000_000 / 3;
        assert_eq!(
            got,
            vec![
                (0, "GET", "/a?x=1", 1),
                (third, "POST", "/b", 2),
                (2 * third, "GET", "/d", 5),
                (2_000_000_000, "GET", "/c", 4),
            ]
        );
        assert_eq!(r.span_ns(), 2_000_000_000);
    }

    #[test]
    fn the_unix_time_of_a_log_stamp() {
        // date -u -d '2000-10-10T20:55:36Z' +%s
        assert_eq!(
            parse_log_time("10/Oct/2000:13:55:36 -0700"),
            Ok(971_211_336)
        );
        assert_eq!(parse_log_time("01/Jan/1970:00:00:00 +0000"), Ok(0));
        assert_eq!(
            parse_log_time("29/Feb/2024:00:00:00 +0000"),
            Ok(1_709_164_800)
        );
    }

    #[test]
    fn bad_lines_name_the_file_and_line() {
        let ok = "1.2.3.4 - - [25/Nov/2026:16:00:00 +0000] \"GET / HTTP/1.1\" 200 1\n";
        for (text, format, want) in [
            (format!("{ok}garbage\n"), None, "x.log:2: not a combined log line: no [time]"),
            (format!("{ok}{ok}\n1.2.3.4 - - [25/Nov/2026:16:00:00 +0000] \"-\" 408 0\n"), None, "x.log:4: not a combined log line: the request `-`"),
            ("1.2.3.4 - - [32/Nov/2026:16:00:00 +0000] \"GET / HTTP/1.1\" 200 1\n".to_owned(), None, "x.log:1: not a combined log line: the time"),
            (format!("{ok}1.2.3.4 - - [25/Nov/2026:16:00:00 +0000] \"GET x HTTP/1.1\" 200 1\n"), None, "x.log:2: the path `x` must start with `/`"),
            (format!("{ok}1.2.3.4 - - [25/Nov/2026:16:00:00 +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"-\"\n"), Some(ReplayFormat::Common), "x.log:2: not a common log line: more fields"),
            ("\n\n".to_owned(), None, "x.log: no requests to replay"),
        ] {
            let e = Replay::parse("x.log", text.as_bytes(), format).unwrap_err().to_string();
            assert!(e.starts_with(want), "{text:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn goreplay_payloads_keep_headers_and_body_and_skip_responses() {
        let text = concat!(
            "1 8f3a0001 1764086400000000000 0\n",
            "POST /api/items?x=1 HTTP/1.1\r\nHost: shop.example\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{\"a\":\"b\"}\n",
            "🐵🙈🙉\n",
            "2 8f3a0001 1764086400002000000 2000000\n",
            "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n\n",
            "🐵🙈🙉\n",
            "1 8f3a0002 1764086400250000000 0\n",
            "GET /health HTTP/1.1\r\nHost: shop.example\r\nConnection: keep-alive\r\nX-Trace: 7\r\n\r\n\n",
            "🐵🙈🙉\n",
        );
        let r = Replay::parse("t.gor", text.as_bytes(), None).unwrap();
        assert_eq!(r.format, ReplayFormat::Goreplay);
        assert_eq!(r.requests.len(), 2);
        let a = &r.requests[0];
        assert_eq!(
            (a.at_ns, a.method.as_str(), a.target.as_str(), a.line),
            (0, "POST", "/api/items?x=1", 1)
        );
        assert_eq!(a.headers, vec!["Content-Type: application/json".to_owned()]);
        assert_eq!(a.body, b"{\"a\":\"b\"}");
        let b = &r.requests[1];
        assert_eq!(
            (b.at_ns, b.target.as_str(), b.line),
            (250_000_000, "/health", 15)
        );
        assert_eq!(b.headers, vec!["X-Trace: 7".to_owned()]);
        assert!(b.body.is_empty());

        let bad = "1 1 5 0\nGET / HTTP/1.1\r\nHost: x\r\n\r\n\n🐵🙈🙉\nnonsense\nGET / HTTP/1.1\r\n\r\n\n🐵🙈🙉\n";
        let e = Replay::parse("t.gor", bad.as_bytes(), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("t.gor:7: not a goreplay payload header"),
            "{e}"
        );
        let cut = "1 1 5 0\nGET / HTTP/1.1\r\nHost: x\r\n\r\n";
        let e = Replay::parse("t.gor", cut.as_bytes(), None)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t.gor:1: a goreplay payload without"), "{e}");
    }
}
