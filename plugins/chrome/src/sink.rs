//! The `chrome` sink: streams `trace.json` while the session runs.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use xpuprof_sdk::prelude::*;

use crate::writer::{TraceOptions, TraceWriter};

xpuprof_sdk::plugin_config! {
    /// The `[sink.chrome]` table.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ChromeConfig {
        /// write CPU samples as instant events
        pub cpu_samples: bool = true;
        /// warn when trace.json grows past this many MB (chrome://tracing refuses files past about 256 MB)
        pub warn_mb: u64 = 256;
    }
}

/// The `chrome` sink plugin.
#[derive(Debug)]
pub struct ChromeSink {
    writer: Option<TraceWriter<BufWriter<File>>>,
    path: PathBuf,
    session: SessionInfo,
    log: Logger,
    warn_bytes: u64,
    warned: bool,
}

impl ChromeSink {
    /// A sink writing `<session.output_dir>/trace.json`, warning once the file passes
    /// `warn_bytes`.
    pub fn new(opts: TraceOptions, session: SessionInfo, warn_bytes: u64, log: Logger) -> PluginResult<Self> {
        let (file, path) = xpuprof_sdk::output::create_file(&session.output_dir, "trace.json")?;
        let writer = TraceWriter::new(BufWriter::with_capacity(256 * 1024, file), opts)
            .map_err(|e| PluginError::new(format!("failed to write {}: {e}", path.display())))?;
        Ok(Self { writer: Some(writer), path, session, log, warn_bytes, warned: false })
    }

    /// Whether the file passed the warning size and the user was told.
    pub fn size_warning_given(&self) -> bool {
        self.warned
    }

    fn fail(&self, e: std::io::Error) -> PluginError {
        PluginError::new(format!("failed to write {}: {e}", self.path.display()))
    }

    fn check_size(&mut self, bytes: u64) {
        if !self.warned && bytes > self.warn_bytes {
            self.warned = true;
            self.log.warn(&size_warning(&self.path, self.warn_bytes >> 20));
        }
    }
}

/// What the user is told once trace.json passes `warn_mb`.
pub fn size_warning(path: &std::path::Path, mb: u64) -> String {
    format!(
        "{} passed {mb} MB: chrome://tracing cannot open files this large and JSON costs ~440 bytes \
         per kernel launch; record with `--sink perfetto` instead (Perfetto's native format, ~30 \
         bytes per launch), or convert an archive with `xpuprof report <dir> --sink perfetto`",
        path.display()
    )
}

impl Sink for ChromeSink {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "chrome",
            version: env!("CARGO_PKG_VERSION"),
            description: "Chrome Trace Event JSON (trace.json) for Perfetto and chrome://tracing",
            config_keys: ChromeConfig::schema().into_keys(),
            capabilities: vec![],
        }
    }

    fn create(ctx: CreateContext) -> PluginResult<Self> {
        let c: ChromeConfig = ctx.config.typed()?;
        let opts = TraceOptions { cpu_samples: c.cpu_samples };
        Self::new(opts, ctx.session, c.warn_mb << 20, ctx.log)
    }

    fn consume(&mut self, records: &[Record]) -> PluginResult<()> {
        let Some(w) = self.writer.as_mut() else {
            return Err(PluginError::new("failed to write trace.json: the sink was already finished"));
        };
        let mut result = Ok(());
        for r in records {
            if let Err(e) = w.record(r) {
                result = Err(e);
                break;
            }
        }
        let bytes = w.bytes();
        result.map_err(|e| self.fail(e))?;
        self.check_size(bytes);
        Ok(())
    }

    fn finish(&mut self) -> PluginResult<Vec<PathBuf>> {
        let Some(w) = self.writer.take() else {
            return Ok(vec![self.path.clone()]);
        };
        let overlaps = w.overlaps();
        if overlaps > 0 {
            self.log.warn(&format!("{overlaps} device operations overlapped on every lane of their stream"));
        }
        let late = w.late();
        if late > 0 {
            self.log.warn(&format!(
                "{late} device operations arrived after later work of their stream was placed (beyond \
                 the reorder window of {} operations per stream): placed where they fit, perhaps on a \
                 lane of their own",
                xpuprof_toolbox::timeline::WINDOW
            ));
        }
        let not_drawn = w.flows_not_drawn();
        if not_drawn > 0 {
            self.log.warn(&format!(
                "{not_drawn} launch ends were written without their flow arrow: a call not in the \
                 trace, a correlation id used again by a later call of its process, a correlation id \
                 of 2^36 or more, or more than 131,072 processes (their device work names its pid and correlation id in args \
                 instead)"
            ));
        }
        w.finish(&self.session).map_err(|e| self.fail(e))?;
        Ok(vec![self.path.clone()])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn size_warning_suggests_the_perfetto_sink() {
        let w = super::size_warning(std::path::Path::new("out/trace.json"), 256);
        assert!(w.starts_with("out/trace.json passed 256 MB"), "{w}");
        assert!(w.contains("--sink perfetto"), "{w}");
    }
}
