//! The [`Sink`] implementation: aggregate records as they stream in, write `summary.txt` and
//! `summary.json` at the end, and print the digest.

use std::io::Write;
use std::path::{Path, PathBuf};

use xpuprof_sdk::prelude::*;

use crate::collect::Collector;
use crate::config::{self, SummaryConfig};
use crate::report::Summary;
use crate::{assemble, digest, text};

/// The `summary` sink.
#[derive(Debug)]
pub struct SummarySink {
    collector: Collector,
    session: SessionInfo,
    log: Logger,
}

impl SummarySink {
    /// A sink with these settings (what `create` builds; also for tests and benches).
    pub fn new(cfg: SummaryConfig, session: SessionInfo, log: Logger) -> Self {
        Self { collector: Collector::new(cfg), session, log }
    }

    /// Adds records (same as [`Sink::consume`], without the `Result`).
    #[inline]
    pub fn add(&mut self, records: &[Record]) {
        for r in records {
            self.collector.add(r);
        }
    }

    /// Builds the report from everything consumed so far; call once.
    pub fn report(&mut self) -> Summary {
        assemble::summary(&mut self.collector, &self.session)
    }

    /// Writes both files into `dir` and returns their paths.
    pub fn write(&self, s: &Summary, dir: &Path) -> PluginResult<Vec<PathBuf>> {
        std::fs::create_dir_all(dir).map_err(|e| {
            PluginError::new(format!("failed to create output directory {}: {e}", dir.display()))
        })?;
        let txt = dir.join("summary.txt");
        let json = dir.join("summary.json");
        let mut body = serde_json::to_string_pretty(s)
            .map_err(|e| PluginError::new(format!("failed to encode summary.json: {e}")))?;
        body.push('\n');
        write_file(&txt, &text::render(s, self.collector.cfg.text_rows))?;
        write_file(&json, &body)?;
        Ok(vec![txt, json])
    }
}

fn write_file(path: &Path, body: &str) -> PluginResult<()> {
    std::fs::write(path, body)
        .map_err(|e| PluginError::new(format!("failed to write {}: {e}", path.display())))
}

impl Sink for SummarySink {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "summary",
            version: env!("CARGO_PKG_VERSION"),
            description: "statistics report: API, kernels, memory, devices, threads, losses (summary.txt, summary.json)",
            config_keys: config::keys(),
            capabilities: vec![],
        }
    }

    fn create(ctx: CreateContext) -> PluginResult<Self> {
        let cfg = SummaryConfig::from_plugin(&ctx.config)?;
        Ok(Self::new(cfg, ctx.session, ctx.log))
    }

    fn consume(&mut self, records: &[Record]) -> PluginResult<()> {
        self.add(records);
        Ok(())
    }

    fn finish(&mut self) -> PluginResult<Vec<PathBuf>> {
        let summary = self.report();
        let files = self.write(&summary, &self.session.output_dir.clone())?;
        if self.collector.cfg.digest {
            // Best effort: a closed stderr (`xpuprof … 2>&1 | head -1`) must not fail the sink.
            let mut err = std::io::stderr().lock();
            for line in digest::lines(&summary, &files) {
                let _ = writeln!(err, "{line}");
            }
        }
        self.log.debug("summary written");
        Ok(files)
    }
}
