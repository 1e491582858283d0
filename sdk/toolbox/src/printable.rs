//! Text from the profiled program made safe to print: symbol, kernel, thread and process names
//! are the target's bytes, and a name holding an escape sequence or a line break would drive the
//! terminal that shows xpuprof's digest (`\x1b]0;...`, cursor moves, a forged line) or break a
//! table. Every printer of such text (the summary's stderr digest and `summary.txt`, `xpuprof
//! diff`'s text and Markdown tables) passes it through [`escape`]; Markdown table cells through
//! [`markdown_cell`]. Machine formats (JSON, protobuf) keep the text whole: their encoders escape.

use std::borrow::Cow;

/// True for a character printed escaped: control characters (C0, DEL, C1) and the Unicode
/// direction controls that reorder what a terminal or viewer shows (the "Trojan Source" set).
fn unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every control and direction-control character written as an escape: `\n`,
/// `\r`, `\t`, else `\u{1b}` (Rust's notation). Text without one is returned as it is, so
/// ordinary names print unchanged; the result holds no control character.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if unsafe_char(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `text` for a Markdown table cell shown as code (between backticks): [`escape`]d, `|` written
/// `\|` (it would end the cell even inside a code span) and backticks written `'` (one would
/// end the code span).
pub fn markdown_cell(text: &str) -> String {
    escape(text).replace('|', "\\|").replace('`', "'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_names_are_unchanged() {
        for name in ["main", "at::native::gemm<float>(int, float*)", "forward (model.py:12)", "Grüße 世界"]
        {
            assert!(matches!(escape(name), Cow::Borrowed(n) if n == name));
        }
    }

    #[test]
    fn escapes_and_line_breaks_are_written_out() {
        let evil = "f\x1b]0;pwned\x07\nforged line\r\t\u{202e}x\u{9b}";
        let shown = escape(evil);
        assert_eq!(shown, "f\\u{1b}]0;pwned\\u{7}\\nforged line\\r\\t\\u{202e}x\\u{9b}");
        assert!(!shown.chars().any(unsafe_char));
        assert_eq!(escape(&shown), shown, "escaping twice changes nothing");
    }

    #[test]
    fn markdown_cells_escape_pipes_and_backticks() {
        assert_eq!(markdown_cell("a|b`c\x1bd"), "a\\|b'c\\u{1b}d");
    }
}
