//! Records the raw batches a source plugin emits, exactly as the host receives them through the
//! plugin ABI (before clock conversion, re-numbering or correlation), into a batch-stream file:
//! `(length: u32le, batch: length bytes)*`.
//!
//! ```text
//! cargo run -p xpuprof-core --example record_batches -- <plugin-dir> <source> <out-file> [key=integer]...
//! ```
//! `tests/fixtures/model/make.sh` uses it to freeze the scripted source's batches as a fixture.

use std::path::PathBuf;
use std::sync::mpsc;

use anyhow::{bail, Context, Result};
use xpuprof_core::host::{Instance, Registry, SearchPath};
use xpuprof_core::session::{create_args, session_table};
use xpuprof_sdk::PluginKind;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, source, out, rest @ ..] = args.as_slice() else {
        bail!("usage: record_batches <plugin-dir> <source> <out-file> [key=integer]...");
    };
    let reg = Registry::discover(&SearchPath::new(&[PathBuf::from(dir)], None, &[]));
    let plugin = reg
        .find(PluginKind::Source, source)
        .with_context(|| format!("failed to find source plugin {source} in {dir}"))?;
    let mut table = toml::Table::new();
    for kv in rest {
        let (k, v) =
            kv.split_once('=').with_context(|| format!("failed to parse {kv}: expected key=integer"))?;
        let v: i64 = v.parse().with_context(|| format!("failed to parse {kv}: expected an integer value"))?;
        table.insert(k.to_owned(), toml::Value::Integer(v));
    }
    let session = session_table(std::path::Path::new("."), &[], &[], &[], 0, 0);
    let (tx, rx) = mpsc::sync_channel(1024);
    let mut inst = Instance::create(plugin, &create_args(table, &session), 0, Some(tx))
        .map_err(|e| anyhow::anyhow!("failed to create source {source}: {e}"))?;
    inst.start(1).map_err(|e| anyhow::anyhow!("failed to start source {source}: {e}"))?;
    inst.stop().map_err(|e| anyhow::anyhow!("failed to stop source {source}: {e}"))?;
    drop(inst);
    let mut file = Vec::new();
    let mut batches = 0;
    for b in rx.iter() {
        file.extend_from_slice(&(b.bytes.len() as u32).to_le_bytes());
        file.extend_from_slice(&b.bytes);
        batches += 1;
    }
    std::fs::write(out, &file).with_context(|| format!("failed to write {out}"))?;
    eprintln!("wrote {batches} batches, {} bytes, to {out}", file.len());
    Ok(())
}
