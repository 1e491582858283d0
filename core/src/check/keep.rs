//! `check-plugin --keep DIR`: what the check produced, kept for the author to read. For a
//! source, the records it emitted in order: `records.jsonl` (the dump sink's JSON lines) and
//! `records.bin` (the batches as emitted, the SDK's record encoding). For a sink, the records it
//! was given (`input.jsonl`) and the files it wrote (`outputs/`).

use std::io::Write;
use std::path::Path;

use xpuprof_sdk::codec::Decoder;
use xpuprof_toolbox::json_lines;

use super::report::Report;

const RULE: &str = "the check's records and outputs are kept";

/// Keeps a source's `batches` in `dir`.
pub fn source(dir: &Path, batches: &[Vec<u8>], report: &mut Report) {
    let r = (|| {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("records.bin"), batches.concat())?;
        lines(&dir.join("records.jsonl"), batches)
    })();
    done(dir, r, "records.jsonl, records.bin", report);
}

/// Keeps a sink's input `batches` and the files it wrote in `out` in `dir`.
pub fn sink(dir: &Path, batches: &[Vec<u8>], out: &Path, report: &mut Report) {
    let r = (|| {
        std::fs::create_dir_all(dir)?;
        let n = lines(&dir.join("input.jsonl"), batches)?;
        copy_tree(out, &dir.join("outputs"))?;
        Ok(n)
    })();
    done(dir, r, "input.jsonl, outputs/", report);
}

fn done(dir: &Path, r: std::io::Result<u64>, what: &str, report: &mut Report) {
    match r {
        Ok(n) => report.pass(RULE, format!("{} ({what}; {n} records)", dir.display())),
        Err(e) => report.warn(RULE, format!("failed to keep them in {}: {e}", dir.display())),
    }
}

/// Writes the records of `batches` as JSON lines to `path`; returns how many.
fn lines(path: &Path, batches: &[Vec<u8>]) -> std::io::Result<u64> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut n = 0;
    for b in batches {
        for r in Decoder::new(b).flatten() {
            writeln!(w, "{}", json_lines::record_line(&r))?;
            n += 1;
        }
    }
    w.flush()?;
    Ok(n)
}

/// Copies the files under `from` to `to` (folders recreated, links not followed).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let kind = e.file_type()?;
        if kind.is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()))?;
        } else if kind.is_file() {
            std::fs::copy(e.path(), to.join(e.file_name()))?;
        }
    }
    Ok(())
}
