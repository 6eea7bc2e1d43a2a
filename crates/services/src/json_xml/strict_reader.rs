//! A strict reader of the converter's XML, for its tests and its fuzz target (compiled for
//! tests and with the `fuzzing` feature only): it parses the output with quick-xml as strictly
//! as XML 1.0 allows, checks every name and character, and rebuilds the JSON value the
//! document encodes (the mapping of docs/transform.md), so a test can compare it with the
//! input.

use quick_xml::events::{BytesStart, Event};
use quick_xml::reader::Reader;
use quick_xml::XmlVersion;

/// The declaration every document of the converter starts with.
pub const DECL: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";

/// A JSON value as the reader rebuilds it: numbers kept as text, members in order.
#[derive(Debug, Clone, PartialEq)]
pub enum J {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as written.
    Num(String),
    /// A string.
    Str(String),
    /// An array.
    Arr(Vec<J>),
    /// An object, members in document order.
    Obj(Vec<(String, J)>),
}

/// XML 1.0 §2.2 `Char`.
pub fn legal_char(c: char) -> bool {
    let u = u32::from(c);
    matches!(u, 0x9 | 0xA | 0xD)
        || (0x20..=0xD7FF).contains(&u)
        || (0xE000..=0xFFFD).contains(&u)
        || u >= 0x10000
}

/// XML 1.0 (5th edition) §2.3 `Name` without `:`, written from the spec's ranges
/// independently of the code under test.
pub fn spec_name(name: &str) -> bool {
    const START: &[(u32, u32)] = &[
        (0x41, 0x5A),
        (0x5F, 0x5F),
        (0x61, 0x7A),
        (0xC0, 0xD6),
        (0xD8, 0xF6),
        (0xF8, 0x2FF),
        (0x370, 0x37D),
        (0x37F, 0x1FFF),
        (0x200C, 0x200D),
        (0x2070, 0x218F),
        (0x2C00, 0x2FEF),
        (0x3001, 0xD7FF),
        (0xF900, 0xFDCF),
        (0xFDF0, 0xFFFD),
        (0x10000, 0xEFFFF),
    ];
    const MORE: &[(u32, u32)] = &[
        (0x2D, 0x2E),
        (0x30, 0x39),
        (0xB7, 0xB7),
        (0x300, 0x36F),
        (0x203F, 0x2040),
    ];
    let within = |c: char, ranges: &[(u32, u32)]| {
        ranges
            .iter()
            .any(|&(lo, hi)| (lo..=hi).contains(&u32::from(c)))
    };
    let mut chars = name.chars();
    chars.next().is_some_and(|c| within(c, START))
        && chars.all(|c| within(c, START) || within(c, MORE))
}

/// The documented rule for keys that are written as element names.
pub fn verbatim_key(key: &str) -> bool {
    spec_name(key) && !key.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("xml"))
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Str,
    Num,
    Bool,
    Null,
    Obj,
    Arr,
}

#[derive(Debug)]
struct Open {
    key: Option<String>,
    kind: Kind,
    text: String,
    items: Vec<J>,
    members: Vec<(String, J)>,
}

fn open_element(e: &BytesStart<'_>, parent: Option<&Open>, root_done: bool) -> Open {
    let name = std::str::from_utf8(e.name().as_ref())
        .expect("utf-8 name")
        .to_owned();
    assert!(spec_name(&name), "element name {name:?} is not an XML name");
    let mut kind = Kind::Str;
    let mut key = None;
    // `attributes()` checks quoting and duplicate attributes.
    for attr in e.attributes() {
        let attr = attr.expect("well-formed attribute");
        assert!(!attr.value.contains(&b'<'), "'<' in an attribute value");
        let value = attr
            .normalized_value(XmlVersion::Explicit1_0)
            .expect("attribute value with valid references")
            .into_owned();
        assert!(
            value.chars().all(legal_char),
            "illegal character in {value:?}"
        );
        match attr.key.as_ref() {
            b"type" => {
                kind = match value.as_str() {
                    "number" => Kind::Num,
                    "boolean" => Kind::Bool,
                    "null" => Kind::Null,
                    "object" => Kind::Obj,
                    "array" => Kind::Arr,
                    other => panic!("unknown type {other:?}"),
                }
            }
            b"key" => {
                assert_eq!(name, "_", "key attribute on <{name}>");
                assert!(
                    !verbatim_key(&value),
                    "key {value:?} should have been verbatim"
                );
                key = Some(value);
            }
            other => panic!("unexpected attribute {:?}", String::from_utf8_lossy(other)),
        }
    }
    match parent {
        None => {
            assert!(!root_done, "a second root element");
            assert_eq!(name, "root");
            assert!(key.is_none());
        }
        Some(parent) if parent.kind == Kind::Obj => {
            if key.is_none() {
                assert!(verbatim_key(&name), "key {name:?} should have been mapped");
                key = Some(name);
            }
        }
        Some(parent) if parent.kind == Kind::Arr => {
            assert_eq!(name, "item");
            assert!(key.is_none());
        }
        Some(parent) => panic!("element inside a {:?} element", parent.kind),
    }
    Open {
        key,
        kind,
        text: String::new(),
        items: Vec::new(),
        members: Vec::new(),
    }
}

