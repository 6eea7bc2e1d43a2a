//! The JSON → XML converter behind the reference transform service (seed 004's "JSON to XML
//! transformation" scenario).
//!
//! [`json_to_xml`] turns one JSON text (RFC 8259) into one XML 1.0 document in a single pass: a
//! hand-written iterative tokenizer writes XML straight into a pre-sized output buffer. Open
//! arrays and objects live on an explicit heap stack, never the call stack, so no input can
//! overflow the stack; nesting deeper than [`JsonXmlLimits::max_depth`] is refused as soon as the
//! first container past the limit opens. UTF-8 is validated inside strings as they are scanned
//! (outside strings only ASCII is valid JSON anyway). No `String` is allocated per value: text is
//! escaped from the input into the output directly, and a closing tag is copied from the
//! opening one already written.
//!
//! # Mapping
//! The output is `<?xml version="1.0" encoding="UTF-8"?>`, a newline and one `<root>` element
//! holding the top-level value. Every value becomes one element; its kind is in a `type`
//! attribute, except for strings, which carry none:
//!
//! | JSON | XML (element `k`) |
//! |---|---|
//! | `"text"` | `<k>text</k>` (`""` gives `<k></k>`) |
//! | `-1.50e3` | `<k type="number">-1.50e3</k>` (the JSON text, verbatim) |
//! | `true` / `false` | `<k type="boolean">true</k>` |
//! | `null` | `<k type="null"/>` |
//! | `{"a":…,"b":…}` | `<k type="object"><a>…</a><b>…</b></k>` (`{}` gives `<k type="object"/>`) |
//! | `[x, y]` | `<k type="array"><item>x</item><item>y</item></k>` (`[]` gives `<k type="array"/>`) |
//!
//! Object members keep their order, and duplicate keys are all emitted, in order (RFC 8259 §4
//! leaves duplicates to the receiver; dropping one would hide data). No whitespace is added
//! between elements, so element content is exactly the value.
//!
//! # Keys
//! A key becomes the element name verbatim when it is an XML 1.0 `Name` (5th edition §2.3)
//! without `:` (so the output is also namespace-well-formed) and does not begin with `xml` in any
//! case (reserved by §2.3). Any other key (`""`, `"1a"`, `"a b"`, `"a:b"`, `"xmlns"`, …) becomes
//! an element named `_` with the original key in a `key` attribute: `{"a b":1}` gives
//! `<_ key="a b" type="number">1</_>`. A reader takes the key from `key` when it is present and
//! from the element name otherwise, so a real key `"_"` (`<_>`) stays distinct. Unicode letters
//! are name characters, so `{"日本":1}` keeps `<日本>`.
//!
//! # Characters
//! Text escapes `&`, `<`, `>`, `"` and `'` as the five predefined entities, and a carriage
//! return as `&#xD;` (a parser would turn a raw one into `\n`, XML 1.0 §2.11). Attribute values
//! (only `key`) also write tab, newline and carriage return as `&#x9;`, `&#xA;`, `&#xD;`, which
//! attribute-value normalisation (§3.3.3) would otherwise turn into spaces. Characters XML 1.0
//! cannot carry at all (§2.2: U+0000–U+001F other than tab, newline and carriage return, and
//! U+FFFE, U+FFFF), written raw or as `\u` escapes, are rejected with
//! [`JsonXmlError::InvalidCharacter`] rather than replaced: silently changing a payload is worse
//! than a 400. A `\u` escape of a lone surrogate is not a character at all and is invalid JSON.
//!
//! # What it does not do
//! It does not stream (the whole body is converted at once, bounded by
//! [`JsonXmlLimits::max_input`]), does not pretty-print, and does not interpret numbers (no
//! range check: `1e400` is copied as written).

use std::fmt;

/// The XML declaration, a newline and the start of the root element's opening tag.
const PROLOGUE: &[u8] = b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<root";
/// The name of the element that holds the top-level value.
const ROOT_NAME_LEN: usize = b"root".len();
/// The element of one array member, with its name's length.
const ITEM_OPEN: &[u8] = b"<item";
const ITEM_NAME_LEN: usize = b"item".len();

/// Limits applied while converting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonXmlLimits {
    /// The deepest nesting of arrays and objects accepted: a top-level `[]` has depth 1, so
    /// `[[1]]` needs at least 2. Scalars inside the deepest container are fine. 0 accepts only a
    /// scalar document.
    pub max_depth: usize,
    /// The largest input accepted, in bytes.
    pub max_input: usize,
}

impl Default for JsonXmlLimits {
    /// Depth 64 (half serde_json's default recursion limit of 128: deep enough for any real
    /// document), input 16 MiB.
    fn default() -> Self {
        Self {
            max_depth: 64,
            max_input: 16 * 1024 * 1024,
        }
    }
}

/// Why a body could not be converted. Every variant means "answer 400".
///
/// Positions are 1-based; a column counts characters, not bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JsonXmlError {
    /// The input is longer than [`JsonXmlLimits::max_input`].
    #[error("body is larger than the limit of {max} bytes")]
    TooLarge {
        /// The limit, in bytes.
        max: usize,
    },
    /// The input is not a JSON text. The reason is part of this error (not a lower-level cause),
    /// so it is in the message.
    #[error("invalid json at line {line}, column {column}: {reason}")]
    InvalidJson {
        /// Line of the offending character (or of the end of input).
        line: usize,
        /// Column of the offending character.
        column: usize,
        /// What was wrong there.
        reason: JsonSyntax,
    },
    /// The input is not valid UTF-8 (RFC 8259 §8.1 requires it).
    #[error("body is not valid utf-8 at line {line}, column {column}")]
    InvalidUtf8 {
        /// Line of the first invalid byte.
        line: usize,
        /// Column of the first invalid byte.
        column: usize,
    },
    /// Arrays and objects are nested deeper than [`JsonXmlLimits::max_depth`].
    #[error("json nesting is deeper than the limit of {max}")]
    TooDeep {
        /// The limit.
        max: usize,
    },
    /// A string holds a character XML 1.0 cannot carry (§2.2), raw or as a `\u` escape.
    #[error(
        "character U+{code_point:04X} at line {line}, column {column} cannot be carried by xml 1.0"
    )]
    InvalidCharacter {
        /// Line of the character (or of the backslash of its escape).
        line: usize,
        /// Column of the character (or of the backslash of its escape).
        column: usize,
        /// The character's code point.
        code_point: u32,
    },
}

/// What made an input invalid JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JsonSyntax {
    /// The input ended inside a value, or held no value at all.
    UnexpectedEnd,
    /// Something other than a value where a value must be (`'a'`, `NaN`, `]`).
    ExpectedValue,
    /// Something other than a double-quoted key where an object key must be.
    ExpectedKey,
    /// A key not followed by `:`.
    ExpectedColon,
    /// An array member followed by something other than `,` or `]`.
    ExpectedCommaOrBracket,
    /// An object member followed by something other than `,` or `}`.
    ExpectedCommaOrBrace,
    /// A `,` directly before `]` or `}`.
    TrailingComma,
    /// A word that is not `true`, `false` or `null`.
    InvalidLiteral,
    /// A number outside RFC 8259's grammar (`01`, `1.`, `-`, `.5`, `1e`).
    InvalidNumber,
    /// A backslash escape that is not one of RFC 8259's.
    InvalidEscape,
    /// A raw control character (U+0000–U+001F) inside a string.
    ControlCharacter,
    /// A `\u` escape of a surrogate without its other half.
    LoneSurrogate,
    /// Something other than whitespace after the top-level value.
    TrailingCharacters,
}

