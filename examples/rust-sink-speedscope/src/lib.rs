//! `speedscope`: an xpuprof sink in Rust writing `profile.speedscope.json`, a sampled profile in
//! speedscope's file format (<https://www.speedscope.app>). CPU samples weigh their period;
//! device work hangs under the CPU stack that launched it, then the launch API, then a
//! `[GPU] <kernel>` frame, weighted by its device time. Weights are nanoseconds.
//!
//! What it shows: creating the output file in `create` (so an unwritable directory stops the
//! session before the target runs), keeping definitions as they arrive (each comes before its
//! first use, ids are session-wide), memory that grows with distinct stacks and not with the
//! run's length, and the files named in `finish`.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use xpuprof_sdk::prelude::*;

xpuprof_sdk::plugin_config! {
    /// The `[sink.speedscope]` table.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct SpeedscopeConfig {
        /// file name inside the output directory
        pub file: String = "profile.speedscope.json".to_owned();
    }
}

/// The sink: definitions seen so far and the weight of each distinct stack.
#[derive(Debug)]
pub struct Speedscope {
    out: Option<(File, PathBuf)>,
    strings: HashMap<StrId, String>,
    frames: HashMap<FrameId, String>,
    stacks: HashMap<StackId, Vec<FrameId>>,
    /// speedscope's frame table: names, and their index.
    names: Vec<String>,
    index: HashMap<String, usize>,
    /// Stacks as frame indexes, root first, with their total weight.
    weights: BTreeMap<Vec<usize>, u64>,
}

impl Speedscope {
    fn text(&self, id: StrId) -> &str {
        self.strings.get(&id).map_or("?", String::as_str)
    }

    fn frame_index(&mut self, name: String) -> usize {
        if let Some(&i) = self.index.get(&name) {
            return i;
        }
        self.names.push(name.clone());
        self.index.insert(name, self.names.len() - 1);
        self.names.len() - 1
    }

    /// The frame names of stack `id`, root first.
    fn stack_names(&self, id: StackId) -> Vec<String> {
        let frames = self.stacks.get(&id).map_or(&[][..], Vec::as_slice);
        frames.iter().rev().map(|f| self.frames.get(f).cloned().unwrap_or_else(|| "?".into())).collect()
    }

    fn add(&mut self, names: Vec<String>, weight: u64) {
        let stack: Vec<usize> = names.into_iter().map(|n| self.frame_index(n)).collect();
        *self.weights.entry(stack).or_default() += weight;
    }

    fn device_op(&mut self, op: &DeviceOp) {
        let mut names = match op.launch {
            Some(l) => {
                let mut n = self.stack_names(l.stack);
                if l.api != StrId::NONE {
                    n.push(self.text(l.api).to_owned());
                }
                n
            }
            None => vec!["[unknown launch site]".to_owned()],
        };
        names.push(format!("[GPU] {}", self.text(op.name)));
        self.add(names, op.end.saturating_sub(op.start));
    }

    fn frame(&mut self, f: &FrameDef) {
        let name = match f.name {
            StrId::NONE => format!("{:#x}", f.address),
            n => self.text(n).to_owned(),
        };
        self.frames.insert(f.id, name);
    }

    fn json(&self) -> serde_json::Value {
        let frames: Vec<_> = self.names.iter().map(|n| serde_json::json!({ "name": n })).collect();
        let samples: Vec<&Vec<usize>> = self.weights.keys().collect();
        let weights: Vec<u64> = self.weights.values().copied().collect();
        let total: u64 = weights.iter().sum();
        serde_json::json!({
            "$schema": "https://www.speedscope.app/file-format-schema.json",
            "exporter": "xpuprof speedscope example",
            "name": "xpuprof",
            "shared": { "frames": frames },
            "profiles": [{
                "type": "sampled", "name": "xpuprof", "unit": "nanoseconds",
                "startValue": 0, "endValue": total, "samples": samples, "weights": weights,
            }],
        })
    }
}

impl Sink for Speedscope {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "speedscope",
            version: env!("CARGO_PKG_VERSION"),
            description:
                "speedscope profile (profile.speedscope.json): CPU samples and GPU work under its launch",
            config_keys: SpeedscopeConfig::schema().into_keys(),
            capabilities: vec![],
        }
    }

    fn create(ctx: CreateContext) -> PluginResult<Self> {
        let config: SpeedscopeConfig = ctx.config.typed()?;
        let out = xpuprof_sdk::output::create_file(&ctx.session.output_dir, &config.file)
            .map_err(|e| PluginError::new(e.to_string()))?;
        Ok(Self {
            out: Some(out),
            strings: HashMap::new(),
            frames: HashMap::new(),
            stacks: HashMap::new(),
            names: Vec::new(),
            index: HashMap::new(),
            weights: BTreeMap::new(),
        })
    }

    fn consume(&mut self, records: &[Record]) -> PluginResult<()> {
        for r in records {
            match r {
                Record::Str(s) => {
                    self.strings.insert(s.id, s.shown().to_owned());
                }
                Record::Frame(f) => self.frame(f),
                Record::Stack(s) => {
                    self.stacks.insert(s.id, s.frames.clone());
                }
                Record::CpuSample(s) => {
                    let names = self.stack_names(s.stack);
                    self.add(names, s.weight);
                }
                Record::DeviceOp(op) => self.device_op(op),
                _ => {}
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> PluginResult<Vec<PathBuf>> {
        let Some((file, path)) = self.out.take() else { return Ok(vec![]) };
        let fail = |e: std::io::Error| PluginError::new(format!("failed to write {}: {e}", path.display()));
        let mut w = BufWriter::new(file);
        serde_json::to_writer(&mut w, &self.json()).map_err(|e| fail(e.into()))?;
        w.flush().map_err(fail)?;
        Ok(vec![path])
    }
}

xpuprof_sdk::export_plugin!(sink: Speedscope);
