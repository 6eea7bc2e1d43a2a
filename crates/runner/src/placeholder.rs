//! Placeholders in command lines and templates: `{port}`, `{upstream}`, `{delay}`, ….
//!
//! Command lines (`serve`, `command`, `ready`, `setup`) are strict: every `{name}` must be a
//! known placeholder (a typo such as `{prot}` is a suite error, found before anything runs), and
//! `{{` / `}}` stand for literal braces. Template files (nginx or HAProxy configurations) are
//! lenient: only known `{name}`s are replaced, so the braces of their own syntax need no
//! escaping.
//!
//! `{backends:TEXT}` repeats TEXT once per back-end, with `{port}`, `{url}` and `{index}`
//! (counted from one) standing for that back-end's: one line per back-end in a template (each
//! repetition on its own line, indented as the first), one word per back-end, space separated,
//! in a command line. An nginx `upstream` block is `{backends:server 127.0.0.1:{port};}`;
//! HAProxy's is `{backends:server be{index} 127.0.0.1:{port}}`.

use std::collections::BTreeMap;

use crate::error::RunnerError;

/// Every placeholder a command line may use, with what it stands for (printed in errors and in
/// `docs/suite-format.md`).
pub const KNOWN: [(&str, &str); 17] = [
    ("port", "the port this process listens on"),
    ("host", "127.0.0.1"),
    ("scheme", "http or https, for this process's protocol"),
    ("protocol", "this process's protocol (h1c, h1, h2, h2c)"),
    (
        "protocol_flags",
        "built-in service flags for this process's protocol: --tls, --http2",
    ),
    ("backend_port", "the port of the first backend"),
    (
        "backend_ports",
        "the ports of every backend, space separated",
    ),
    ("upstream", "the URL of the first backend"),
    ("upstreams", "the URLs of every backend, space separated"),
    ("upstream_args", "--upstream URL for every backend"),
    ("delay", "the back-end delay, e.g. 20ms"),
    ("delay_ms", "the back-end delay in whole milliseconds"),
    ("size", "the payload size in bytes"),
    ("users", "the concurrent users (connections)"),
    (
        "cell_dir",
        "this cell's results directory (rendered templates are there)",
    ),
    ("suite_dir", "the directory of the suite file"),
    ("workdir", "the scenario's working directory"),
];

/// The list placeholder's prefix: `{backends:TEXT}` repeats TEXT once per back-end.
pub const LIST_PREFIX: &str = "backends:";

/// Names that stand for one back-end's values inside `{backends:…}`.
pub const LIST_ITEM: [(&str, &str); 3] = [
    ("port", "that back-end's port"),
    (
        "url",
        "that back-end's URL, http://127.0.0.1:PORT (https for TLS)",
    ),
    ("index", "that back-end's number, from 1"),
];

/// One back-end's values for `{backends:…}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListItem {
    /// Its number, from 1.
    pub index: usize,
    /// Its port.
    pub port: u16,
    /// Its URL.
    pub url: String,
}

impl ListItem {
    fn get(&self, name: &str) -> Option<String> {
        match name {
            "port" => Some(self.port.to_string()),
            "url" => Some(self.url.clone()),
            "index" => Some(self.index.to_string()),
            _ => None,
        }
    }
}

