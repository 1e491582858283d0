//! `stuck`: a test double of a misbehaving source. It blocks forever in the entry points its
//! `block_in` key lists (`create`, `prepare`, `start`, `stop`, `destroy`), ignoring everything,
//! as a plugin waiting on a dead device or a lost socket would; and with `late_records = N` it
//! emits N records from a thread of its own after `stop` returned and N more after it was
//! destroyed, as a plugin that forgets to join its threads would.
//!
//! It drives the host's deadlines, its abandoning of stuck plugins and its accounting of late
//! records (core/tests/host/plugins.rs).

use std::time::Duration;

use xpuprof_sdk::prelude::*;

/// Delay before the records emitted after `stop` (the host has disconnected the source by then).
const AFTER_STOP: Duration = Duration::from_millis(50);
/// Delay before the records emitted after `destroy`.
const AFTER_DESTROY: Duration = Duration::from_millis(100);

/// Blocks the calling thread for good.
fn block_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// The misbehaving source.
#[derive(Debug)]
pub struct Stuck {
    block_in: Vec<String>,
    late_records: u32,
    emitter: Emitter,
}

impl Stuck {
    fn maybe_block(&self, what: &str) {
        if self.block_in.iter().any(|b| b == what) {
            block_forever();
        }
    }

    /// Emits `late_records` records from a new thread after `delay`.
    fn emit_later(&self, delay: Duration) {
        if self.late_records == 0 {
            return;
        }
        let (mut e, n) = (self.emitter.clone(), self.late_records);
        std::thread::spawn(move || {
            std::thread::sleep(delay);
            for i in 0..n {
                e.emit(&Record::Str(StrDef::default().id(StrId(1000 + i)).text("late".into())));
            }
            e.flush();
        });
    }
}

impl Source for Stuck {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "stuck",
            version: env!("CARGO_PKG_VERSION"),
            description: "test plugin: blocks forever in the entry points listed in `block_in`",
            config_keys: vec![
                ConfigKey::new(
                    "block_in",
                    ConfigType::StringList,
                    "[]",
                    "entry points that block forever: create, prepare, start, stop, destroy",
                ),
                ConfigKey::new(
                    "late_records",
                    ConfigType::Integer,
                    "0",
                    "records emitted from a thread after stop returned, and again after destroy",
                ),
            ],
            capabilities: vec![],
        }
    }

    fn create(ctx: CreateContext) -> PluginResult<Self> {
        let me = Self {
            block_in: ctx.config.string_list("block_in", &[])?,
            late_records: u32::try_from(ctx.config.integer("late_records", 0)?)
                .map_err(|_| PluginError::new("late_records must be between 0 and 2^32-1"))?,
            emitter: ctx.emitter,
        };
        me.maybe_block("create");
        Ok(me)
    }

    fn prepare(&mut self, _env: &mut TargetEnv) -> PluginResult<()> {
        self.maybe_block("prepare");
        Ok(())
    }

    fn start(&mut self, _pid: u32) -> PluginResult<()> {
        self.maybe_block("start");
        Ok(())
    }

    fn stop(&mut self) -> PluginResult<()> {
        self.maybe_block("stop");
        self.emit_later(AFTER_STOP);
        Ok(())
    }
}

impl Drop for Stuck {
    fn drop(&mut self) {
        self.maybe_block("destroy");
        self.emit_later(AFTER_DESTROY);
    }
}

xpuprof_sdk::export_plugin!(source: Stuck);
