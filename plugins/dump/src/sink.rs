//! The `dump` sink: one JSON line per record, written as the records arrive.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use xpuprof_sdk::prelude::*;
use xpuprof_toolbox::json_lines;

use crate::DumpConfig;

/// The `dump` sink plugin.
#[derive(Debug)]
pub struct DumpSink {
    out: Option<BufWriter<File>>,
    path: PathBuf,
    /// Most records written (0: all).
    limit: u64,
    written: u64,
    /// Records past the limit.
    left_out: u64,
    log: Logger,
}

impl DumpSink {
    /// A sink writing `file` in `out_dir`, at most `limit` records (0: all).
    pub fn new(out_dir: &std::path::Path, file: &str, limit: u64, log: Logger) -> PluginResult<Self> {
        let (f, path) = xpuprof_sdk::output::create_file(out_dir, file)?;
        let out = Some(BufWriter::with_capacity(256 * 1024, f));
        Ok(Self { out, path, limit, written: 0, left_out: 0, log })
    }

    fn fail(&self, e: std::io::Error) -> PluginError {
        PluginError::new(format!("failed to write {}: {e}", self.path.display()))
    }
}

impl Sink for DumpSink {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "dump",
            version: env!("CARGO_PKG_VERSION"),
            description:
                "every record as a JSON line (records.jsonl), definitions included: what the sources emitted",
            config_keys: DumpConfig::schema().into_keys(),
            capabilities: vec![],
        }
    }

    fn create(ctx: CreateContext) -> PluginResult<Self> {
        let c: DumpConfig = ctx.config.typed()?;
        Self::new(&ctx.session.output_dir, &c.file, c.limit, ctx.log)
    }

    fn consume(&mut self, records: &[Record]) -> PluginResult<()> {
        let Some(out) = self.out.as_mut() else { return Ok(()) };
        let mut failed = None;
        for r in records {
            if self.limit != 0 && self.written >= self.limit {
                self.left_out += 1;
                continue;
            }
            if let Err(e) = writeln!(out, "{}", json_lines::record_line(r)) {
                failed = Some(e);
                break;
            }
            self.written += 1;
        }
        match failed {
            Some(e) => Err(self.fail(e)),
            None => Ok(()),
        }
    }

    fn finish(&mut self) -> PluginResult<Vec<PathBuf>> {
        if let Some(mut out) = self.out.take() {
            out.flush().map_err(|e| self.fail(e))?;
        }
        if self.left_out > 0 {
            self.log.warn(&format!(
                "{} records past the limit of {} were not written to {} (raise [sink.dump] limit, 0 for all)",
                self.left_out,
                self.limit,
                self.path.display()
            ));
        }
        Ok(vec![self.path.clone()])
    }
}
