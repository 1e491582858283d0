//! Records as JSON lines, one record per line, definitions included: what the `dump` sink
//! writes, `xpuprof decode-agent-dump` prints and `xpuprof check-plugin --keep` keeps, so a
//! plugin author reads what a source emitted (the OpenTelemetry Collector's `debug` exporter,
//! Fluent Bit's `stdout`).
//!
//! A line is the record's kind and its fields: `{"record":"ApiCall","pid":42,"name":3,...}`. Ids
//! are plain numbers (`StrId(3)` is `3`), `None` is `null`, `Some(x)` is `x`, enum values are
//! their names (`"Kernel"`), non-finite floats `null`.
//!
//! The fields come from the records' `Debug` form, which the model derives from its one schema:
//! the SDK's model has no serde (the SDK depends on almost nothing), and a field added to the
//! schema appears here without a change. A form this reader does not follow is kept whole as
//! `{"record":...,"debug":"..."}` rather than lost.

use std::fmt::Write as _;

use xpuprof_sdk::model::Record;

/// The record's kind as the model names it (`ApiCall`, `Str`, `DeviceOp`...).
pub fn kind(r: &Record) -> &'static str {
    Record::tags().iter().find(|(t, _)| *t == r.tag()).map_or("Unknown", |(_, n)| n)
}

/// One record as one line of JSON, without the newline.
pub fn record_line(r: &Record) -> String {
    let debug = format!("{r:?}");
    let mut out = String::with_capacity(debug.len() + 16);
    write!(out, "{{\"record\":{}", quoted(kind(r))).ok();
    let mut p = Parser { s: debug.as_bytes(), at: 0 };
    // `Variant(Inner { fields })`: the fields of the inner struct.
    let mut body = String::new();
    let parsed = p.ident().is_some() && p.eat(b'(') && p.value(&mut body).is_some() && p.eat(b')');
    if parsed && p.at == p.s.len() && body.starts_with('{') && body.len() > 2 {
        out.push(',');
        out.push_str(&body[1..]);
    } else if parsed && p.at == p.s.len() && body == "{}" {
        out.push('}');
    } else {
        write!(out, ",\"debug\":{}}}", quoted(&debug)).ok();
    }
    out
}

/// `text` as a JSON string literal, quotes included (the one JSON string escaping of the
/// toolbox's users: this module, the chrome sink).
pub fn quoted(text: &str) -> String {
    let mut o = String::with_capacity(text.len() + 2);
    o.push('"');
    for c in text.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                write!(o, "\\u{:04x}", c as u32).ok();
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A reader of Rust's `Debug` form (structs, tuples, lists, strings, numbers, names).
struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while self.peek() == Some(b' ') {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_space();
        if self.peek() == Some(c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn ident(&mut self) -> Option<&str> {
        self.skip_space();
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
            self.at += 1;
        }
        (self.at > start).then(|| std::str::from_utf8(&self.s[start..self.at]).unwrap_or(""))
    }

    /// One value, written to `out` as JSON.
    fn value(&mut self, out: &mut String) -> Option<()> {
        self.skip_space();
        match self.peek()? {
            b'"' => self.text(out),
            b'[' => {
                self.at += 1;
                self.list(b']', out)
            }
            b'(' => {
                self.at += 1;
                self.list(b')', out)
            }
            b'-' | b'0'..=b'9' => self.number(out),
            _ => self.named(out),
        }
    }

    /// Values up to `close`, as a JSON array.
    fn list(&mut self, close: u8, out: &mut String) -> Option<()> {
        out.push('[');
        let mut first = true;
        while !self.eat(close) {
            if !first && !self.eat(b',') {
                return None;
            }
            if self.eat(close) {
                break;
            }
            if !first {
                out.push(',');
            }
            self.value(out)?;
            first = false;
        }
        out.push(']');
        Some(())
    }

    /// A name: a struct, a tuple struct, `Some`/`None`, a boolean or an enum value.
    fn named(&mut self, out: &mut String) -> Option<()> {
        let name = self.ident()?.to_owned();
        if self.eat(b'{') {
            out.push('{');
            let mut first = true;
            while !self.eat(b'}') {
                if !first && !self.eat(b',') {
                    return None;
                }
                if self.eat(b'}') {
                    break;
                }
                let field = self.ident()?.to_owned();
                if !self.eat(b':') {
                    return None;
                }
                if !first {
                    out.push(',');
                }
                out.push_str(&quoted(&field));
                out.push(':');
                self.value(out)?;
                first = false;
            }
            out.push('}');
            return Some(());
        }
        if self.eat(b'(') {
            let mut items = String::new();
            self.list(b')', &mut items)?;
            // A newtype (an id, `Some(x)`) is its value; a wider tuple an array.
            let inner = &items[1..items.len() - 1];
            let single = !inner.is_empty() && top_level_commas(inner) == 0;
            out.push_str(if single { inner } else { &items });
            return Some(());
        }
        match name.as_str() {
            "None" | "inf" | "NaN" => out.push_str("null"),
            "true" | "false" => out.push_str(&name),
            _ => out.push_str(&quoted(&name)),
        }
        Some(())
    }

    fn number(&mut self, out: &mut String) -> Option<()> {
        let start = self.at;
        self.at += 1;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'+')) {
            self.at += 1;
        }
        let n = std::str::from_utf8(&self.s[start..self.at]).ok()?;
        if n == "-inf" {
            out.push_str("null");
        } else if n.parse::<f64>().is_ok() {
            out.push_str(n);
        } else {
            return None;
        }
        Some(())
    }

    /// A Rust string literal, as a JSON string.
    fn text(&mut self, out: &mut String) -> Option<()> {
        self.at += 1;
        let mut bytes = Vec::new();
        loop {
            let c = self.peek()?;
            self.at += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let e = self.peek()?;
                    self.at += 1;
                    match e {
                        b'n' => bytes.push(b'\n'),
                        b'r' => bytes.push(b'\r'),
                        b't' => bytes.push(b'\t'),
                        b'0' => bytes.push(0),
                        b'u' => {
                            // `\u{1b}`
                            let close = self.s[self.at..].iter().position(|&b| b == b'}')?;
                            let hex = std::str::from_utf8(&self.s[self.at + 1..self.at + close]).ok()?;
                            let ch = char::from_u32(u32::from_str_radix(hex, 16).ok()?)?;
                            bytes.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                            self.at += close + 1;
                        }
                        other => bytes.push(other),
                    }
                }
                c => bytes.push(c),
            }
        }
        out.push_str(&quoted(&String::from_utf8_lossy(&bytes)));
        Some(())
    }
}

