//! The `folded` sink: writes `profile.folded` (and optionally the CPU and GPU views apart).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use xpuprof_sdk::prelude::*;

use crate::fold::{FoldedBuilder, FoldedOptions, View};

/// The `folded` sink plugin.
#[derive(Debug)]
pub struct FoldedSink {
    builder: FoldedBuilder,
    split: bool,
    out_dir: PathBuf,
    log: Logger,
}

impl FoldedSink {
    /// A sink writing into `out_dir` (what [`Sink::create`] builds from the session).
    pub fn new(opts: FoldedOptions, split: bool, out_dir: PathBuf, log: Logger) -> Self {
        Self { builder: FoldedBuilder::new(opts), split, out_dir, log }
    }

    fn write_view(&self, view: View, name: &str) -> PluginResult<PathBuf> {
        let path = self.out_dir.join(name);
        write_file(&path, |w| self.builder.write(view, w))?;
        Ok(path)
    }
}

/// Creates `path` and fills it through `f`, naming the file in errors.
fn write_file(path: &Path, f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> PluginResult<()> {
    let fail = |e: std::io::Error| PluginError::new(format!("failed to write {}: {e}", path.display()));
    let file = File::create(path).map_err(fail)?;
    let mut w = BufWriter::new(file);
    f(&mut w).map_err(fail)?;
    w.flush().map_err(fail)
}

impl Sink for FoldedSink {
    fn info() -> PluginInfo {
        let mut config_keys = FoldedOptions::config_keys();
        config_keys.push(ConfigKey::new(
            "split",
            ConfigType::Bool,
            "false",
            "also write profile.cpu.folded and profile.gpu.folded",
        ));
        PluginInfo {
            name: "folded",
            version: env!("CARGO_PKG_VERSION"),
            description: "folded stacks (profile.folded) for flamegraph.pl, inferno and speedscope",
            config_keys,
            capabilities: vec![],
        }
    }

    fn create(ctx: CreateContext) -> PluginResult<Self> {
        let opts = FoldedOptions::from_config(&ctx.config)?;
        let split = ctx.config.bool("split", false)?;
        Ok(Self::new(opts, split, ctx.session.output_dir, ctx.log))
    }

    fn consume(&mut self, records: &[Record]) -> PluginResult<()> {
        for r in records {
            self.builder.add(r);
        }
        Ok(())
    }

    fn finish(&mut self) -> PluginResult<Vec<PathBuf>> {
        std::fs::create_dir_all(&self.out_dir)
            .map_err(|e| PluginError::new(format!("failed to create {}: {e}", self.out_dir.display())))?;
        let mut files = vec![self.write_view(View::All, "profile.folded")?];
        if self.split {
            files.push(self.write_view(View::Cpu, "profile.cpu.folded")?);
            files.push(self.write_view(View::Gpu, "profile.gpu.folded")?);
        }
        let unmatched = self.builder.unmatched();
        if unmatched > 0 {
            self.log.info(&format!(
                "{unmatched} device operations had no launch site; they are under [unknown launch site]"
            ));
        }
        Ok(files)
    }
}
