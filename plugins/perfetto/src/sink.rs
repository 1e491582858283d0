//! The `perfetto` sink: streams `trace.perfetto-trace` while the session runs.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use xpuprof_sdk::prelude::*;

use crate::writer::{TraceOptions, TraceStats, TraceWriter};

/// The file the sink writes in the output directory.
pub const FILE_NAME: &str = "trace.perfetto-trace";

/// The `perfetto` sink plugin.
#[derive(Debug)]
pub struct PerfettoSink {
    writer: Option<TraceWriter<BufWriter<File>>>,
    path: PathBuf,
    log: Logger,
    stats: TraceStats,
}

impl PerfettoSink {
    /// A sink writing `<session.output_dir>/trace.perfetto-trace`.
    pub fn new(opts: TraceOptions, session: &SessionInfo, log: Logger) -> PluginResult<Self> {
        let (file, path) = xpuprof_sdk::output::create_file(&session.output_dir, FILE_NAME)?;
        let writer = TraceWriter::new(BufWriter::with_capacity(256 * 1024, file), opts);
        Ok(Self { writer: Some(writer), path, log, stats: TraceStats::default() })
    }

    /// What the finished trace holds (zero before [`Sink::finish`]).
    pub fn stats(&self) -> TraceStats {
        self.stats
    }

    fn fail(&self, e: std::io::Error) -> PluginError {
        PluginError::new(format!("failed to write {}: {e}", self.path.display()))
    }
}

impl Sink for PerfettoSink {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "perfetto",
            version: env!("CARGO_PKG_VERSION"),
            description: "Perfetto's native protobuf trace (trace.perfetto-trace) for ui.perfetto.dev and trace processor",
            config_keys: crate::config::keys(),
            capabilities: vec![],
        }
    }

    fn create(ctx: CreateContext) -> PluginResult<Self> {
        let opts = crate::config::options(&ctx.config)?;
        Self::new(opts, &ctx.session, ctx.log)
    }

    fn consume(&mut self, records: &[Record]) -> PluginResult<()> {
        let Some(w) = self.writer.as_mut() else {
            return Err(PluginError::new(format!(
                "failed to write {FILE_NAME}: the sink was already finished"
            )));
        };
        let mut result = Ok(());
        for r in records {
            if let Err(e) = w.record(r) {
                result = Err(e);
                break;
            }
        }
        result.map_err(|e| self.fail(e))
    }

    fn finish(&mut self) -> PluginResult<Vec<PathBuf>> {
        let Some(w) = self.writer.take() else {
            return Ok(vec![self.path.clone()]);
        };
        let (_, stats) = w.finish().map_err(|e| self.fail(e))?;
        self.stats = stats;
        if stats.overlaps > 0 {
            self.log.warn(&format!(
                "{} device operations overlapped on every lane of their stream",
                stats.overlaps
            ));
        }
        if stats.late > 0 {
            self.log.warn(&format!(
                "{} device operations arrived after later work of their stream was placed (beyond the \
                 reorder window of {} operations per stream): placed where they fit, perhaps on a lane \
                 of their own",
                stats.late,
                xpuprof_toolbox::timeline::WINDOW
            ));
        }
        if stats.flows_not_drawn > 0 {
            self.log.info(&format!(
                "{} launch ends drawn without a flow: their call is not in the trace, or its correlation \
                 id was used again or does not fit a flow id",
                stats.flows_not_drawn
            ));
        }
        self.log.info(&format!(
            "{}: {} slices, {} flows, {} CPU samples, {} bytes ({} before compression)",
            self.path.display(),
            stats.slices,
            stats.flows,
            stats.samples,
            stats.file_bytes,
            stats.raw_bytes
        ));
        Ok(vec![self.path.clone()])
    }
}