impl fmt::Display for JsonSyntax {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::UnexpectedEnd => "unexpected end of input",
            Self::ExpectedValue => "expected a json value",
            Self::ExpectedKey => "expected a double-quoted object key",
            Self::ExpectedColon => "expected ':' after an object key",
            Self::ExpectedCommaOrBracket => "expected ',' or ']' after an array member",
            Self::ExpectedCommaOrBrace => "expected ',' or '}' after an object member",
            Self::TrailingComma => "trailing comma",
            Self::InvalidLiteral => "invalid literal (expected true, false or null)",
            Self::InvalidNumber => "invalid number",
            Self::InvalidEscape => "invalid escape sequence",
            Self::ControlCharacter => "unescaped control character in string",
            Self::LoneSurrogate => "unpaired surrogate in \\u escape",
            Self::TrailingCharacters => "trailing characters after the json value",
        })
    }
}

/// Converts one JSON text into an XML document, by the rules in the module documentation.
///
/// # Errors
/// Any [`JsonXmlError`]: the input is too large, not UTF-8, not JSON, nested too deep, or holds a
/// character XML 1.0 cannot carry. Nothing is returned in part.
pub fn json_to_xml(input: &[u8], limits: &JsonXmlLimits) -> Result<Vec<u8>, JsonXmlError> {
    if input.len() > limits.max_input {
        return Err(JsonXmlError::TooLarge {
            max: limits.max_input,
        });
    }
    let mut converter = Converter {
        input,
        pos: 0,
        // Realistic documents grow by 1.3–2× (every key written twice, kinds spelt out); arrays
        // of small numbers grow more and pay a few reallocations.
        out: Vec::with_capacity(PROLOGUE.len() + input.len() * 2 + 64),
        scratch: Vec::new(),
        stack: Vec::with_capacity(limits.max_depth.min(64)),
        max_depth: limits.max_depth,
    };
    match converter.run() {
        Ok(()) => Ok(converter.out),
        Err(failure) => Err(failure.into_error(input, limits)),
    }
}

/// A failure found while converting, with its byte offset; turned into a [`JsonXmlError`] (line
/// and column counted) only once, at the end.
#[derive(Debug, Clone, Copy)]
struct Failure {
    at: usize,
    kind: FailureKind,
}

#[derive(Debug, Clone, Copy)]
enum FailureKind {
    Syntax(JsonSyntax),
    Utf8,
    Character(u32),
    TooDeep,
}

impl Failure {
    fn syntax(at: usize, reason: JsonSyntax) -> Self {
        Self {
            at,
            kind: FailureKind::Syntax(reason),
        }
    }

    fn into_error(self, input: &[u8], limits: &JsonXmlLimits) -> JsonXmlError {
        let (line, column) = line_column(input, self.at);
        match self.kind {
            FailureKind::Syntax(reason) => JsonXmlError::InvalidJson {
                line,
                column,
                reason,
            },
            FailureKind::Utf8 => JsonXmlError::InvalidUtf8 { line, column },
            FailureKind::Character(code_point) => JsonXmlError::InvalidCharacter {
                line,
                column,
                code_point,
            },
            FailureKind::TooDeep => JsonXmlError::TooDeep {
                max: limits.max_depth,
            },
        }
    }
}

/// 1-based line and column (in characters) of byte offset `at`. Everything before a failure has
/// been validated as UTF-8, so counting non-continuation bytes counts characters.
fn line_column(input: &[u8], at: usize) -> (usize, usize) {
    let before = &input[..at.min(input.len())];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    let column = 1 + before[line_start..]
        .iter()
        .filter(|&&b| b & 0xC0 != 0x80)
        .count();
    (line, column)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    Object,
    Array,
}

/// Where an element's name sits in the output, so its closing tag can be copied from it.
#[derive(Debug, Clone, Copy)]
struct Name {
    start: usize,
    len: usize,
}

/// One open array or object.
#[derive(Debug, Clone, Copy)]
struct Frame {
    container: Container,
    name: Name,
}

#[derive(Debug)]
struct Converter<'a> {
    input: &'a [u8],
    pos: usize,
    out: Vec<u8>,
    /// Decoded keys that need it (escapes, or not a plain ASCII name); reused across keys.
    scratch: Vec<u8>,
    stack: Vec<Frame>,
    max_depth: usize,
}

