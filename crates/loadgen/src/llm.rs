//! The LLM-gateway mode's two pieces of OpenAI's chat-completions API: the request a client
//! streams a completion with (`POST` JSON with `"stream": true`), and which streamed chunk
//! carries a token.
//!
//! The request follows OpenAI's "Create chat completion" shape, which vLLM, Ollama, LiteLLM and
//! the AI gateways in front of them accept: `model`, one user message, `max_tokens`, and
//! `stream: true`. The response is an event stream of `chat.completion.chunk` objects ended by
//! `data: [DONE]`.
//!
//! A chunk counts as a token when its `content` is a non-empty string. Servers open with a
//! chunk that carries only the role (`"delta":{"role":"assistant","content":""}`), and may end
//! with one that carries only `finish_reason` or usage: those are events, not tokens, so they
//! neither start the time to first token nor make a gap between tokens. The test is a scan for
//! `"content"` followed by `:` and a string with a first character, not a JSON parse: it reads
//! every well-formed chunk right, costs no allocation per token, and a chunk whose text merely
//! *contains* the characters `"content":"` inside another string is counted as a token — a
//! server would have to escape its quotes (`\"`) to send those, so that cannot happen in valid
//! JSON.

use memchr::memmem;

/// The data of the event that ends a completion stream.
pub(crate) const DONE: &[u8] = b"[DONE]";

/// What the LLM mode sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatRequest {
    /// The `model` field.
    pub model: String,
    /// The user message.
    pub prompt: String,
    /// `max_tokens`: how many tokens to ask for.
    pub max_tokens: u32,
}

impl ChatRequest {
    /// The JSON body.
    pub fn body(&self) -> Vec<u8> {
        serde_json::json!({
            "model": self.model,
            "messages": [{"role": "user", "content": self.prompt}],
            "max_tokens": self.max_tokens,
            "stream": true,
        })
        .to_string()
        .into_bytes()
    }

    /// The header lines it needs besides the caller's.
    pub fn headers() -> [&'static str; 2] {
        [
            "Content-Type: application/json",
            "Accept: text/event-stream",
        ]
    }
}

/// Whether a chunk's data carries a token: a `"content"` member whose value is a non-empty
/// string (see the module note).
pub(crate) fn is_token(data: &[u8]) -> bool {
    let finder = memmem::Finder::new(b"\"content\"");
    let mut from = 0;
    while let Some(at) = finder.find(&data[from..]) {
        let rest = &data[from + at + 9..];
        let rest = skip_ws(rest);
        if let Some(rest) = rest.strip_prefix(b":") {
            let rest = skip_ws(rest);
            if let Some(rest) = rest.strip_prefix(b"\"") {
                if rest.first().is_some_and(|b| *b != b'"') {
                    return true;
                }
            }
        }
        from += at + 9;
    }
    false
}

fn skip_ws(b: &[u8]) -> &[u8] {
    let n = b
        .iter()
        .take_while(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
        .count();
    &b[n..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_is_openai_s_shape() {
        let r = ChatRequest {
            model: "m".into(),
            prompt: "say \"hi\"".into(),
            max_tokens: 7,
        };
        let v: serde_json::Value = serde_json::from_slice(&r.body()).unwrap();
        assert_eq!(v["stream"], true);
        assert_eq!(v["max_tokens"], 7);
        assert_eq!(v["messages"][0]["role"], "user");
        assert_eq!(v["messages"][0]["content"], "say \"hi\"");
    }

    #[test]
    fn tokens_are_chunks_with_content() {
        let yes: [&[u8]; 3] = [
            br#"{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel"}}]}"#,
            br#"{"choices":[{"delta":{"content" : "\n"}}]}"#,
            br#"{"choices":[{"delta":{"role":"assistant","content":""}}],"x":{"content":"a"}}"#,
        ];
        for d in yes {
            assert!(is_token(d), "{}", String::from_utf8_lossy(d));
        }
        let no: [&[u8]; 5] = [
            br#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#,
            br#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
            br#"{"choices":[{"delta":{"content":null}}]}"#,
            b"[DONE]",
            br#"{"choices":[{"delta":{"content":"#,
        ];
        for d in no {
            assert!(!is_token(d), "{}", String::from_utf8_lossy(d));
        }
    }
}
