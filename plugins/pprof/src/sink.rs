//! The `pprof` sink: aggregates while the session runs, writes `profile.pb.gz` at the end.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use flate2::write::GzEncoder;
use flate2::Compression;
use prost::Message;
use xpuprof_sdk::prelude::*;

use crate::config::ProfileOptions;
use crate::defs::Defs;
use crate::profile::{build, Aggregate};

/// The file the sink writes in the output directory.
pub const FILE_NAME: &str = "profile.pb.gz";

/// The `pprof` sink plugin.
#[derive(Debug)]
pub struct PprofSink {
    opts: ProfileOptions,
    file: Option<File>,
    path: PathBuf,
    defs: Defs,
    agg: Aggregate,
    losses: BTreeMap<String, u64>,
    command: Vec<String>,
    /// The capture windows the profile covers, as comment lines.
    windows: Vec<String>,
}

impl PprofSink {
    /// A sink writing `<session.output_dir>/profile.pb.gz`. The file is created now, so a
    /// directory that cannot be written fails before the run, and written at the end.
    pub fn new(opts: ProfileOptions, session: &SessionInfo) -> PluginResult<Self> {
        let (file, path) = xpuprof_sdk::output::create_file(&session.output_dir, FILE_NAME)?;
        Ok(Self {
            opts,
            file: Some(file),
            path,
            defs: Defs::default(),
            agg: Aggregate::default(),
            losses: BTreeMap::new(),
            command: session.command.clone(),
            windows: Vec::new(),
        })
    }

    fn comments(&self) -> Vec<String> {
        let mut c = vec![format!("xpuprof {}", env!("CARGO_PKG_VERSION"))];
        if !self.command.is_empty() {
            c.push(format!("command: {}", self.command.join(" ")));
        }
        c.extend(self.losses.iter().map(|(cause, n)| format!("lost {n}: {cause}")));
        c.extend(self.windows.iter().cloned());
        c
    }
}

impl Sink for PprofSink {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "pprof",
            version: env!("CARGO_PKG_VERSION"),
            description: "pprof profile (profile.pb.gz): GPU time per launch stack and CPU samples, for pprof, Pyroscope, Parca, Grafana",
            config_keys: crate::config::keys(),
            capabilities: vec![],
        }
    }

    fn create(ctx: CreateContext) -> PluginResult<Self> {
        let opts = crate::config::options(&ctx.config)?;
        Self::new(opts, &ctx.session)
    }

    fn consume(&mut self, records: &[Record]) -> PluginResult<()> {
        for r in records {
            match r {
                r if r.is_definition() => self.defs.define(r),
                Record::DeviceOp(op) => self.agg.device_op(op),
                Record::CpuSample(s) if self.opts.cpu_samples => self.agg.sample(s),
                Record::Overhead(o) => self.agg.overhead(o),
                Record::DeviceSample(d) => self.agg.pc_sample(d),
                // A source announces a marker window with `end` 0; the complete record follows.
                Record::Window(w) if w.end != 0 => self.windows.push(format!(
                    "capture window: {} to {} ns, opened by {:?}",
                    w.start,
                    w.end.max(w.start),
                    w.opener
                )),
                Record::Loss(l) => {
                    let cause =
                        self.defs.text(l.cause).map_or_else(|| "unknown cause".to_owned(), str::to_owned);
                    *self.losses.entry(cause).or_default() += l.count;
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> PluginResult<Vec<PathBuf>> {
        let Some(file) = self.file.take() else {
            return Ok(vec![self.path.clone()]);
        };
        let profile = build(&self.agg, &self.defs, 0, &self.comments());
        let fail =
            |e: std::io::Error| PluginError::new(format!("failed to write {}: {e}", self.path.display()));
        let mut gz = GzEncoder::new(BufWriter::new(file), Compression::default());
        gz.write_all(&profile.encode_to_vec()).map_err(fail)?;
        gz.finish().map_err(fail)?.flush().map_err(fail)?;
        Ok(vec![self.path.clone()])
    }
}