impl Converter<'_> {
    /// The whole conversion: one loop over values, with open containers on `stack`.
    fn run(&mut self) -> Result<(), Failure> {
        self.out.extend_from_slice(PROLOGUE);
        // Every value is entered with its element's opening tag written up to (not including) the
        // `>`, so the value can still add its `type` attribute or close the tag with `/>`.
        let mut name = Name {
            start: self.out.len() - ROOT_NAME_LEN,
            len: ROOT_NAME_LEN,
        };
        'value: loop {
            self.skip_whitespace();
            let at = self.pos;
            match self.input.get(at) {
                Some(b'"') => {
                    self.out.push(b'>');
                    self.pos = scan_string::<true>(self.input, at + 1, &mut self.out)?;
                    self.close(name);
                }
                Some(b'-' | b'0'..=b'9') => {
                    self.out.extend_from_slice(b" type=\"number\">");
                    self.number()?;
                    self.close(name);
                }
                Some(b't') => {
                    self.literal(b"true")?;
                    self.out.extend_from_slice(b" type=\"boolean\">true");
                    self.close(name);
                }
                Some(b'f') => {
                    self.literal(b"false")?;
                    self.out.extend_from_slice(b" type=\"boolean\">false");
                    self.close(name);
                }
                Some(b'n') => {
                    self.literal(b"null")?;
                    self.out.extend_from_slice(b" type=\"null\"/>");
                }
                Some(&open @ (b'{' | b'[')) => {
                    // Checked before anything is pushed: the stack never exceeds the limit.
                    if self.stack.len() >= self.max_depth {
                        return Err(Failure {
                            at,
                            kind: FailureKind::TooDeep,
                        });
                    }
                    self.pos += 1;
                    let (container, attribute, close) = if open == b'{' {
                        (Container::Object, &b" type=\"object\""[..], b'}')
                    } else {
                        (Container::Array, &b" type=\"array\""[..], b']')
                    };
                    self.out.extend_from_slice(attribute);
                    self.skip_whitespace();
                    if self.input.get(self.pos) == Some(&close) {
                        self.pos += 1;
                        self.out.extend_from_slice(b"/>");
                    } else {
                        self.out.push(b'>');
                        self.stack.push(Frame { container, name });
                        name = match container {
                            Container::Object => self.member()?,
                            Container::Array => self.open_item(),
                        };
                        continue 'value;
                    }
                }
                // Only reachable after a `,`: an empty array was handled when it opened.
                Some(b']') if self.in_array() => {
                    return Err(Failure::syntax(at, JsonSyntax::TrailingComma));
                }
                Some(_) => return Err(Failure::syntax(at, JsonSyntax::ExpectedValue)),
                None => return Err(Failure::syntax(at, JsonSyntax::UnexpectedEnd)),
            }
            // A value is complete: close the containers it completes, until one goes on.
            while let Some(&frame) = self.stack.last() {
                self.skip_whitespace();
                let at = self.pos;
                match (frame.container, self.input.get(at)) {
                    (container, Some(b',')) => {
                        self.pos += 1;
                        name = match container {
                            Container::Object => self.member()?,
                            Container::Array => self.open_item(),
                        };
                        continue 'value;
                    }
                    (Container::Object, Some(b'}')) | (Container::Array, Some(b']')) => {
                        self.pos += 1;
                        self.close(frame.name);
                        self.stack.pop();
                    }
                    (_, None) => return Err(Failure::syntax(at, JsonSyntax::UnexpectedEnd)),
                    (Container::Object, Some(_)) => {
                        return Err(Failure::syntax(at, JsonSyntax::ExpectedCommaOrBrace));
                    }
                    (Container::Array, Some(_)) => {
                        return Err(Failure::syntax(at, JsonSyntax::ExpectedCommaOrBracket));
                    }
                }
            }
            break;
        }
        self.skip_whitespace();
        if self.pos < self.input.len() {
            return Err(Failure::syntax(self.pos, JsonSyntax::TrailingCharacters));
        }
        Ok(())
    }

    fn in_array(&self) -> bool {
        self.stack
            .last()
            .is_some_and(|frame| frame.container == Container::Array)
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.input.get(self.pos) {
            self.pos += 1;
        }
    }

    /// Writes `</name>`, copying the name from its opening tag.
    fn close(&mut self, name: Name) {
        self.out.extend_from_slice(b"</");
        self.out
            .extend_from_within(name.start..name.start + name.len);
        self.out.push(b'>');
    }

    /// Opens the element of the next array member.
    fn open_item(&mut self) -> Name {
        self.out.extend_from_slice(ITEM_OPEN);
        Name {
            start: self.out.len() - ITEM_NAME_LEN,
            len: ITEM_NAME_LEN,
        }
    }

    /// Parses `"key" :` and opens the member's element (see "Keys" in the module docs).
    fn member(&mut self) -> Result<Name, Failure> {
        self.skip_whitespace();
        let at = self.pos;
        match self.input.get(at) {
            Some(b'"') => {}
            // Only reachable after a `,`: an empty object was handled when it opened.
            Some(b'}') => return Err(Failure::syntax(at, JsonSyntax::TrailingComma)),
            Some(_) => return Err(Failure::syntax(at, JsonSyntax::ExpectedKey)),
            None => return Err(Failure::syntax(at, JsonSyntax::UnexpectedEnd)),
        }
        let name = match plain_ascii_name(self.input, at + 1) {
            // The common case: an ASCII name without escapes, copied straight from the input.
            Some(end) => {
                self.out.push(b'<');
                let start = self.out.len();
                self.out.extend_from_slice(&self.input[at + 1..end]);
                self.pos = end + 1;
                Name {
                    start,
                    len: end - at - 1,
                }
            }
            None => {
                self.scratch.clear();
                self.pos = scan_string::<false>(self.input, at + 1, &mut self.scratch)?;
                self.out.push(b'<');
                let start = self.out.len();
                if is_element_name(&self.scratch) {
                    self.out.extend_from_slice(&self.scratch);
                    Name {
                        start,
                        len: self.scratch.len(),
                    }
                } else {
                    self.out.extend_from_slice(b"_ key=\"");
                    escape_attribute(&self.scratch, &mut self.out);
                    self.out.push(b'"');
                    Name { start, len: 1 }
                }
            }
        };
        self.skip_whitespace();
        match self.input.get(self.pos) {
            Some(b':') => {
                self.pos += 1;
                Ok(name)
            }
            Some(_) => Err(Failure::syntax(self.pos, JsonSyntax::ExpectedColon)),
            None => Err(Failure::syntax(self.pos, JsonSyntax::UnexpectedEnd)),
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), Failure> {
        if self.input[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(Failure::syntax(self.pos, JsonSyntax::InvalidLiteral))
        }
    }

    /// Validates a number (RFC 8259 §6) and copies its text.
    fn number(&mut self) -> Result<(), Failure> {
        let input = self.input;
        let start = self.pos;
        let mut i = start;
        let digits = |mut i: usize| {
            while input.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            i
        };
        let invalid = |at: usize| Failure::syntax(at, JsonSyntax::InvalidNumber);
        if input.get(i) == Some(&b'-') {
            i += 1;
        }
        match input.get(i) {
            Some(b'0') => {
                i += 1;
                if input.get(i).is_some_and(u8::is_ascii_digit) {
                    return Err(invalid(i));
                }
            }
            Some(b'1'..=b'9') => i = digits(i + 1),
            _ => return Err(invalid(i)),
        }
        if input.get(i) == Some(&b'.') {
            let after = digits(i + 1);
            if after == i + 1 {
                return Err(invalid(after));
            }
            i = after;
        }
        if let Some(b'e' | b'E') = input.get(i) {
            i += 1;
            if let Some(b'+' | b'-') = input.get(i) {
                i += 1;
            }
            let after = digits(i);
            if after == i {
                return Err(invalid(i));
            }
            i = after;
        }
        self.out.extend_from_slice(&input[start..i]);
        self.pos = i;
        Ok(())
    }
}

/// Byte classes for the scanners, one table lookup per byte.
const STRING_STOP: u8 = 1; // ends a plain run in any string: `"`, `\`, controls, non-ASCII
const TEXT_STOP: u8 = 2; // ends a plain run in XML text: `&`, `<`, `>`, `'`
const NAME_START: u8 = 4; // ASCII NameStartChar, without `:`
const NAME_CHAR: u8 = 8; // ASCII NameChar, without `:`

static CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        let mut class = 0;
        if c < 0x20 || c >= 0x80 || c == b'"' || c == b'\\' {
            class |= STRING_STOP;
        }
        if c == b'&' || c == b'<' || c == b'>' || c == b'\'' {
            class |= TEXT_STOP;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            class |= NAME_START | NAME_CHAR;
        }
        if c.is_ascii_digit() || c == b'-' || c == b'.' {
            class |= NAME_CHAR;
        }
        table[b] = class;
        b += 1;
    }
    table
};

/// If the key starting at `i` (after its quote) is ASCII name characters up to its closing
/// quote, is a valid element name and is not reserved, returns the quote's index.
fn plain_ascii_name(input: &[u8], i: usize) -> Option<usize> {
    let first = *input.get(i)?;
    if CLASS[usize::from(first)] & NAME_START == 0 {
        return None;
    }
    let mut end = i + 1;
    while input
        .get(end)
        .is_some_and(|&b| CLASS[usize::from(b)] & NAME_CHAR != 0)
    {
        end += 1;
    }
    let reserved = input
        .get(i..i + 3)
        .is_some_and(|start| start.eq_ignore_ascii_case(b"xml"));
    (input.get(end) == Some(&b'"') && !reserved).then_some(end)
}

