//! `stuck-sink`: a test double of a misbehaving sink. It blocks forever in the entry points its
//! `block_in` key lists (`create`, `consume`, `finish`, `destroy`), ignoring everything, as a
//! sink writing to a hung network file system would. `consume` blocks on the first batch.
//!
//! It drives the host's per-call deadlines and sink isolation (core/tests/host/plugins.rs).

use std::path::PathBuf;
use std::time::Duration;

use xpuprof_sdk::prelude::*;

/// Blocks the calling thread for good.
fn block_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// The misbehaving sink.
#[derive(Debug)]
pub struct StuckSink {
    block_in: Vec<String>,
}

impl StuckSink {
    fn maybe_block(&self, what: &str) {
        if self.block_in.iter().any(|b| b == what) {
            block_forever();
        }
    }
}

impl Sink for StuckSink {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "stuck-sink",
            version: env!("CARGO_PKG_VERSION"),
            description: "test plugin: blocks forever in the entry points listed in `block_in`",
            config_keys: vec![ConfigKey::new(
                "block_in",
                ConfigType::StringList,
                "[]",
                "entry points that block forever: create, consume, finish, destroy",
            )],
            capabilities: vec![],
        }
    }

    fn create(ctx: CreateContext) -> PluginResult<Self> {
        let me = Self { block_in: ctx.config.string_list("block_in", &[])? };
        me.maybe_block("create");
        Ok(me)
    }

    fn consume(&mut self, _records: &[Record]) -> PluginResult<()> {
        self.maybe_block("consume");
        Ok(())
    }

    fn finish(&mut self) -> PluginResult<Vec<PathBuf>> {
        self.maybe_block("finish");
        Ok(Vec::new())
    }
}

impl Drop for StuckSink {
    fn drop(&mut self) {
        self.maybe_block("destroy");
    }
}

xpuprof_sdk::export_plugin!(sink: StuckSink);
