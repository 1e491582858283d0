//! The `folded` sink: writes `profile.folded` (CPU samples and GPU work under one root) and, by
//! default, the GPU and CPU views apart beside it (`profile.gpu.folded`, `profile.cpu.folded`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use xpuprof_sdk::clock::format_duration;
use xpuprof_sdk::prelude::*;

use crate::fold::{FoldedBuilder, FoldedOptions, View};

/// The PC sample view, written when the session has device PC samples: weighted by samples,
/// never mixed with the time-weighted views.
const PC_FILE: &str = "profile.pc.folded";

/// The `folded` sink plugin.
#[derive(Debug)]
pub struct FoldedSink {
    builder: FoldedBuilder,
    split: bool,
    out_dir: PathBuf,
    log: Logger,
    /// The output files, created by [`FoldedSink::open_outputs`], in [`FoldedSink::views`] order.
    opened: Vec<(PathBuf, File)>,
}

impl FoldedSink {
    /// A sink writing into `out_dir` (what [`Sink::create`] builds from the session).
    pub fn new(opts: FoldedOptions, split: bool, out_dir: PathBuf, log: Logger) -> Self {
        Self { builder: FoldedBuilder::new(opts), split, out_dir, log, opened: Vec::new() }
    }

    /// The files written: view, name, and what it shows (printed at the end of the run).
    fn views(&self) -> Vec<(View, &'static str, &'static str)> {
        let mut v = vec![(View::All, "profile.folded", "CPU samples and GPU work under one root")];
        if self.split {
            v.extend([
                (View::Cpu, "profile.cpu.folded", "CPU time by stack"),
                (View::Gpu, "profile.gpu.folded", "GPU time under the CPU stacks that launched it"),
            ]);
        }
        v
    }

    /// Creates the output files now (before the target runs), so that a directory that cannot
    /// be written is found at once; [`Sink::finish`] fills them.
    pub fn open_outputs(&mut self) -> PluginResult<()> {
        for (_, name, _) in self.views() {
            let (file, path) = xpuprof_sdk::output::create_file(&self.out_dir, name)?;
            self.opened.push((path, file));
        }
        Ok(())
    }
}

/// Fills the already created `file` (at `path`) through `f`, naming the file in errors.
fn write_file(
    file: File,
    path: &Path,
    f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> PluginResult<()> {
    let fail = |e: std::io::Error| PluginError::new(format!("failed to write {}: {e}", path.display()));
    let mut w = BufWriter::new(file);
    f(&mut w).map_err(fail)?;
    w.flush().map_err(fail)
}

xpuprof_sdk::plugin_config! {
    /// `[sink.folded]`'s own keys (besides the folded view's, [`FoldedOptions`]).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct FoldedSinkConfig {
        /// also write the views apart: profile.cpu.folded (CPU samples) and profile.gpu.folded (GPU work under launch stacks)
        pub split: bool = true;
    }
}

impl Sink for FoldedSink {
    fn info() -> PluginInfo {
        let config_keys = FoldedOptions::schema().merge(FoldedSinkConfig::schema()).into_keys();
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
        let own: FoldedSinkConfig = FoldedSinkConfig::from_table_lenient(ctx.config.table())
            .map_err(|p| PluginError::new(p.to_string()))?;
        let mut sink = Self::new(opts, own.split, ctx.session.output_dir, ctx.log);
        sink.open_outputs()?;
        Ok(sink)
    }

    fn consume(&mut self, records: &[Record]) -> PluginResult<()> {
        for r in records {
            self.builder.add(r);
        }
        Ok(())
    }

    fn finish(&mut self) -> PluginResult<Vec<PathBuf>> {
        if self.opened.is_empty() {
            self.open_outputs()?;
        }
        let mut files = Vec::new();
        let mut said = Vec::new();
        for ((view, name, shows), (path, file)) in
            self.views().into_iter().zip(std::mem::take(&mut self.opened))
        {
            let lines = self.builder.lines(view);
            let us: u64 = lines.iter().map(|(_, w)| w).sum();
            write_file(file, &path, |w| {
                lines.iter().try_for_each(|(stack, weight)| writeln!(w, "{stack} {weight}"))
            })?;
            said.push(format!("  {name}: {shows} ({} stacks, {})", lines.len(), format_duration(us * 1000)));
            files.push(path);
        }
        if self.builder.has_pc_samples() {
            let (file, path) = xpuprof_sdk::output::create_file(&self.out_dir, PC_FILE)?;
            let lines = self.builder.fold_pc().lines;
            write_file(file, &path, |w| {
                lines.iter().try_for_each(|(stack, weight)| writeln!(w, "{stack} {weight}"))
            })?;
            let samples: u64 = lines.iter().map(|(_, w)| w).sum();
            said.push(format!(
                "  {PC_FILE}: GPU PC samples under their kernels: source line, stall reason ({} stacks, {samples} samples)",
                lines.len()
            ));
            files.push(path);
        }
        // What each file shows, beside the host's list of files written. Best effort: a closed
        // stderr must not fail the sink.
        let _ = writeln!(std::io::stderr().lock(), "folded:\n{}", said.join("\n"));
        let unmatched = self.builder.unmatched();
        if unmatched > 0 {
            self.log.info(&format!(
                "{unmatched} device operations had no launch site; they are under [unknown launch site]"
            ));
        }
        Ok(files)
    }
}
