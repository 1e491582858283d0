//! `docs/formats.md`'s record tables, written from the schema: the test fails when the committed
//! text differs from what the schema says (`XPUPROF_BLESS=1` rewrites it), so the batch codec's
//! contract for writers in other languages cannot drift from the code.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::schema::{RECORDS, SCHEMA};

/// A struct of the schema, as data.
#[derive(Debug)]
pub(crate) struct StructInfo {
    pub name: &'static str,
    pub fields: &'static [FieldInfo],
}

/// A field of the schema, as data (the tokens of its schema line).
#[derive(Debug)]
pub(crate) struct FieldInfo {
    pub name: &'static str,
    pub ty: &'static str,
    /// The positional encoding (`var`, `dur start`, `group flags 0 [a b]`), empty for none.
    pub pos: &'static str,
    /// The keyed number, empty for none.
    pub keyed: &'static str,
    /// The keyed wire type.
    pub wire: u8,
}

const BEGIN: &str = "<!-- BEGIN record tables: generated from sdk/src/model/schema.rs, rewritten by \
                     XPUPROF_BLESS=1 cargo test -p xpuprof-sdk formats_doc -->";
const END: &str = "<!-- END record tables -->";

/// How a positional field is written.
fn positional(f: &FieldInfo) -> String {
    let words: Vec<&str> = f.pos.split_whitespace().collect();
    match words.as_slice() {
        ["var"] => "varint".into(),
        ["var3"] => "3 × varint".into(),
        ["byte"] => "u8".into(),
        ["svar"] => "zigzag varint".into(),
        ["dur", start] => format!("varint: {} − {start} (saturating)", f.name),
        ["bytes"] => "len:varint + bytes".into(),
        ["f64"] => "f64 (8 bytes LE)".into(),
        ["ids"] => "count:varint + count × varint".into(),
        ["corr"] => "backend+1:varint id:varint (0 is malformed)".into(),
        ["opt_corr"] => "0, or backend+1:varint id:varint".into(),
        ["opt_ext"] => "0, or kind+1:varint id:varint".into(),
        ["group", _, bit] => format!("if presence bit {bit}: the group's positional fields"),
        ["group", _, bit, rest @ ..] => {
            let members: Vec<&str> = rest.iter().map(|w| w.trim_matches(['[', ']'])).collect();
            let bits: Vec<String> = (0..members.len()).map(|i| i.to_string()).collect();
            format!(
                "u8 presence bits ({} = bits {}), then if bit {bit}: the group's positional fields",
                members.join(", "),
                bits.join(", ")
            )
        }
        other => panic!("positional encoding {other:?} of `{}` has no description here", f.name),
    }
}

/// What a keyed field's value is.
fn keyed(f: &FieldInfo) -> String {
    let ty: String = f.ty.split_whitespace().collect();
    let nested = ty.strip_prefix("Option<").and_then(|t| t.strip_suffix('>'));
    if !f.pos.is_empty() {
        return "wire type 2: the group's keyed fields, written only when there are any".into();
    }
    match (ty.as_str(), nested) {
        ("String", _) => "wire type 2: len:varint + UTF-8".into(),
        (_, Some(s)) if SCHEMA.iter().any(|i| i.name == s) => format!("wire type 2: a `{s}`"),
        _ => format!("wire type {}", f.wire),
    }
}

/// The generated part of the "Batch codec" section.
pub(crate) fn render() -> String {
    let mut o = String::new();
    o.push_str("| tag | record | struct |\n|---|---|---|\n");
    for (tag, name, s) in RECORDS {
        let _ = writeln!(o, "| {tag} | `{name}` | `{s}` |");
    }
    o.push('\n');
    for s in SCHEMA {
        let _ = writeln!(o, "- **`{}`**", s.name);
        let pos: Vec<String> = s
            .fields
            .iter()
            .filter(|f| !f.pos.is_empty())
            .map(|f| format!("`{}` {}", f.name, positional(f)))
            .collect();
        if !pos.is_empty() {
            let _ = writeln!(o, "  positional: {}.", pos.join("; "));
        }
        let keyed: Vec<String> = s
            .fields
            .iter()
            .filter(|f| !f.keyed.is_empty())
            .map(|f| format!("{} `{}` ({})", f.keyed, f.name, keyed(f)))
            .collect();
        if !keyed.is_empty() {
            let _ = writeln!(o, "  keyed: {}.", keyed.join("; "));
        }
    }
    o
}

fn formats_md() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/formats.md")
}

#[test]
fn formats_doc_record_tables_are_the_schema() {
    let path = formats_md();
    let Ok(text) = std::fs::read_to_string(&path) else {
        // The SDK packaged on its own (the install layout) ships without the repository's docs.
        assert!(std::env::var_os("CI").is_none(), "failed to read {}", path.display());
        eprintln!("SKIPPED: {} is not here (the SDK outside its repository)", path.display());
        return;
    };
    let (Some(b), Some(e)) = (text.find(BEGIN), text.find(END)) else {
        panic!("{} lacks the markers {BEGIN} ... {END}", path.display());
    };
    let start = b + BEGIN.len() + 1;
    let want = render();
    if text[start..e] == want {
        return;
    }
    if std::env::var_os("XPUPROF_BLESS").is_some() {
        let new = format!("{}{want}{}", &text[..start], &text[e..]);
        std::fs::write(&path, new).unwrap_or_else(|err| panic!("failed to write {}: {err}", path.display()));
        return;
    }
    panic!(
        "docs/formats.md's record tables differ from sdk/src/model/schema.rs; rewrite them with \
         XPUPROF_BLESS=1 cargo test -p xpuprof-sdk formats_doc\n--- generated ---\n{want}"
    );
}

#[test]
fn every_positional_encoding_and_field_type_is_described() {
    let text = render();
    assert!(text.contains("| 17 | `DeviceOp` | `DeviceOp` |"), "{text}");
    assert!(text.contains("`end` varint: end − start (saturating)"), "{text}");
    assert!(text.contains("7 `recorded` (wire type 2: a `LaunchRef`)"), "{text}");
}