/// Commas of `json` outside any string, array or object.
fn top_level_commas(json: &str) -> usize {
    let (mut depth, mut in_str, mut escaped, mut n) = (0i32, false, false, 0);
    for c in json.chars() {
        if in_str {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '[' | '{' => depth += 1,
            ']' | '}' => depth -= 1,
            ',' if depth == 0 => n += 1,
            _ => {}
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use xpuprof_sdk::model::*;

    #[test]
    fn records_become_one_line_of_json_each_with_their_kind_and_fields() {
        let call = Record::ApiCall(
            ApiCall::default()
                .pid(42)
                .tid(7)
                .start(100)
                .end(200)
                .name(StrId(3))
                .correlation(Some(Correlation { backend: 9, id: 5 })),
        );
        let line = record_line(&call);
        assert!(line.starts_with("{\"record\":\"ApiCall\",\"pid\":42,\"tid\":7,"), "{line}");
        assert!(line.contains("\"name\":3"), "{line}");
        assert!(line.contains("\"correlation\":{\"backend\":9,\"id\":5}"), "{line}");
        assert!(!line.contains('\n'));
        let s = record_line(&Record::Str(StrDef::new(StrId(1), "say \"hi\"\n\u{1b}é")));
        assert!(s.starts_with("{\"record\":\"Str\",\"id\":1,\"text\":\"say \\\"hi\\\"\\n\\u001bé\""), "{s}");
        let stack = record_line(&Record::Stack(StackDef::new(StackId(2), vec![FrameId(1), FrameId(4)])));
        assert_eq!(stack, "{\"record\":\"Stack\",\"id\":2,\"frames\":[1,4]}");
        let op = record_line(&Record::DeviceOp(DeviceOp::default().kind(DeviceOpKind::Kernel)));
        assert!(op.contains("\"kind\":\"Kernel\"") && op.contains("\"launch\":null"), "{op}");
    }

    #[test]
    fn every_value_form_is_valid_json() {
        let mut out = String::new();
        let mut p = Parser { s: b"[1.5, -2, -inf, NaN, (1, 2), A { b: [], c: \"x\\u{7f}\" }]", at: 0 };
        p.value(&mut out).unwrap();
        assert_eq!(out, "[1.5,-2,null,null,[1,2],{\"b\":[],\"c\":\"x\u{7f}\"}]");
    }
}
