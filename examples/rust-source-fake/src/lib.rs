//! `fakeacc`: an xpuprof source for a fictitious accelerator, in Rust. It has no hardware to
//! trace, so a thread plays what a real backend would observe in the target: a device with its
//! own 1 GHz/3 clock (defined and paired with the session clock), launch API calls with their
//! CPU launch stacks, kernels on the device joined to them by correlation id, and a loss.
//!
//! What it shows, in the order a reader meets it:
//! - the typed config ([`FakeConfig`], one declaration gives keys, defaults, ranges and docs);
//! - definitions before use, each id numbered by the source from 1 (the host renumbers);
//! - events emitted from a thread of the plugin, joined in `stop` before it returns;
//! - a non-session clock domain: [`ClockDomainDef`] plus [`ClockSync`] pairs;
//! - a [`Loss`] for everything the (imaginary) runtime dropped;
//! - what it tells `xpuprof doctor` (its machine check) and the sinks (its correlation
//!   backend's name), declared with the `Source` trait's default methods.
//!
//! Build: `cargo build` gives `libxpuprof_example_fakeacc.so` (see `Cargo.toml` for the name
//! rule); run: `xpuprof --plugin-dir DIR --source fakeacc --sink folded -- sleep 1`.

use std::thread::JoinHandle;

use xpuprof_sdk::clock::now_ns;
use xpuprof_sdk::prelude::*;

xpuprof_sdk::plugin_config! {
    /// The `[source.fakeacc]` table.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct FakeConfig {
        /// kernel launches to play
        pub launches: u32 = 6, max(100_000);
    }
}

/// What the source needs from the machine: the fictitious device.
const FAKE_DEVICE: Capability = Capability::named("fakeacc-device");
/// The fictitious runtime's correlation backend (a third-party number).
const BACKEND: u32 = backend::FIRST_THIRD_PARTY + 0x43;
/// The device's clock domain: ticks of 3 ns.
const DEVICE_CLOCK: ClockDomain = ClockDomain(1);
const TICK_NS: u64 = 3;

/// The source: its config, its emitter, and the recording thread while it runs.
#[derive(Debug)]
pub struct FakeSource {
    config: FakeConfig,
    emitter: Emitter,
    thread: Option<JoinHandle<()>>,
}

impl Source for FakeSource {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "fakeacc",
            version: env!("CARGO_PKG_VERSION"),
            description: "a fictitious accelerator: a device, launches with stacks, kernels and a loss",
            config_keys: FakeConfig::schema().into_keys(),
            capabilities: vec![FAKE_DEVICE],
        }
    }

    /// What `xpuprof doctor` prints for this source: a real backend looks for its runtime
    /// library and device nodes here and says how to install what is missing.
    fn machine_checks() -> Vec<MachineCheck> {
        vec![MachineCheck::ok(FAKE_DEVICE, "simulated device (no hardware needed)")]
    }

    /// Reports name the fictitious runtime's correlation ids `fakeacc`.
    fn backends() -> Vec<BackendName> {
        vec![BackendName::new(BACKEND, "fakeacc")]
    }

    fn create(ctx: CreateContext) -> PluginResult<Self> {
        Ok(Self { config: ctx.config.typed()?, emitter: ctx.emitter, thread: None })
    }

    fn start(&mut self, pid: u32) -> PluginResult<()> {
        let (mut emitter, launches) = (self.emitter.clone(), self.config.launches);
        let thread = std::thread::Builder::new()
            .name("fakeacc".into())
            .spawn(move || Recorder::new(pid).play(&mut emitter, launches))
            .map_err(|e| PluginError::new(format!("failed to start the fakeacc thread: {e}")))?;
        self.thread = Some(thread);
        Ok(())
    }

    fn stop(&mut self) -> PluginResult<()> {
        if let Some(t) = self.thread.take() {
            t.join().map_err(|_| PluginError::new("the fakeacc thread panicked"))?;
        }
        self.emitter.flush();
        Ok(())
    }
}

/// Plays the fictitious runtime's events for process `pid`.
struct Recorder {
    pid: u32,
    base: u64,
    next_correlation: u64,
}

