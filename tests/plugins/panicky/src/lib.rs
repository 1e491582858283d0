//! `panicky`: a test plugin that panics in the entry points its `panic_in` key lists (all of
//! them by default), to prove that no panic crosses the ABI and the session goes on. `"thread"`
//! in `panic_in` makes `start` run a thread that panics (nobody catches that one: the SDK
//! reports it by plugin name). `huge_text_bytes = N` makes it log a message, emit a loss cause
//! and fail `stop` with texts of N bytes each (the host caps what it prints and stores).

use xpuprof_sdk::prelude::*;

xpuprof_sdk::plugin_config! {
    /// The `[source.panicky]` table.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct PanickyConfig {
        /// entry points that panic, and "thread" for a thread started in `start`
        pub panic_in: Vec<String> = ["create", "prepare", "start", "stop"];
        /// size of an oversized log message, loss cause and error (0: none)
        pub huge_text_bytes: usize = 0;
    }
}

/// The panicking source.
#[derive(Debug)]
pub struct Panicky {
    panic_in: Vec<String>,
    huge_text_bytes: usize,
    ctx: CreateContext,
}

impl Panicky {
    fn maybe_panic(&self, what: &str) {
        if self.panic_in.iter().any(|p| p == what) {
            panic!("panicky plugin panics in {what} on purpose");
        }
    }
}

impl Source for Panicky {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "panicky",
            version: env!("CARGO_PKG_VERSION"),
            description: "test plugin: panics in the entry points listed in `panic_in`",
            config_keys: PanickyConfig::schema().into_keys(),
            capabilities: vec![],
        }
    }

    fn create(ctx: CreateContext) -> PluginResult<Self> {
        let PanickyConfig { panic_in, huge_text_bytes } = ctx.config.typed()?;
        let me = Self { panic_in, huge_text_bytes, ctx };
        me.maybe_panic("create");
        Ok(me)
    }

    fn prepare(&mut self, _env: &mut TargetEnv) -> PluginResult<()> {
        self.maybe_panic("prepare");
        Ok(())
    }

    fn start(&mut self, _pid: u32) -> PluginResult<()> {
        self.maybe_panic("start");
        if self.panic_in.iter().any(|p| p == "thread") {
            let worker = std::thread::Builder::new()
                .name("panicky-worker".into())
                .spawn(|| panic!("panicky plugin panics in its own thread on purpose"))
                .map_err(|e| PluginError::new(format!("failed to start a thread: {e}")))?;
            let _ = worker.join();
        }
        if self.huge_text_bytes > 0 {
            let text = "x".repeat(self.huge_text_bytes);
            self.ctx.log.warn(&text);
            let e = &mut self.ctx.emitter;
            e.emit(&Record::Str(StrDef::default().id(StrId(1)).text(text)));
            e.emit(&Record::Loss(Loss::default().cause(StrId(1)).count(1)));
            e.flush();
        }
        Ok(())
    }

    fn stop(&mut self) -> PluginResult<()> {
        self.maybe_panic("stop");
        if self.huge_text_bytes > 0 {
            return Err(PluginError::new("y".repeat(self.huge_text_bytes)));
        }
        Ok(())
    }
}

xpuprof_sdk::export_plugin!(source: Panicky);
