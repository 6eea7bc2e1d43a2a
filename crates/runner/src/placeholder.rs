//! Placeholders in command lines and templates: `{port}`, `{upstream}`, `{delay}`, ….
//!
//! Command lines (`serve`, `command`, `ready`, `setup`) are strict: every `{name}` must be a
//! known placeholder (a typo such as `{prot}` is a suite error, found before anything runs), and
//! `{{` / `}}` stand for literal braces. Template files (nginx or HAProxy configurations) are
//! lenient: only known `{name}`s are replaced, so the braces of their own syntax need no
//! escaping.

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

/// Whether `name` is a known placeholder.
pub fn is_known(name: &str) -> bool {
    KNOWN.iter().any(|(k, _)| *k == name)
}

/// Checks a strict command line: every `{name}` known, braces balanced or doubled. Returns the
/// first problem, for a person.
pub fn check(text: &str) -> Result<(), RunnerError> {
    expand_strict(text, &|name| is_known(name).then(String::new)).map(|_| ())
}

/// Replaces placeholders in a strict command line. `lookup` gives a value for a known name.
pub fn expand_strict(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
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
                    })
                }
            }
            rest = &tail[end + 1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Every known placeholder's name, comma-separated, for error messages.
pub(crate) fn known_names() -> String {
    KNOWN.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")
}

/// Replaces the known placeholders in a template, leaving every other brace as it is.
pub fn expand_lenient(text: &str, values: &BTreeMap<&'static str, String>) -> String {
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
}
