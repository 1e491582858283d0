//! The collectives of one rank of a scripted job (`collectives = N`): the target process runs N
//! all-reduces on a scripted GPU of its own, 1 ms apart, ten to a `step` range. Ranks arrive 10
//! µs apart by rank, except rank `slow_rank`, which arrives 300 µs late at every tenth one,
//! after an off-CPU wait in `straggle (train.py:42)`; every rank's all-reduce #k ends at the
//! same session time, 30 µs after the first rank's arrival or 20 µs after a late one (the last
//! rank to arrive releases them all). `clock_behind_ns`
//! stamps them all as a host whose session clock reads that much less would.

use xpuprof_sdk::prelude::*;

/// Session time of the first all-reduce.
const BASE: u64 = 2_000_000_000;
/// Bytes each all-reduce reduces.
pub const BYTES: u64 = 4 << 20;

/// What the target's rank does.
pub struct Job {
    /// The target's pid.
    pub pid: u32,
    /// Its rank (`RANK` of the environment the source runs in, as the target's).
    pub rank: u32,
    /// The rank that is late at every tenth all-reduce.
    pub slow_rank: u32,
    /// All-reduces.
    pub count: u32,
    /// How far this host's session clock is behind.
    pub behind_ns: u64,
}

/// Ids of the definitions, above those of the script and of `define_target`.
const ID: u32 = 2_000_000;

impl Job {
    /// Emits the definitions, the all-reduces, the steps and the straggler's waits.
    pub fn emit(&self, e: &mut Emitter) {
        let at = |t: u64| t.saturating_sub(self.behind_ns);
        let (dev, stream) = (DeviceId(ID), StreamId(ID));
        let names = ["ncclScripted_AllReduce", "Scripted GPU", "step", "main (train.py:10)"];
        let more = ["train_step (train.py:30)", "straggle (train.py:42)"];
        for (i, text) in names.iter().chain(more.iter()).enumerate() {
            e.emit(&Record::Str(StrDef::new(StrId(ID + i as u32), *text)));
        }
        let mut uuid = [0x5c; 16];
        uuid[0] = self.rank as u8;
        e.emit(&Record::Device(
            DeviceDef::default().id(dev).vendor(Vendor::Test).name(StrId(ID + 1)).uuid(uuid).index(0),
        ));
        e.emit(&Record::Stream(StreamDef::default().id(stream).device(dev).pid(self.pid).native_id(17)));
        for f in 0..3u32 {
            e.emit(&Record::Frame(
                FrameDef::default()
                    .id(FrameId(ID + f))
                    .kind(FrameKind::Synthetic)
                    .pid(self.pid)
                    .name(StrId(ID + 5 - f)),
            ));
        }
        let wait = StackId(ID);
        e.emit(&Record::Stack(StackDef::new(wait, vec![FrameId(ID), FrameId(ID + 1), FrameId(ID + 2)])));
        for k in 0..u64::from(self.count) {
            let t = BASE + k * 1_000_000;
            let late = self.rank == self.slow_rank && k % 10 == 9;
            let start = if late { t + 400_000 } else { t + 100_000 + 10_000 * u64::from(self.rank) };
            let end = if k % 10 == 9 { t + 420_000 } else { t + 130_000 };
            if late {
                let sample = CpuSample::default().pid(self.pid).tid(self.pid).time(at(start - 10_000));
                e.emit(&Record::CpuSample(sample.kind(SampleKind::OffCpu).weight(300_000).stack(wait)));
            }
            let op = DeviceOp::default()
                .kind(DeviceOpKind::Kernel)
                .pid(self.pid)
                .device(dev)
                .stream(stream)
                .start(at(start))
                .end(at(end))
                .name(StrId(ID))
                .bytes(BYTES)
                .collective(CollectiveOp::AllReduce);
            e.emit(&Record::DeviceOp(op));
            if k % 10 == 9 {
                let step = Annotation::default().pid(self.pid).tid(self.pid).name(StrId(ID + 2));
                e.emit(&Record::Range(step.start(at(t - 9_000_000)).end(at(t + 600_000))));
            }
        }
        e.flush();
    }
}