fn close_element(open: Open, stack: &mut [Open], result: &mut Option<J>) {
    assert!(
        open.text.chars().all(legal_char),
        "illegal character in text"
    );
    let value = match open.kind {
        Kind::Str => J::Str(open.text),
        Kind::Num => {
            assert!(!open.text.is_empty(), "empty number");
            J::Num(open.text)
        }
        Kind::Bool => J::Bool(match open.text.as_str() {
            "true" => true,
            "false" => false,
            other => panic!("boolean {other:?}"),
        }),
        kind => {
            assert!(open.text.is_empty(), "text {:?} in a {kind:?}", open.text);
            match kind {
                Kind::Null => J::Null,
                Kind::Obj => J::Obj(open.members),
                _ => J::Arr(open.items),
            }
        }
    };
    match stack.last_mut() {
        None => *result = Some(value),
        Some(parent) if parent.kind == Kind::Obj => {
            parent.members.push((open.key.expect("member key"), value));
        }
        Some(parent) => parent.items.push(value),
    }
}

/// Reads `xml` with quick-xml plus the well-formedness checks it leaves out (names, legal
/// characters, one root, references), checks it follows the mapping and rebuilds the value.
pub fn walk(xml: &[u8]) -> J {
    assert!(xml.starts_with(DECL.as_bytes()), "no XML declaration");
    let mut reader = Reader::from_reader(xml);
    reader.config_mut().check_end_names = true;
    reader.config_mut().check_comments = true;
    let mut stack: Vec<Open> = Vec::new();
    let mut result = None;
    let mut declared = false;
    loop {
        let event = match reader.read_event() {
            Ok(event) => event,
            Err(e) => panic!("not well-formed at byte {}: {e}", reader.error_position()),
        };
        match event {
            Event::Decl(decl) => {
                assert!(!declared && stack.is_empty() && result.is_none());
                assert_eq!(&*decl.version().expect("version"), b"1.0");
                assert_eq!(
                    &*decl.encoding().expect("encoding").expect("encoding"),
                    b"UTF-8"
                );
                declared = true;
            }
            Event::Start(e) => {
                let open = open_element(&e, stack.last(), result.is_some());
                stack.push(open);
            }
            Event::Empty(e) => {
                let open = open_element(&e, stack.last(), result.is_some());
                close_element(open, &mut stack, &mut result);
            }
            Event::End(_) => {
                let open = stack.pop().expect("end tag without start");
                close_element(open, &mut stack, &mut result);
            }
            Event::Text(text) => {
                assert!(!text.windows(3).any(|w| w == b"]]>"), "']]>' in text");
                let content = text.xml10_content().expect("utf-8 text");
                match stack.last_mut() {
                    Some(open) => open.text.push_str(&content),
                    None => assert!(content.trim().is_empty(), "text outside the root"),
                }
            }
            Event::GeneralRef(reference) => {
                let c = if reference.is_char_ref() {
                    reference
                        .resolve_char_ref()
                        .expect("char ref")
                        .expect("char ref")
                } else {
                    match &*reference.decode().expect("utf-8 reference") {
                        "lt" => '<',
                        "gt" => '>',
                        "amp" => '&',
                        "quot" => '"',
                        "apos" => '\'',
                        other => panic!("undeclared entity &{other};"),
                    }
                };
                stack
                    .last_mut()
                    .expect("reference outside the root")
                    .text
                    .push(c);
            }
            Event::Eof => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(declared);
    assert!(stack.is_empty(), "unclosed elements");
    result.expect("no root element")
}