// String, frame and stack ids this source numbers itself.
const S_DEVICE: StrId = StrId(1);
const S_LAUNCH: StrId = StrId(2);
const S_KERNEL: StrId = StrId(3);
const S_MAIN: StrId = StrId(4);
const S_STEP: StrId = StrId(5);
const S_LOSS: StrId = StrId(6);
const STACK: StackId = StackId(1);

impl Recorder {
    fn new(pid: u32) -> Self {
        Self { pid, base: now_ns(), next_correlation: 0 }
    }

    /// The device clock at session time `ns`.
    fn ticks(&self, ns: u64) -> u64 {
        1_000_000 + (ns - self.base) / TICK_NS
    }

    fn sync(&self) -> Record {
        let now = now_ns();
        Record::ClockSync(
            ClockSync::default().domain(DEVICE_CLOCK).source_time(self.ticks(now)).session_time(now),
        )
    }

    fn definitions(&self, e: &mut Emitter) {
        let texts = [
            (S_DEVICE, "FakeAcc 1000"),
            (S_LAUNCH, "fakeLaunch"),
            (S_KERNEL, "fake::saxpy"),
            (S_MAIN, "main"),
            (S_STEP, "step"),
            (S_LOSS, "fakeacc ring buffer full"),
        ];
        for (id, text) in texts {
            e.emit(&Record::Str(StrDef::new(id, text)));
        }
        let device = DeviceDef::default()
            .id(DeviceId(1))
            .vendor(Vendor(Vendor::FIRST_THIRD_PARTY + 3))
            .name(S_DEVICE)
            .kind(DeviceKind::Accelerator)
            .compute_units(16);
        e.emit(&Record::Device(device));
        e.emit(&Record::Stream(StreamDef::default().id(StreamId(1)).device(DeviceId(1)).pid(self.pid)));
        for (id, name) in [(FrameId(1), S_STEP), (FrameId(2), S_MAIN)] {
            let frame = FrameDef::default().id(id).kind(FrameKind::Synthetic).pid(self.pid).name(name);
            e.emit(&Record::Frame(frame));
        }
        e.emit(&Record::Stack(StackDef::new(STACK, vec![FrameId(1), FrameId(2)])));
        let clock = ClockDomainDef::default().domain(DEVICE_CLOCK).ticks_per_second(1_000_000_000 / TICK_NS);
        e.emit(&Record::ClockDomain(clock));
        e.emit(&self.sync());
    }

    /// One launch: the API call and its stack (session clock), the kernel (device clock).
    fn launch(&mut self, e: &mut Emitter) {
        self.next_correlation += 1;
        let corr = Correlation::new(BACKEND, self.next_correlation);
        let t = now_ns();
        let call = ApiCall::default()
            .pid(self.pid)
            .tid(self.pid)
            .start(t)
            .end(t + 2_000)
            .name(S_LAUNCH)
            .kind(ApiKind::Launch)
            .correlation(Some(corr));
        e.emit(&Record::ApiCall(call));
        let site = LaunchSite::default()
            .pid(self.pid)
            .tid(self.pid)
            .time(t)
            .correlation(corr)
            .api(S_LAUNCH)
            .stack(STACK);
        e.emit(&Record::LaunchSite(site));
        let start = self.ticks(t + 5_000);
        let op = DeviceOp::default()
            .kind(DeviceOpKind::Kernel)
            .pid(self.pid)
            .device(DeviceId(1))
            .stream(StreamId(1))
            .clock(DEVICE_CLOCK)
            .start(start)
            .end(start + 50_000 / TICK_NS)
            .name(S_KERNEL)
            .correlation(Some(corr))
            .kernel(Some(KernelInfo::blocks([64, 1, 1], [128, 1, 1])));
        e.emit(&Record::DeviceOp(op));
    }

    fn play(mut self, e: &mut Emitter, launches: u32) {
        self.definitions(e);
        for _ in 0..launches {
            self.launch(e);
            e.flush_if_due();
        }
        e.emit(&self.sync());
        let loss = Loss::default().pid(self.pid).time(now_ns()).cause(S_LOSS).count(2);
        e.emit(&Record::Loss(loss));
        e.flush();
    }
}

xpuprof_sdk::export_plugin!(source: FakeSource);
