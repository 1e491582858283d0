//! The `flamegraph` sink: `<out>/flamegraph.svg` from the folded view.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use xpuprof_sdk::prelude::*;

use crate::fold::{FoldedBuilder, FoldedOptions, View};
use crate::render::{render, RenderOptions};

/// The `flamegraph` sink plugin.
#[derive(Debug)]
pub struct FlamegraphSink {
    builder: FoldedBuilder,
    view: View,
    render: RenderOptions,
    path: PathBuf,
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
        Self { builder: FoldedBuilder::new(opts), view, render, path: out_dir.join("flamegraph.svg"), log }
    }

    fn write(&self) -> std::io::Result<bool> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let lines: Vec<String> =
            self.builder.lines(self.view).into_iter().map(|(stack, w)| format!("{stack} {w}")).collect();
        let mut out = BufWriter::new(File::create(&self.path)?);
        let drawn = render(&lines, &self.render, &mut out)?;
        out.flush()?;
        Ok(drawn)
    }
}

impl Sink for FlamegraphSink {
    fn info() -> PluginInfo {
        use ConfigType::*;
        let mut config_keys = FoldedOptions::config_keys();
        config_keys.extend([
            ConfigKey::new(
                "title",
                String,
                "\"xpuprof: CPU stacks and GPU work\"",
                "title of the flame graph",
            ),
            ConfigKey::new("width", Integer, "1200", "image width in pixels"),
            ConfigKey::new(
                "view",
                String,
                "\"all\"",
                "\"all\" (CPU samples and GPU work), \"cpu\" (CPU samples only) or \"gpu\" (GPU work under launch stacks)",
            ),
        ]);
        PluginInfo {
            name: "flamegraph",
            version: env!("CARGO_PKG_VERSION"),
            description:
                "interactive flame graph SVG (flamegraph.svg): CPU stacks with GPU work under its launches",
            config_keys,
            capabilities: vec![],
        }
    }

    fn create(ctx: CreateContext) -> PluginResult<Self> {
        let opts = FoldedOptions::from_config(&ctx.config)?;
        let width = ctx.config.integer("width", 1200)?;
        let render = RenderOptions {
            title: ctx.config.string("title", "xpuprof: CPU stacks and GPU work")?,
            subtitle: (!ctx.session.command.is_empty()).then(|| ctx.session.command.join(" ")),
            width: usize::try_from(width).ok().filter(|w| *w >= 100).ok_or_else(|| {
                PluginError::new(format!("config key `width` is {width}; it must be at least 100"))
            })?,
        };
        let view = match ctx.config.choice("view", &["all", "cpu", "gpu"], "all")?.as_str() {
            "cpu" => View::Cpu,
            "gpu" => View::Gpu,
            _ => View::All,
        };
        Ok(Self::new(opts, view, render, ctx.session.output_dir, ctx.log))
    }

    fn consume(&mut self, records: &[Record]) -> PluginResult<()> {
        for r in records {
            self.builder.add(r);
        }
        Ok(())
    }

    fn finish(&mut self) -> PluginResult<Vec<PathBuf>> {
        let drawn = self
            .write()
            .map_err(|e| PluginError::new(format!("failed to write {}: {e}", self.path.display())))?;
        if !drawn {
            self.log.warn("no CPU samples and no GPU work were recorded: flamegraph.svg is empty");
        }
        Ok(vec![self.path.clone()])
    }
}