/// Where the `}` closing the `{` at `text[0]` is, counting nested braces.
fn matching_close(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Whether `name` is a known placeholder.
pub fn is_known(name: &str) -> bool {
    KNOWN.iter().any(|(k, _)| *k == name)
}

/// Checks a strict command line: every `{name}` known, braces balanced or doubled. Returns the
/// first problem, for a person.
pub fn check(text: &str) -> Result<(), RunnerError> {
    let one = [ListItem {
        index: 1,
        port: 1,
        url: String::new(),
    }];
    expand_strict_lists(text, &|name| is_known(name).then(String::new), &one).map(|_| ())
}

/// Replaces placeholders in a strict command line. `lookup` gives a value for a known name.
/// `{backends:…}` is refused here; [`expand_strict_lists`] fills it.
pub fn expand_strict(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, RunnerError> {
    expand_strict_lists(text, lookup, &[])
}

/// Like [`expand_strict`], with `{backends:TEXT}` repeated once per item of `backends`, space
/// separated (an empty list gives nothing).
pub fn expand_strict_lists(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    backends: &[ListItem],
) -> Result<String, RunnerError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(after) = tail.strip_prefix("{{") {
            out.push('{');
            rest = after;
        } else if let Some(after) = tail.strip_prefix("}}") {
            out.push('}');
            rest = after;
        } else if tail.starts_with('}') {
            return Err(RunnerError::UnmatchedClose);
        } else if tail[1..].starts_with(LIST_PREFIX) {
            let end = matching_close(tail).ok_or(RunnerError::UnmatchedOpen)?;
            let inner = &tail[1 + LIST_PREFIX.len()..end];
            let mut words = Vec::with_capacity(backends.len());
            for b in backends {
                let item = |n: &str| b.get(n).or_else(|| lookup(n));
                words.push(expand_strict_lists(inner, &item, &[])?);
            }
            out.push_str(&words.join(" "));
            rest = &tail[end + 1..];
        } else {
            let Some(end) = tail.find('}') else {
                return Err(RunnerError::UnmatchedOpen);
            };
            let name = &tail[1..end];
            match lookup(name) {
                Some(v) => out.push_str(&v),
                None => {
                    return Err(RunnerError::UnknownPlaceholder {
                        name: name.to_owned(),
                        known: known_names(),
                    })
                }
            }
            rest = &tail[end + 1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Placeholders that stand for paths. A command line is run by `sh -c`, and a path may hold
/// spaces or quotes (`--out "results/run 1"`, a suite under `~/My Suites/`), so in command lines
/// these values are quoted for the shell ([`shell_quote`]); in templates they are left as they
/// are (an nginx configuration has its own quoting).
pub const PATHS: [&str; 3] = ["cell_dir", "suite_dir", "workdir"];

/// `s` as one word for a POSIX shell: unchanged when it holds only characters no shell treats
/// specially, else in single quotes (a single quote inside becomes `'\''`).
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:,=@%".contains(&b));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Splits a `serve` line into words as a POSIX shell would (quotes and backslashes), without
/// running a shell: `None` when a quote is not closed.
pub fn split_words(line: &str) -> Option<Vec<String>> {
    shlex::split(line)
}

/// Every known placeholder's name, comma-separated, for error messages.
pub(crate) fn known_names() -> String {
    KNOWN.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")
}

/// Replaces the known placeholders in a template, leaving every other brace as it is.
pub fn expand_lenient(text: &str, values: &BTreeMap<&'static str, String>) -> String {
    expand_lenient_lists(text, values, &[])
}

/// Like [`expand_lenient`], with `{backends:TEXT}` repeated once per item of `backends`, each
/// repetition on its own line, indented as the line the placeholder starts on.
pub fn expand_lenient_lists(
    text: &str,
    values: &BTreeMap<&'static str, String>,
    backends: &[ListItem],
) -> String {
    let open = format!("{{{LIST_PREFIX}");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(&open) {
        let Some(end) = matching_close(&rest[i..]) else {
            break;
        };
        let before = &rest[..i];
        out.push_str(&plain(before, values));
        let line_start = out.rfind('\n').map_or(0, |n| n + 1);
        let indent: String = out[line_start..]
            .chars()
            .take_while(|c| *c == ' ' || *c == '\t')
            .collect();
        let inner = &rest[i + open.len()..i + end];
        let lines: Vec<String> = backends
            .iter()
            .map(|b| {
                let mut v = values.clone();
                v.insert("port", b.port.to_string());
                v.insert("url", b.url.clone());
                v.insert("index", b.index.to_string());
                plain(inner, &v)
            })
            .collect();
        out.push_str(&lines.join(&format!("\n{indent}")));
        rest = &rest[i + end + 1..];
    }
    out.push_str(&plain(rest, values));
    out
}

/// Replaces the known `{name}`s, nothing else.
fn plain(text: &str, values: &BTreeMap<&'static str, String>) -> String {
    let mut out = text.to_owned();
    for (k, v) in values {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(name: &str) -> Option<String> {
        match name {
            "port" => Some("8080".into()),
            "upstream" => Some("http://127.0.0.1:9000".into()),
            _ => None,
        }
    }

    #[test]
    fn strict_replaces_and_unescapes() {
        let s = expand_strict("x --port {port} --upstream {upstream} '{{a}}'", &values).unwrap();
        assert_eq!(s, "x --port 8080 --upstream http://127.0.0.1:9000 '{a}'");
    }

    #[test]
    fn paths_are_quoted_for_the_shell_only_when_they_need_it() {
        assert_eq!(shell_quote("/tmp/results/x_1"), "/tmp/results/x_1");
        assert_eq!(shell_quote("/tmp/run 1"), "'/tmp/run 1'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
        // What sh makes of a quoted value is the value itself.
        for v in ["/tmp/run 1/cells", "a'b", "$HOME;rm", "x\\y"] {
            let out = std::process::Command::new("sh")
                .args(["-c", &format!("printf %s {}", shell_quote(v))])
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), v);
        }
        let words = split_words("echo --port 1 --cert '/tmp/a b/c.pem'").unwrap();
        assert_eq!(words, ["echo", "--port", "1", "--cert", "/tmp/a b/c.pem"]);
    }

    #[test]
    fn strict_names_the_unknown_placeholder() {
        let e = expand_strict("serve --port {prot}", &values)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("unknown placeholder {prot}"), "{e}");
        assert!(check("awk '{print}'").is_err());
        assert!(check("awk '{{print}}'").is_ok());
        assert!(check("a { b")
            .unwrap_err()
            .to_string()
            .contains("unmatched `{`"));
        assert!(check("a } b")
            .unwrap_err()
            .to_string()
            .contains("unmatched `}`"));
        assert!(check("--port {port} {upstream_args} {delay}").is_ok());
    }

    #[test]
    fn lenient_leaves_config_syntax_alone() {
        let mut v = BTreeMap::new();
        v.insert("port", "8080".to_owned());
        let s = expand_lenient("server { listen {port}; {unknown} }", &v);
        assert_eq!(s, "server { listen 8080; {unknown} }");
    }

    fn three() -> Vec<ListItem> {
        [41001u16, 41002, 41003]
            .iter()
            .enumerate()
            .map(|(i, p)| ListItem {
                index: i + 1,
                port: *p,
                url: format!("http://127.0.0.1:{p}"),
            })
            .collect()
    }

    #[test]
    fn a_template_gets_one_line_per_backend_indented_as_the_first() {
        let mut v = BTreeMap::new();
        v.insert("port", "8080".to_owned());
        let nginx =
            "upstream b {\n    {backends:server 127.0.0.1:{port};}\n}\nserver { listen {port}; }\n";
        assert_eq!(
            expand_lenient_lists(nginx, &v, &three()),
            "upstream b {\n    server 127.0.0.1:41001;\n    server 127.0.0.1:41002;\n    \
             server 127.0.0.1:41003;\n}\nserver { listen 8080; }\n"
        );
        let haproxy = "backend b\n\t{backends:server be{index} {url} check}\n";
        assert_eq!(
            expand_lenient_lists(haproxy, &v, &three()),
            "backend b\n\tserver be1 http://127.0.0.1:41001 check\n\t\
             server be2 http://127.0.0.1:41002 check\n\tserver be3 http://127.0.0.1:41003 check\n"
        );
    }

    #[test]
    fn a_command_line_gets_one_word_per_backend() {
        let s = expand_strict_lists(
            "balance --port {port} {backends:--upstream {url}}",
            &values,
            &three(),
        )
        .unwrap();
        assert_eq!(
            s,
            "balance --port 8080 --upstream http://127.0.0.1:41001 --upstream \
             http://127.0.0.1:41002 --upstream http://127.0.0.1:41003"
        );
        assert!(check("x {backends:{port}:{index}:{url}:{delay}}").is_ok());
        let e = check("x {backends:{prot}}").unwrap_err().to_string();
        assert!(e.starts_with("unknown placeholder {prot}"), "{e}");
        assert!(check("x {backends:{port}")
            .unwrap_err()
            .to_string()
            .contains("unmatched `{`"));
    }
}