/// Scans the JSON string whose content starts at `i`, writing it decoded into `out` (escaped as
/// XML text when `XML`), and returns the index after its closing quote.
fn scan_string<const XML: bool>(
    input: &[u8],
    mut i: usize,
    out: &mut Vec<u8>,
) -> Result<usize, Failure> {
    let stop = if XML {
        STRING_STOP | TEXT_STOP
    } else {
        STRING_STOP
    };
    let mut run = i;
    loop {
        while input
            .get(i)
            .is_some_and(|&b| CLASS[usize::from(b)] & stop == 0)
        {
            i += 1;
        }
        let Some(&b) = input.get(i) else {
            return Err(Failure::syntax(i, JsonSyntax::UnexpectedEnd));
        };
        match b {
            b'"' => {
                out.extend_from_slice(&input[run..i]);
                return Ok(i + 1);
            }
            // Non-ASCII stays in the run once validated.
            0x80.. => i = check_utf8(input, i)?,
            b'\\' => {
                out.extend_from_slice(&input[run..i]);
                let (code_point, next) = decode_escape(input, i)?;
                push_char::<XML>(out, code_point, i)?;
                i = next;
                run = i;
            }
            0x00..=0x1F => return Err(Failure::syntax(i, JsonSyntax::ControlCharacter)),
            _ => {
                out.extend_from_slice(&input[run..i]);
                out.extend_from_slice(entity(b));
                i += 1;
                run = i;
            }
        }
    }
}

/// The predefined entity for one of the five XML special characters.
fn entity(b: u8) -> &'static [u8] {
    match b {
        b'&' => b"&amp;",
        b'<' => b"&lt;",
        b'>' => b"&gt;",
        b'"' => b"&quot;",
        b'\'' => b"&apos;",
        _ => unreachable!("only the five XML special characters have an entity"),
    }
}

/// Validates the UTF-8 sequence starting at `i` (a byte ≥ 0x80) and returns the index after it.
/// Also refuses U+FFFE and U+FFFF (`EF BF BE`, `EF BF BF`), the only non-ASCII characters valid
/// in UTF-8 that XML 1.0 cannot carry (surrogates are not valid UTF-8).
fn check_utf8(input: &[u8], i: usize) -> Result<usize, Failure> {
    let invalid = Failure {
        at: i,
        kind: FailureKind::Utf8,
    };
    // The range of the second byte depends on the first (Unicode 15, table 3-7); later
    // continuation bytes are always 0x80..=0xBF.
    let (len, second) = match input[i] {
        0xC2..=0xDF => (2, 0x80..=0xBF),
        0xE0 => (3, 0xA0..=0xBF),
        0xE1..=0xEC | 0xEE..=0xEF => (3, 0x80..=0xBF),
        0xED => (3, 0x80..=0x9F),
        0xF0 => (4, 0x90..=0xBF),
        0xF1..=0xF3 => (4, 0x80..=0xBF),
        0xF4 => (4, 0x80..=0x8F),
        _ => return Err(invalid),
    };
    let Some(bytes) = input.get(i..i + len) else {
        return Err(invalid);
    };
    if !second.contains(&bytes[1]) || !bytes[2..].iter().all(|&b| b & 0xC0 == 0x80) {
        return Err(invalid);
    }
    if bytes[..2] == [0xEF, 0xBF] && bytes[2] >= 0xBE {
        return Err(Failure {
            at: i,
            kind: FailureKind::Character(0xFFFE + u32::from(bytes[2] - 0xBE)),
        });
    }
    Ok(i + len)
}

/// Decodes the escape whose backslash is at `i`: returns the code point (surrogate pairs joined)
/// and the index after the escape.
fn decode_escape(input: &[u8], i: usize) -> Result<(u32, usize), Failure> {
    let simple = |c: u8| Ok((u32::from(c), i + 2));
    match input.get(i + 1) {
        Some(&c @ (b'"' | b'\\' | b'/')) => simple(c),
        Some(b'b') => simple(0x08),
        Some(b'f') => simple(0x0C),
        Some(b'n') => simple(b'\n'),
        Some(b'r') => simple(b'\r'),
        Some(b't') => simple(b'\t'),
        Some(b'u') => {
            let high = hex4(input, i + 2)?;
            match high {
                0xD800..=0xDBFF => {
                    let lone = Failure::syntax(i, JsonSyntax::LoneSurrogate);
                    if input.get(i + 6..i + 8) != Some(b"\\u") {
                        return Err(lone);
                    }
                    let low = hex4(input, i + 8)?;
                    if !(0xDC00..=0xDFFF).contains(&low) {
                        return Err(lone);
                    }
                    Ok((0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00), i + 12))
                }
                0xDC00..=0xDFFF => Err(Failure::syntax(i, JsonSyntax::LoneSurrogate)),
                _ => Ok((high, i + 6)),
            }
        }
        Some(_) => Err(Failure::syntax(i, JsonSyntax::InvalidEscape)),
        None => Err(Failure::syntax(i + 1, JsonSyntax::UnexpectedEnd)),
    }
}

/// The four hex digits of a `\u` escape starting at `i`.
fn hex4(input: &[u8], i: usize) -> Result<u32, Failure> {
    let mut value = 0;
    for at in i..i + 4 {
        let digit = match input.get(at) {
            Some(&b) => char::from(b)
                .to_digit(16)
                .ok_or(Failure::syntax(at, JsonSyntax::InvalidEscape))?,
            None => return Err(Failure::syntax(at, JsonSyntax::UnexpectedEnd)),
        };
        value = value * 16 + digit;
    }
    Ok(value)
}

/// Writes an escaped character, refusing those XML 1.0 cannot carry (§2.2 `Char`). `at` is the
/// escape's backslash, for the error.
fn push_char<const XML: bool>(
    out: &mut Vec<u8>,
    code_point: u32,
    at: usize,
) -> Result<(), Failure> {
    let legal =
        matches!(code_point, 0x09 | 0x0A | 0x0D | 0x20..=0xD7FF | 0xE000..=0xFFFD | 0x10000..);
    let character = char::from_u32(code_point)
        .filter(|_| legal)
        .ok_or(Failure {
            at,
            kind: FailureKind::Character(code_point),
        })?;
    if XML {
        match character {
            '&' | '<' | '>' | '"' | '\'' => {
                out.extend_from_slice(entity(code_point as u8));
                return Ok(());
            }
            '\r' => {
                out.extend_from_slice(b"&#xD;");
                return Ok(());
            }
            _ => {}
        }
    }
    out.extend_from_slice(character.encode_utf8(&mut [0; 4]).as_bytes());
    Ok(())
}

/// Writes a decoded key as a double-quoted attribute value; its characters were already checked.
fn escape_attribute(value: &[u8], out: &mut Vec<u8>) {
    let mut run = 0;
    for (i, &b) in value.iter().enumerate() {
        let escaped: &[u8] = match b {
            b'&' | b'<' | b'>' | b'"' | b'\'' => entity(b),
            b'\t' => b"&#x9;",
            b'\n' => b"&#xA;",
            b'\r' => b"&#xD;",
            _ => continue,
        };
        out.extend_from_slice(&value[run..i]);
        out.extend_from_slice(escaped);
        run = i + 1;
    }
    out.extend_from_slice(&value[run..]);
}

