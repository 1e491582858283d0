//! The `archive` sink: writes `<out>/archive/trace.xpa` while the session records.

use std::path::PathBuf;

use xpuprof_archive::{Meta, Writer};
use xpuprof_sdk::codec::CODEC_VERSION;
use xpuprof_sdk::prelude::*;

/// The `archive` sink plugin.
#[derive(Debug)]
pub struct ArchiveSink {
    writer: Option<Writer>,
    path: PathBuf,
    log: Logger,
}

impl ArchiveSink {
    /// A sink writing the archive of `session` into `<session.output_dir>/archive/`.
    pub fn new(session: &SessionInfo, log: Logger) -> PluginResult<Self> {
        let meta = Meta {
            command: session.command.clone(),
            sources: session.sources.clone(),
            sinks: session.sinks.clone(),
            start_time: session.start_time,
            codec_version: CODEC_VERSION,
            writer: concat!("xpuprof-plugin-archive ", env!("CARGO_PKG_VERSION")).to_owned(),
            host: xpuprof_archive::host_name().to_owned(),
            clock_pair: Some(xpuprof_archive::ClockPair::now()),
        };
        let relative = format!("archive/{}", xpuprof_archive::FILE_NAME);
        let writer = Writer::create_in(&session.output_dir, &relative, &meta).map_err(|e| e.to_string())?;
        Ok(Self { path: writer.path().to_owned(), writer: Some(writer), log })
    }
}

impl Sink for ArchiveSink {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "archive",
            version: env!("CARGO_PKG_VERSION"),
            description:
                "native trace archive (archive/trace.xpa), replayable through any sink with `xpuprof report`",
            config_keys: vec![],
            capabilities: vec![],
        }
    }

    fn create(ctx: CreateContext) -> PluginResult<Self> {
        Self::new(&ctx.session, ctx.log)
    }

    fn consume(&mut self, records: &[Record]) -> PluginResult<()> {
        let w = self
            .writer
            .as_mut()
            .ok_or_else(|| PluginError::new("failed to write the archive: the sink was already finished"))?;
        for r in records {
            w.write(r).map_err(|e| e.to_string())?;
        }
        w.end_batch().map_err(|e| e.to_string())?;
        Ok(())
    }

    fn finish(&mut self) -> PluginResult<Vec<PathBuf>> {
        if let Some(w) = self.writer.take() {
            let stats = w.finish().map_err(|e| e.to_string())?;
            self.log.info(&format!(
                "archive: {} records in {} locations, {} bytes",
                stats.records, stats.locations, stats.bytes
            ));
        }
        Ok(vec![self.path.clone()])
    }
}
