//! The `flamegraph` sink: by default `flamegraph.svg` (GPU time under the CPU stacks that
//! launched it) and `flamegraph.cpu.svg` (CPU samples) beside it, each scaled on its own.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use xpuprof_sdk::prelude::*;

use crate::fold::{FoldedBuilder, FoldedOptions, View};
use crate::render::{render, RenderOptions, NO_SAMPLES};

xpuprof_sdk::config_enum! {
    /// Which flame graphs the sink draws.
    pub enum GraphView {
        /// `flamegraph.svg`: GPU work under launch stacks; `flamegraph.cpu.svg`: CPU samples.
        Split = "split",
        /// One `flamegraph.svg` of CPU samples and GPU work under one root.
        All = "all",
        /// One `flamegraph.svg` of CPU samples only.
        Cpu = "cpu",
        /// One `flamegraph.svg` of GPU work under launch stacks.
        Gpu = "gpu",
    }
}

xpuprof_sdk::plugin_config! {
    /// `[sink.flamegraph]`'s own keys (besides the folded view's, [`FoldedOptions`]).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct FlamegraphConfig {
        /// title of every flame graph (unset: each view's own title)
        pub title: Option<String> = None;
        /// image width in pixels
        pub width: usize = 1200, min(100);
        /// "split" (flamegraph.svg: GPU time under launch stacks, flamegraph.cpu.svg: CPU samples, each scaled on its own), "all" (both under one root in flamegraph.svg), "cpu" or "gpu" (that view alone in flamegraph.svg)
        pub view: GraphView = GraphView::Split;
    }
}

/// One flame graph file: its view, name and what it says about itself.
#[derive(Debug, Clone)]
pub struct Graph {
    /// Stacks drawn.
    pub view: View,
    /// File name in the output directory.
    pub file: &'static str,
    /// What the file shows, in words (printed at the end of the run).
    pub shows: &'static str,
    /// Title, subtitle, width and what an empty graph says.
    pub render: RenderOptions,
}

/// The flame graphs of `view`, titled `title` (each view's own when `None`).
pub fn graphs(view: GraphView, title: Option<&str>, subtitle: Option<String>, width: usize) -> Vec<Graph> {
    let graph = |view, file, shows, default_title: &str, empty: &str| Graph {
        view,
        file,
        shows,
        render: RenderOptions {
            title: title.unwrap_or(default_title).to_owned(),
            subtitle: subtitle.clone(),
            width,
            empty: empty.to_owned(),
            count_name: "µs",
        },
    };
    const GPU: &str = "GPU time (device µs) under the CPU stacks that launched it";
    const CPU: &str = "CPU time (µs of on-CPU and off-CPU samples) by stack";
    const ALL: &str = "CPU samples and GPU work under one root (µs)";
    let gpu_title = "xpuprof: GPU time under the CPU stacks that launched it";
    let cpu_title = "xpuprof: CPU time by stack";
    match view {
        GraphView::Split => vec![
            graph(
                View::Gpu,
                "flamegraph.svg",
                GPU,
                gpu_title,
                "no GPU work was recorded: the CPU samples are in flamegraph.cpu.svg",
            ),
            graph(
                View::Cpu,
                "flamegraph.cpu.svg",
                CPU,
                cpu_title,
                "no CPU samples were recorded (add a source that samples CPU stacks: `xpuprof plugins` lists them)",
            ),
        ],
        GraphView::Gpu => {
            vec![graph(View::Gpu, "flamegraph.svg", GPU, gpu_title, "no GPU work was recorded")]
        }
        GraphView::Cpu => {
            vec![graph(View::Cpu, "flamegraph.svg", CPU, cpu_title, "no CPU samples were recorded")]
        }
        _ => vec![graph(View::All, "flamegraph.svg", ALL, "xpuprof: CPU stacks and GPU work", NO_SAMPLES)],
    }
}

/// The `flamegraph` sink plugin.
#[derive(Debug)]
pub struct FlamegraphSink {
    builder: FoldedBuilder,
    graphs: Vec<Graph>,
    out_dir: PathBuf,
    /// The output files, created by [`FlamegraphSink::open_outputs`], in `graphs` order.
    opened: Vec<(PathBuf, File)>,
    log: Logger,
}

impl FlamegraphSink {
    /// A sink writing `graphs` into `out_dir`.
    pub fn new(opts: FoldedOptions, graphs: Vec<Graph>, out_dir: PathBuf, log: Logger) -> Self {
        Self { builder: FoldedBuilder::new(opts), graphs, out_dir, opened: Vec::new(), log }
    }