/// Whether a decoded key can be an element name as it is: an XML 1.0 `Name` without `:`, not
/// beginning with `xml` in any case.
fn is_element_name(name: &[u8]) -> bool {
    if name.len() >= 3 && name[..3].eq_ignore_ascii_case(b"xml") {
        return false;
    }
    let name = std::str::from_utf8(name).expect("keys are decoded into valid utf-8");
    let mut chars = name.chars();
    chars.next().is_some_and(is_name_start) && chars.all(is_name_char)
}

/// XML 1.0 (5th edition) §2.3 `NameStartChar`, without `:`.
fn is_name_start(c: char) -> bool {
    matches!(c,
        'A'..='Z' | '_' | 'a'..='z' | '\u{C0}'..='\u{D6}' | '\u{D8}'..='\u{F6}'
        | '\u{F8}'..='\u{2FF}' | '\u{370}'..='\u{37D}' | '\u{37F}'..='\u{1FFF}'
        | '\u{200C}'..='\u{200D}' | '\u{2070}'..='\u{218F}' | '\u{2C00}'..='\u{2FEF}'
        | '\u{3001}'..='\u{D7FF}' | '\u{F900}'..='\u{FDCF}' | '\u{FDF0}'..='\u{FFFD}'
        | '\u{10000}'..='\u{EFFFF}')
}

/// XML 1.0 (5th edition) §2.3 `NameChar`, without `:`.
fn is_name_char(c: char) -> bool {
    is_name_start(c)
        || matches!(c, '-' | '.' | '0'..='9' | '\u{B7}' | '\u{300}'..='\u{36F}' | '\u{203F}'..='\u{2040}')
}

