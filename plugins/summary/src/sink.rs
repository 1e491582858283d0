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
    opened: Vec<(PathBuf, std::fs::File)>,
}

impl SummarySink {
    /// A sink with these settings (what `create` builds; also for tests and benches).
    pub fn new(cfg: SummaryConfig, session: SessionInfo, log: Logger) -> Self {
        Self { collector: Collector::new(cfg), session, log, opened: Vec::new() }
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

    /// Creates both files in `dir` now (before the target runs); [`SummarySink::write`] fills them.
    pub fn open_outputs(&mut self, dir: &Path) -> PluginResult<()> {
        for name in FILES {
            let (file, path) = xpuprof_sdk::output::create_file(dir, name)?;
            self.opened.push((path, file));
        }
        Ok(())
    }

    /// Writes both files into `dir` (the ones [`SummarySink::open_outputs`] created, when it
    /// was called) and returns their paths.
    pub fn write(&mut self, s: &Summary, dir: &Path) -> PluginResult<Vec<PathBuf>> {
        if self.opened.is_empty() {
            self.open_outputs(dir)?;
        }
        let mut json = serde_json::to_string_pretty(s)
            .map_err(|e| PluginError::new(format!("failed to encode summary.json: {e}")))?;
        json.push('\n');
        let bodies = [text::render(s, self.collector.cfg.text_rows), json];
        let mut files = Vec::new();
        for ((path, mut file), body) in std::mem::take(&mut self.opened).into_iter().zip(bodies) {
            file.write_all(body.as_bytes())
                .map_err(|e| PluginError::new(format!("failed to write {}: {e}", path.display())))?;
            files.push(path);
        }
        Ok(files)
    }
}

/// The files written, in the order [`SummarySink::write`] fills them.
const FILES: [&str; 2] = ["summary.txt", "summary.json"];

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
        let dir = ctx.session.output_dir.clone();
        let mut sink = Self::new(cfg, ctx.session, ctx.log);
        sink.open_outputs(&dir)?;
        Ok(sink)
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