    /// Creates the files now (before the target runs); [`Sink::finish`] fills them.
    pub fn open_outputs(&mut self) -> PluginResult<()> {
        for g in &self.graphs {
            let (file, path) = xpuprof_sdk::output::create_file(&self.out_dir, g.file)?;
            self.opened.push((path, file));
        }
        Ok(())
    }

    /// Draws `g` into `file`; `Ok(None)` when it had nothing to draw, else its total in µs.
    fn write(&self, g: &Graph, file: File) -> std::io::Result<Option<u64>> {
        let folded = self.builder.fold(g.view);
        let total: u64 = folded.lines.iter().map(|(_, w)| w).sum();
        let text: Vec<String> = folded.lines.into_iter().map(|(stack, w)| format!("{stack} {w}")).collect();
        let mut out = BufWriter::new(file);
        let drawn = render(&text, &folded.frames, &g.render, &mut out)?;
        out.flush()?;
        Ok(drawn.then_some(total))
    }
}

/// The PC sample graph, drawn when the session has device PC samples.
const PC_FILE: &str = "flamegraph.pc.svg";

impl FlamegraphSink {
    /// Draws the PC sample view into [`PC_FILE`]; returns its path and the samples drawn.
    fn write_pc(&self) -> PluginResult<(PathBuf, u64)> {
        let (file, path) = xpuprof_sdk::output::create_file(&self.out_dir, PC_FILE)?;
        let folded = self.builder.fold_pc();
        let samples: u64 = folded.lines.iter().map(|(_, w)| w).sum();
        let text: Vec<String> = folded.lines.into_iter().map(|(stack, w)| format!("{stack} {w}")).collect();
        let ro = RenderOptions {
            title: "xpuprof: GPU PC samples by kernel source line and stall reason".to_owned(),
            subtitle: self.graphs.first().and_then(|g| g.render.subtitle.clone()),
            width: self.graphs.first().map_or(1200, |g| g.render.width),
            empty: "no PC samples were recorded".to_owned(),
            count_name: "samples",
        };
        let fail = |e: std::io::Error| PluginError::new(format!("failed to write {}: {e}", path.display()));
        let mut out = BufWriter::new(file);
        render(&text, &folded.frames, &ro, &mut out).map_err(fail)?;
        out.flush().map_err(fail)?;
        Ok((path, samples))
    }
}

impl Sink for FlamegraphSink {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "flamegraph",
            version: env!("CARGO_PKG_VERSION"),
            description: "interactive flame graph SVGs: flamegraph.svg (GPU time under its launch stacks) \
                          and flamegraph.cpu.svg (CPU samples)",
            config_keys: FoldedOptions::schema().merge(FlamegraphConfig::schema()).into_keys(),
            capabilities: vec![],
        }
    }

    fn create(ctx: CreateContext) -> PluginResult<Self> {
        let opts = FoldedOptions::from_config(&ctx.config)?;
        let own = FlamegraphConfig::from_table_lenient(ctx.config.table())
            .map_err(|p| PluginError::new(p.to_string()))?;
        let subtitle = (!ctx.session.command.is_empty()).then(|| ctx.session.command.join(" "));
        let graphs = graphs(own.view, own.title.as_deref(), subtitle, own.width);
        let mut sink = Self::new(opts, graphs, ctx.session.output_dir, ctx.log);
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
        for (g, (path, file)) in self.graphs.iter().zip(std::mem::take(&mut self.opened)) {
            let total = self
                .write(g, file)
                .map_err(|e| PluginError::new(format!("failed to write {}: {e}", path.display())))?;
            said.push(match total {
                Some(us) => {
                    format!("  {}: {} ({})", g.file, g.shows, xpuprof_sdk::clock::format_duration(us * 1000))
                }
                None => format!("  {}: {}", g.file, g.render.empty),
            });
            files.push(path);
        }
        if self.builder.has_pc_samples() {
            let (path, samples) = self.write_pc()?;
            said.push(format!("  {PC_FILE}: GPU PC samples under their kernels: source line, stall reason ({samples} samples)"));
            files.push(path);
        }
        // What each file shows, next to the host's list of files written. Best effort: a closed
        // stderr must not fail the sink.
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "flamegraph:\n{}", said.join("\n"));
        self.log.debug("flame graphs written");
        Ok(files)
    }
}
