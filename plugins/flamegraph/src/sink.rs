//! The `flamegraph` sink: `<out>/flamegraph.svg` from the folded view.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use xpuprof_sdk::prelude::*;

use crate::fold::{FoldedBuilder, FoldedOptions, View};
use crate::render::{render, RenderOptions};

xpuprof_sdk::config_enum! {
    /// Which stacks the flame graph draws.
    pub enum GraphView {
        /// CPU samples and GPU work.
        All = "all",
        /// CPU samples only.
        Cpu = "cpu",
        /// GPU work under launch stacks.
        Gpu = "gpu",
    }
}

xpuprof_sdk::plugin_config! {
    /// `[sink.flamegraph]`'s own keys (besides the folded view's, [`FoldedOptions`]).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct FlamegraphConfig {
        /// title of the flame graph
        pub title: String = "xpuprof: CPU stacks and GPU work";
        /// image width in pixels
        pub width: usize = 1200, min(100);
        /// "all" (CPU samples and GPU work), "cpu" (CPU samples only) or "gpu" (GPU work under launch stacks)
        pub view: GraphView = GraphView::All;
    }
}

/// The `flamegraph` sink plugin.
#[derive(Debug)]
pub struct FlamegraphSink {
    builder: FoldedBuilder,
    view: View,
    render: RenderOptions,
    path: PathBuf,
    out_dir: PathBuf,
    file: Option<File>,
    log: Logger,
}

impl FlamegraphSink {
    /// A sink writing `<out_dir>/flamegraph.svg` of `view`.
    pub fn new(
        opts: FoldedOptions,
        view: View,
        render: RenderOptions,
        out_dir: PathBuf,
        log: Logger,
    ) -> Self {
        let path = out_dir.join(FILE_NAME);
        Self { builder: FoldedBuilder::new(opts), view, render, path, out_dir, file: None, log }
    }

    /// Creates `flamegraph.svg` now (before the target runs); [`Sink::finish`] fills it.
    pub fn open_output(&mut self) -> PluginResult<()> {
        let (file, path) = xpuprof_sdk::output::create_file(&self.out_dir, FILE_NAME)?;
        (self.file, self.path) = (Some(file), path);
        Ok(())
    }

    fn write(&mut self) -> std::io::Result<bool> {
        let lines: Vec<String> =
            self.builder.lines(self.view).into_iter().map(|(stack, w)| format!("{stack} {w}")).collect();
        let file = self.file.take().ok_or_else(|| std::io::Error::other("the output file is not open"))?;
        let mut out = BufWriter::new(file);
        let drawn = render(&lines, &self.render, &mut out)?;
        out.flush()?;
        Ok(drawn)
    }
}

const FILE_NAME: &str = "flamegraph.svg";

impl Sink for FlamegraphSink {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "flamegraph",
            version: env!("CARGO_PKG_VERSION"),
            description:
                "interactive flame graph SVG (flamegraph.svg): CPU stacks with GPU work under its launches",
            config_keys: FoldedOptions::schema().merge(FlamegraphConfig::schema()).into_keys(),
            capabilities: vec![],
        }
    }

    fn create(ctx: CreateContext) -> PluginResult<Self> {
        let opts = FoldedOptions::from_config(&ctx.config)?;
        let own = FlamegraphConfig::from_table_lenient(ctx.config.table())
            .map_err(|p| PluginError::new(p.to_string()))?;
        let render = RenderOptions {
            title: own.title,
            subtitle: (!ctx.session.command.is_empty()).then(|| ctx.session.command.join(" ")),
            width: own.width,
        };
        let view = match own.view {
            GraphView::All => View::All,
            GraphView::Cpu => View::Cpu,
            GraphView::Gpu => View::Gpu,
        };
        let mut sink = Self::new(opts, view, render, ctx.session.output_dir, ctx.log);
        sink.open_output()?;
        Ok(sink)
    }

    fn consume(&mut self, records: &[Record]) -> PluginResult<()> {
        for r in records {
            self.builder.add(r);
        }
        Ok(())
    }

    fn finish(&mut self) -> PluginResult<Vec<PathBuf>> {
        if self.file.is_none() {
            self.open_output()?;
        }
        let drawn = self
            .write()
            .map_err(|e| PluginError::new(format!("failed to write {}: {e}", self.path.display())))?;
        if !drawn {
            self.log.warn("no CPU samples and no GPU work were recorded: flamegraph.svg is empty");
        }
        Ok(vec![self.path.clone()])
    }
}