/// The strict reader of the converter's output, for its tests and fuzz target.
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod strict_reader;

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use quick_xml::events::Event;
    use quick_xml::reader::Reader;

    use super::strict_reader::{walk, DECL, J};
    use super::*;

    fn s(text: &str) -> J {
        J::Str(text.to_owned())
    }

    fn n(text: &str) -> J {
        J::Num(text.to_owned())
    }

    fn obj(members: &[(&str, J)]) -> J {
        J::Obj(
            members
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        )
    }

    /// Converts with default limits; every successful output goes through [`walk`].
    fn convert(json: &[u8]) -> Result<(String, J), JsonXmlError> {
        let xml = json_to_xml(json, &JsonXmlLimits::default())?;
        let value = walk(&xml);
        Ok((String::from_utf8(xml).expect("utf-8 output"), value))
    }

    /// The output after the declaration line.
    fn body(json: &str) -> String {
        let (xml, _) = convert(json.as_bytes()).unwrap_or_else(|e| panic!("{json:?}: {e}"));
        xml.strip_prefix(DECL).expect("declaration").to_owned()
    }

    fn value(json: &str) -> J {
        convert(json.as_bytes())
            .unwrap_or_else(|e| panic!("{json:?}: {e}"))
            .1
    }

    // ---- mapping ----

    #[test]
    fn maps_every_kind() {
        assert_eq!(
            body(
                r#"{"s":"x","n":-1.5e3,"t":true,"f":false,"z":null,"a":[1,"y",[]],"o":{"k":{}},"e":""}"#
            ),
            concat!(
                r#"<root type="object"><s>x</s><n type="number">-1.5e3</n>"#,
                r#"<t type="boolean">true</t><f type="boolean">false</f><z type="null"/>"#,
                r#"<a type="array"><item type="number">1</item><item>y</item><item type="array"/></a>"#,
                r#"<o type="object"><k type="object"/></o><e></e></root>"#,
            )
        );
    }

    #[test]
    fn maps_top_level_scalars_and_empty_containers() {
        let cases = [
            (r#""hi""#, "<root>hi</root>"),
            ("42", r#"<root type="number">42</root>"#),
            ("true", r#"<root type="boolean">true</root>"#),
            ("null", r#"<root type="null"/>"#),
            ("[]", r#"<root type="array"/>"#),
            ("{}", r#"<root type="object"/>"#),
            (" [ ] ", r#"<root type="array"/>"#),
            ("{\n}", r#"<root type="object"/>"#),
            ("[null]", r#"<root type="array"><item type="null"/></root>"#),
        ];
        for (json, expected) in cases {
            assert_eq!(body(json), expected, "{json}");
        }
    }

    #[test]
    fn keeps_numbers_as_written() {
        for number in [
            "0",
            "-0",
            "1.50",
            "1E+2",
            "-12.5e-3",
            "123456789012345678901234567890",
            "1e400",
        ] {
            assert_eq!(value(&format!("[{number}]")), J::Arr(vec![n(number)]));
        }
    }

    #[test]
    fn keeps_duplicate_keys_in_order() {
        assert_eq!(
            body(r#"{"a":1,"b":2,"a":3}"#),
            r#"<root type="object"><a type="number">1</a><b type="number">2</b><a type="number">3</a></root>"#
        );
        assert_eq!(
            value(r#"{"a":1,"a":"x"}"#),
            obj(&[("a", n("1")), ("a", s("x"))])
        );
    }

    #[test]
    fn whitespace_does_not_change_the_output() {
        let compact = r#"{"a":[1,{"b":null},"c d"],"e":{}}"#;
        let spaced = " \r\n{ \"a\" :\t[ 1 ,\n{\"b\" : null } , \"c d\" ] , \"e\" : { } }\n\t ";
        assert_eq!(body(spaced), body(compact));
    }

    // ---- escaping ----

    #[test]
    fn escapes_text() {
        assert_eq!(
            body(r#""<a href='x'>&amp;\"</a> ]]>""#),
            "<root>&lt;a href=&apos;x&apos;&gt;&amp;amp;&quot;&lt;/a&gt; ]]&gt;</root>"
        );
        // A carriage return must survive end-of-line normalisation.
        assert_eq!(body(r#""a\r\nb\tc""#), "<root>a&#xD;\nb\tc</root>");
        assert_eq!(value(r#""a\r\nb\tc\r""#), s("a\r\nb\tc\r"));
        assert_eq!(value(r#""\"\\\/""#), value(r#""\"\\/""#));
        assert_eq!(
            value(r#""\"\\\/\u00e9\u00E9\ud83d\ude00\u20AC""#),
            s("\"\\/éé😀€")
        );
        assert_eq!(
            value("\"raw é 日本 😀 \u{7f} \u{85} \u{2028} \u{fffd}\""),
            s("raw é 日本 😀 \u{7f} \u{85} \u{2028} \u{fffd}")
        );
        assert_eq!(
            value(r#""\u007f\u0085\ufffd\ue000\udbff\udfff""#),
            s("\u{7f}\u{85}\u{fffd}\u{e000}\u{10ffff}")
        );
    }

    #[test]
    fn escapes_mapped_keys_in_the_attribute() {
        let json = r#"{"a\"b<c>&'\t\n\r d":1}"#;
        assert_eq!(
            body(json),
            r#"<root type="object"><_ key="a&quot;b&lt;c&gt;&amp;&apos;&#x9;&#xA;&#xD; d" type="number">1</_></root>"#
        );
        assert_eq!(value(json), obj(&[("a\"b<c>&'\t\n\r d", n("1"))]));
    }

    // ---- keys ----

    #[test]
    fn maps_keys_that_are_not_xml_names() {
        let verbatim = [
            "name", "_", "item", "root", "key", "type", "a.b-c_d9", "xm", "héllo", "日本", "Ωmega",
            "a\u{b7}", "x\u{300}", "😀", "_1",
        ];
        for key in verbatim {
            let json = format!(r#"{{"{key}":1}}"#);
            assert_eq!(
                body(&json),
                format!(r#"<root type="object"><{key} type="number">1</{key}></root>"#),
                "{key:?}"
            );
        }
        let mapped = [
            "1a",
            "a b",
            "",
            "xml",
            "XMLish",
            "xmlns",
            "Xml",
            "a:b",
            ":",
            "-x",
            ".x",
            "\u{b7}a",
            "a\u{2028}",
            "a/b",
            "a@b",
        ];
        for key in mapped {
            let json = format!(r#"{{"{key}":true}}"#);
            assert_eq!(
                body(&json),
                format!(r#"<root type="object"><_ key="{key}" type="boolean">true</_></root>"#),
                "{key:?}"
            );
            assert_eq!(value(&json), obj(&[(key, J::Bool(true))]));
        }
        // An escaped key is decoded before the rule applies.
        assert_eq!(
            body(r#"{"n\u0061me":"x"}"#),
            r#"<root type="object"><name>x</name></root>"#
        );
        assert_eq!(
            body(r#"{"\u0031":"x"}"#),
            r#"<root type="object"><_ key="1">x</_></root>"#
        );
        // Closing tags are copied from the right opening tag through nesting.
        assert_eq!(
            value(r#"{"a b":{"c":[{"1":{}}]},"d":2}"#),
            obj(&[
                ("a b", obj(&[("c", J::Arr(vec![obj(&[("1", obj(&[]))])]))])),
                ("d", n("2")),
            ])
        );
    }

    // ---- errors ----

    fn invalid(json: &[u8]) -> JsonXmlError {
        match convert(json) {
            Ok((xml, _)) => panic!("{:?} converted to {xml}", String::from_utf8_lossy(json)),
            Err(e) => e,
        }
    }

    #[test]
    fn rejects_invalid_json_with_its_position() {
        use JsonSyntax::*;
        let cases: &[(&str, usize, usize, JsonSyntax)] = &[
            ("[1,2,]", 1, 6, TrailingComma),
            (r#"{"a":1,}"#, 1, 8, TrailingComma),
            ("{a:1}", 1, 2, ExpectedKey),
            ("{'a':1}", 1, 2, ExpectedKey),
            ("['a']", 1, 2, ExpectedValue),
            (r#""\x""#, 1, 2, InvalidEscape),
            (r#""\u12G4""#, 1, 6, InvalidEscape),
            (r#""\ud800""#, 1, 2, LoneSurrogate),
            (r#"["ab\ud800\u0041"]"#, 1, 5, LoneSurrogate),
            (r#""\udc00""#, 1, 2, LoneSurrogate),
            (r#"{"a":1} x"#, 1, 9, TrailingCharacters),
            ("[1] [2]", 1, 5, TrailingCharacters),
            ("", 1, 1, UnexpectedEnd),
            ("  \n ", 2, 2, UnexpectedEnd),
            ("NaN", 1, 1, ExpectedValue),
            ("[Infinity]", 1, 2, ExpectedValue),
            ("-Infinity", 1, 2, InvalidNumber),
            ("01", 1, 2, InvalidNumber),
            ("1.", 1, 3, InvalidNumber),
            (".5", 1, 1, ExpectedValue),
            ("1e", 1, 3, InvalidNumber),
            ("1e+", 1, 4, InvalidNumber),
            ("+1", 1, 1, ExpectedValue),
            ("tru", 1, 1, InvalidLiteral),
            ("[nulL]", 1, 2, InvalidLiteral),
            ("[1 2]", 1, 4, ExpectedCommaOrBracket),
            (r#"{"a":1 "b":2}"#, 1, 8, ExpectedCommaOrBrace),
            (r#"{"a" 1}"#, 1, 6, ExpectedColon),
            (r#"{"a":}"#, 1, 6, ExpectedValue),
            ("]", 1, 1, ExpectedValue),
            (r#""abc"#, 1, 5, UnexpectedEnd),
            ("[1,", 1, 4, UnexpectedEnd),
            (r#"{"a":"#, 1, 6, UnexpectedEnd),
            (r#""\u00"#, 1, 6, UnexpectedEnd),
            ("\"a\u{1}b\"", 1, 3, ControlCharacter),
            ("\"a\tb\"", 1, 3, ControlCharacter),
            ("{\n  \"a\": 1,\n  \"b\": [1, 2,],\n}", 3, 14, TrailingComma),
            ("[\"é\", x]", 1, 7, ExpectedValue),
        ];
        for &(json, line, column, reason) in cases {
            assert_eq!(
                invalid(json.as_bytes()),
                JsonXmlError::InvalidJson {
                    line,
                    column,
                    reason
                },
                "{json:?}"
            );
        }
        assert_eq!(
            invalid(b"[1,]").to_string(),
            "invalid json at line 1, column 4: trailing comma"
        );
    }

    #[test]
    fn rejects_characters_xml_cannot_carry() {
        let cases: &[(&str, usize, u32)] = &[
            (r#""\u0000""#, 2, 0),
            (r#""ab\u001F""#, 4, 0x1F),
            (r#""\b""#, 2, 0x08),
            (r#""\f""#, 2, 0x0C),
            (r#""\uFFFE""#, 2, 0xFFFE),
            (r#""\uffff""#, 2, 0xFFFF),
            ("\"é\u{FFFF}\"", 3, 0xFFFF),
            ("\"\u{FFFE}\"", 2, 0xFFFE),
            (r#"{"\u0001":1}"#, 3, 1),
            ("{\"k\u{FFFF}\":1}", 4, 0xFFFF),
        ];
        for &(json, column, code_point) in cases {
            assert_eq!(
                invalid(json.as_bytes()),
                JsonXmlError::InvalidCharacter {
                    line: 1,
                    column,
                    code_point
                },
                "{json:?}"
            );
        }
        assert_eq!(
            invalid(br#""\u0000""#).to_string(),
            "character U+0000 at line 1, column 2 cannot be carried by xml 1.0"
        );
    }

    #[test]
    fn rejects_invalid_utf8() {
        let cases: &[(&[u8], usize)] = &[
            (b"\"\xff\"", 2),
            (b"\"ab\xc3", 4),
            (b"\"\xc3(\"", 2),
            (b"\"\xc0\xaf\"", 2),         // overlong '/'
            (b"\"\xed\xa0\x80\"", 2),     // an encoded surrogate
            (b"\"\xf4\x90\x80\x80\"", 2), // past U+10FFFF
            (b"[\"\xc3\xa9\xe2\x82\"]", 4),
        ];
        for &(json, column) in cases {
            assert_eq!(
                invalid(json),
                JsonXmlError::InvalidUtf8 { line: 1, column },
                "{json:?}"
            );
        }
        // Outside strings nothing but ASCII is JSON at all.
        assert!(matches!(
            invalid(b"\xc3\xa9"),
            JsonXmlError::InvalidJson {
                reason: JsonSyntax::ExpectedValue,
                ..
            }
        ));
    }

    #[test]
    fn rejects_input_over_the_size_limit() {
        let limits = JsonXmlLimits {
            max_input: 10,
            ..JsonXmlLimits::default()
        };
        assert_eq!(
            json_to_xml(b"\"123456789\"", &limits).unwrap_err(),
            JsonXmlError::TooLarge { max: 10 }
        );
        let xml = json_to_xml(b"\"12345678\"", &limits).expect("exactly the limit");
        assert_eq!(walk(&xml), s("12345678"));
        assert_eq!(
            JsonXmlLimits::default(),
            JsonXmlLimits {
                max_depth: 64,
                max_input: 16 << 20
            }
        );
    }

    // ---- depth ----

    fn nested(depth: usize, open: &str, close: &str) -> String {
        format!("{}1{}", open.repeat(depth), close.repeat(depth))
    }

    #[test]
    fn accepts_nesting_up_to_the_limit() {
        let deepest = nested(64, "[", "]");
        let mut expected = n("1");
        for _ in 0..64 {
            expected = J::Arr(vec![expected]);
        }
        assert_eq!(value(&deepest), expected);
        assert!(convert(nested(64, r#"{"a":"#, "}").as_bytes()).is_ok());
        // Scalars inside the deepest container do not count.
        assert!(convert(
            nested(63, "[", "]")
                .replace('1', "[1,\"x\",null,true]")
                .as_bytes()
        )
        .is_ok());

        let too_deep = JsonXmlError::TooDeep { max: 64 };
        assert_eq!(invalid(nested(65, "[", "]").as_bytes()), too_deep);
        assert_eq!(invalid(nested(65, r#"{"a":"#, "}").as_bytes()), too_deep);
        assert_eq!(
            invalid(nested(64, "[", "]").replace('1', "{}").as_bytes()),
            too_deep
        );
        assert_eq!(
            too_deep.to_string(),
            "json nesting is deeper than the limit of 64"
        );

        let flat = JsonXmlLimits {
            max_depth: 0,
            ..JsonXmlLimits::default()
        };
        assert_eq!(
            walk(&json_to_xml(b"1", &flat).expect("a scalar needs no depth")),
            n("1")
        );
        assert_eq!(
            json_to_xml(b"[]", &flat).unwrap_err(),
            JsonXmlError::TooDeep { max: 0 }
        );
    }

    #[test]
    fn refuses_100_000_deep_nesting_without_reading_it_all() {
        // Unclosed, so anything that read to the end would report the end of input instead.
        let started = Instant::now();
        assert_eq!(
            invalid("[".repeat(100_000).as_bytes()),
            JsonXmlError::TooDeep { max: 64 }
        );
        assert_eq!(
            invalid(r#"{"a":["#.repeat(50_000).as_bytes()),
            JsonXmlError::TooDeep { max: 64 }
        );
        // Not a timing assertion: a generous bound that only a quadratic or stuck parser misses.
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn converts_100_000_deep_nesting_without_recursion_when_allowed() {
        let limits = JsonXmlLimits {
            max_depth: 200_000,
            ..JsonXmlLimits::default()
        };
        let json = nested(100_000, r#"{"a b":["#, "]}");
        let xml = json_to_xml(json.as_bytes(), &limits).expect("within the raised limit");
        // A rebuilt value this deep would overflow the stack when dropped, so only check that
        // the document is well-formed and as deep as it should be.
        let mut reader = Reader::from_reader(&xml[..]);
        let (mut depth, mut deepest) = (0usize, 0usize);
        loop {
            match reader.read_event().expect("well-formed") {
                Event::Start(_) => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                Event::End(_) => depth -= 1,
                Event::Eof => break,
                _ => {}
            }
        }
        assert_eq!((depth, deepest), (0, 2 * 100_000 + 1));
        assert!(json_to_xml(
            json.as_bytes(),
            &JsonXmlLimits {
                max_depth: 199_999,
                ..limits
            }
        )
        .is_err());
    }

    // ---- realistic and random documents ----

    /// A deterministic xorshift generator: tests stay reproducible without a new crate. A quiet
    /// one still generates, but adds no optional whitespace or escapes when writing JSON.
    struct Rng {
        state: u64,
        quiet: bool,
    }

    impl Rng {
        fn new(seed: u64) -> Self {
            Self {
                state: seed,
                quiet: false,
            }
        }

        fn quiet(seed: u64) -> Self {
            Self {
                state: seed,
                quiet: true,
            }
        }

        fn next(&mut self) -> u64 {
            self.state ^= self.state << 13;
            self.state ^= self.state >> 7;
            self.state ^= self.state << 17;
            self.state
        }

        /// An optional variation in how JSON is written, one time in `n`.
        fn noise(&mut self, n: usize) -> bool {
            !self.quiet && self.one_in(n)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        fn one_in(&mut self, n: usize) -> bool {
            self.below(n) == 0
        }

        fn pick<T: Copy>(&mut self, items: &[T]) -> T {
            items[self.below(items.len())]
        }
    }

    const ALPHABET: &[char] = &[
        'a',
        'Z',
        '0',
        ' ',
        '<',
        '>',
        '&',
        '"',
        '\'',
        '\\',
        '/',
        '\t',
        '\n',
        '\r',
        'é',
        '日',
        '😀',
        '\u{7f}',
        '\u{85}',
        '\u{2028}',
        '\u{fffd}',
        '\u{e000}',
        ']',
        '-',
        '.',
        ':',
        '\u{10ffff}',
    ];
    const KEYS: &[&str] = &[
        "id", "name", "_", "item", "root", "type", "key", "1a", "a b", "", "xml", "XMLfoo", "a:b",
        "héllo", "日本", "-x", "x.y",
    ];

    fn random_string(rng: &mut Rng) -> String {
        (0..rng.below(12)).map(|_| rng.pick(ALPHABET)).collect()
    }

    fn random_number(rng: &mut Rng) -> String {
        let mut text = String::new();
        let digits = |rng: &mut Rng, text: &mut String, count: usize| {
            for _ in 0..count {
                text.push(char::from(b'0' + rng.below(10) as u8));
            }
        };
        if rng.one_in(3) {
            text.push('-');
        }
        if rng.one_in(4) {
            text.push('0');
        } else {
            text.push(char::from(b'1' + rng.below(9) as u8));
            let count = rng.below(7);
            digits(rng, &mut text, count);
        }
        if rng.one_in(3) {
            text.push('.');
            let count = 1 + rng.below(4);
            digits(rng, &mut text, count);
        }
        if rng.one_in(4) {
            text.push(rng.pick(&['e', 'E']));
            if rng.one_in(2) {
                text.push(rng.pick(&['+', '-']));
            }
            let count = 1 + rng.below(2);
            digits(rng, &mut text, count);
        }
        text
    }

    fn random_value(rng: &mut Rng, depth: usize) -> J {
        match rng.below(if depth >= 4 { 4 } else { 6 }) {
            0 => J::Str(random_string(rng)),
            1 => J::Num(random_number(rng)),
            2 => {
                if rng.one_in(2) {
                    J::Null
                } else {
                    J::Bool(rng.one_in(2))
                }
            }
            3 => J::Str(rng.pick(KEYS).to_owned()),
            4 => J::Arr(
                (0..rng.below(5))
                    .map(|_| random_value(rng, depth + 1))
                    .collect(),
            ),
            _ => {
                let mut members: Vec<(String, J)> = Vec::new();
                for _ in 0..rng.below(5) {
                    let mut key = if rng.one_in(2) {
                        rng.pick(KEYS).to_owned()
                    } else {
                        random_string(rng)
                    };
                    // Unique keys, so the value compares with serde_json's map.
                    while members.iter().any(|(k, _)| *k == key) {
                        key.push('_');
                    }
                    members.push((key, random_value(rng, depth + 1)));
                }
                J::Obj(members)
            }
        }
    }

    fn whitespace(rng: &mut Rng, out: &mut String) {
        if rng.noise(3) {
            out.push_str(rng.pick(&[" ", "\n", "\t", "\r\n", "  "]));
        }
    }

    fn write_string(text: &str, rng: &mut Rng, out: &mut String) {
        out.push('"');
        for c in text.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' if !rng.noise(2) => out.push_str("\\n"),
                '\r' if !rng.noise(2) => out.push_str("\\r"),
                '\t' if !rng.noise(2) => out.push_str("\\t"),
                '/' if rng.noise(2) => out.push_str("\\/"),
                c if u32::from(c) < 0x20 || rng.noise(6) => {
                    for unit in c.encode_utf16(&mut [0; 2]) {
                        if rng.one_in(2) {
                            out.push_str(&format!("\\u{unit:04x}"));
                        } else {
                            out.push_str(&format!("\\u{unit:04X}"));
                        }
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }

    /// Writes `value` as JSON, with random whitespace and escapes unless `rng` is quiet.
    fn write_json(value: &J, rng: &mut Rng, out: &mut String) {
        whitespace(rng, out);
        match value {
            J::Null => out.push_str("null"),
            J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            J::Num(text) => out.push_str(text),
            J::Str(text) => write_string(text, rng, out),
            J::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_json(item, rng, out);
                }
                whitespace(rng, out);
                out.push(']');
            }
            J::Obj(members) => {
                out.push('{');
                for (i, (key, item)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    whitespace(rng, out);
                    write_string(key, rng, out);
                    whitespace(rng, out);
                    out.push(':');
                    write_json(item, rng, out);
                }
                whitespace(rng, out);
                out.push('}');
            }
        }
        whitespace(rng, out);
    }

    fn to_serde(value: &J) -> serde_json::Value {
        match value {
            J::Null => serde_json::Value::Null,
            J::Bool(b) => serde_json::Value::Bool(*b),
            J::Num(text) => serde_json::from_str(text).expect("a JSON number"),
            J::Str(text) => serde_json::Value::String(text.clone()),
            J::Arr(items) => items.iter().map(to_serde).collect(),
            J::Obj(members) => members
                .iter()
                .map(|(k, v)| (k.clone(), to_serde(v)))
                .collect(),
        }
    }

    #[test]
    fn random_documents_always_convert_to_parsable_xml() {
        let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15);
        for _ in 0..400 {
            let expected = random_value(&mut rng, 0);
            let mut json = String::new();
            write_json(&expected, &mut rng, &mut json);
            let (_, rebuilt) = convert(json.as_bytes()).unwrap_or_else(|e| panic!("{json:?}: {e}"));
            assert_eq!(rebuilt, expected, "{json}");
            // And independently of the generator: serde_json reads the same value.
            let oracle: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
            assert_eq!(to_serde(&rebuilt), oracle, "{json}");
        }
    }

    /// Broken documents: accepted exactly when serde_json accepts them (save characters XML
    /// cannot carry), and whatever is accepted still converts to parsable XML.
    #[test]
    fn mutated_documents_agree_with_serde_json() {
        const BYTES: &[u8] = b"\"\\,:[]{}0-.eE+ tnu'\x00\x1f\x7f\xff\xc3\xa9\xef\xbf";
        let mut rng = Rng::new(0x2545_F491_4F6C_DD1D);
        let (mut accepted, mut rejected) = (0, 0);
        for _ in 0..2_000 {
            let mut json = String::new();
            let value = random_value(&mut rng, 1);
            write_json(&value, &mut rng, &mut json);
            let mut bytes = json.into_bytes();
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(bytes.len() + 1);
                match rng.below(3) {
                    0 if at < bytes.len() => bytes[at] = rng.pick(BYTES),
                    1 if at < bytes.len() => {
                        bytes.remove(at);
                    }
                    _ => bytes.insert(at, rng.pick(BYTES)),
                }
            }
            let oracle = serde_json::from_slice::<serde_json::Value>(&bytes);
            match convert(&bytes) {
                Ok(_) => {
                    accepted += 1;
                    if let Err(e) = oracle {
                        assert!(
                            e.to_string().contains("out of range"),
                            "{bytes:?}: serde_json says {e}"
                        );
                    }
                }
                Err(JsonXmlError::InvalidCharacter { .. }) => rejected += 1,
                Err(e @ (JsonXmlError::InvalidJson { .. } | JsonXmlError::InvalidUtf8 { .. })) => {
                    rejected += 1;
                    assert!(
                        oracle.is_err(),
                        "{:?}: {e}, but serde_json accepts it",
                        String::from_utf8_lossy(&bytes)
                    );
                }
                Err(e) => panic!("{bytes:?}: {e}"),
            }
        }
        // Both outcomes are exercised, or the comparison proves little.
        assert!(
            accepted > 100 && rejected > 100,
            "accepted {accepted}, rejected {rejected}"
        );
    }

    /// An array of user records, at least `size` bytes of compact JSON.
    fn realistic(size: usize) -> (String, J) {
        let mut records = Vec::new();
        let mut json = String::from("[");
        let mut rng = Rng::quiet(42);
        for i in 0.. {
            let record = obj(&[
                ("id", n(&i.to_string())),
                (
                    "uuid",
                    s(&format!("{:016x}-{:08x}", rng.next(), rng.next() as u32)),
                ),
                ("name", s(&format!("User {i}"))),
                ("email", s(&format!("user{i}@example.com"))),
                ("active", J::Bool(i % 3 != 0)),
                (
                    "score",
                    n(&format!("{}.{}", rng.below(1000), rng.below(100))),
                ),
                ("tags", J::Arr(vec![s("alpha"), s("beta"), s("gamma")])),
                (
                    "address",
                    obj(&[
                        ("street", s(&format!("{} Main St", rng.below(9999)))),
                        ("city", s("Springfield")),
                        ("zip", s("01234")),
                        (
                            "geo",
                            obj(&[("lat", n("-33.8688")), ("lng", n("151.2093"))]),
                        ),
                    ]),
                ),
                ("manager", J::Null),
                (
                    "bio",
                    s("Likes <b>bold</b> & \"quotes\" — café 日本 😀\nSecond line"),
                ),
                ("created-at", s("2024-05-01T12:00:00Z")),
            ]);
            if i > 0 {
                json.push(',');
            }
            write_json(&record, &mut Rng::quiet(1), &mut json);
            records.push(record);
            if json.len() + 1 >= size {
                break;
            }
        }
        json.push(']');
        (json, J::Arr(records))
    }

    #[test]
    fn converts_a_1_mib_document() {
        let (json, expected) = realistic(1 << 20);
        assert!(json.len() >= 1 << 20);
        let (xml, rebuilt) = convert(json.as_bytes()).expect("valid document");
        assert_eq!(rebuilt, expected);
        assert!(xml.len() > json.len());
    }
}
