//! One id space for several recordings: each archive numbers its strings, devices, streams,
//! modules, frames and stacks from 1, and its processes by their pids on their own host. Every
//! definition gets a merged id (strings are shared by text, so a kernel of the same name on
//! every rank is one name), every event's ids are translated, and its timestamps moved onto the
//! merged clock. A pid already taken by another recording (two hosts may run the same pid) is
//! given another number, above every real pid; the process keeps its real pid in its name.
//!
//! Not the pipeline's interner (`pipeline/intern.rs`): that one deduplicates devices and
//! streams by what they are (index, uuid, pid), which would fold two hosts' "GPU 0" into one;
//! here every recording's definitions stay its own.

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::*;

use super::align::Alignment;
use crate::pipeline::intern::SourceIds;

/// Largest pid Linux gives (`pid_max` is at most 2^22); renumbered pids lie above it.
const PID_LIMIT: u32 = 1 << 22;

/// The merged id space.
#[derive(Debug, Default)]
pub struct Space {
    strs: IdMap<Box<str>, StrId>,
    next: [u32; 5],
    /// Which recording holds each merged pid.
    pids: IdMap<u32, usize>,
    /// Pids renumbered because another recording had them.
    pub pids_renumbered: u64,
}

const DEVICE: usize = 0;
const STREAM: usize = 1;
const MODULE: usize = 2;
const FRAME: usize = 3;
const STACK: usize = 4;

impl Space {
    fn fresh(&mut self, kind: usize) -> u32 {
        self.next[kind] += 1;
        self.next[kind]
    }
}

/// One recording's ids in the merged space.
#[derive(Debug)]
pub struct Recording {
    index: usize,
    pub align: Alignment,
    /// Its ids in the merged space, looked up as the pipeline looks up a source's (references
    /// to ids the recording never defined become none and are counted there).
    ids: SourceIds,
    pids: IdMap<u32, u32>,
}

impl Recording {
    /// Recording number `index` of the merge, moved by `align`.
    pub fn new(index: usize, align: Alignment) -> Self {
        Self { index, align, ids: SourceIds::default(), pids: IdMap::default() }
    }

    /// The merged pid of this recording's `pid` (0, machine-wide, stays 0).
    fn pid(&mut self, space: &mut Space, pid: u32) -> u32 {
        if pid == 0 {
            return 0;
        }
        if let Some(p) = self.pids.get(&pid) {
            return *p;
        }
        let mut merged = pid;
        while space.pids.get(&merged).is_some_and(|owner| *owner != self.index) {
            merged = merged.wrapping_add(PID_LIMIT).max(PID_LIMIT);
        }
        if merged != pid {
            space.pids_renumbered += 1;
        }
        space.pids.insert(merged, self.index);
        self.pids.insert(pid, merged);
        merged
    }

    /// Translates `r` into the merged space and pushes what it becomes onto `out`: a string
    /// another recording already defined becomes nothing; every other record one record.
    pub fn translate(&mut self, space: &mut Space, r: Record, out: &mut Vec<Record>) {
        if r.is_definition() {
            self.definition(space, r, out);
        } else {
            out.push(r);
            if let Some(r) = out.last_mut() {
                self.event(space, r);
            }
        }
    }

    fn definition(&mut self, space: &mut Space, r: Record, out: &mut Vec<Record>) {
        let r = match r {
            Record::Str(mut d) => {
                let next = StrId(space.strs.len() as u32 + 1);
                let g = *space.strs.entry(d.text.as_str().into()).or_insert(next);
                self.ids.strs.insert(d.id.0, g);
                if g != next {
                    return;
                }
                d.id = g;
                Record::Str(d)
            }
            Record::Process(d) => {
                let pid = self.pid(space, d.pid);
                let (command, host, name) =
                    (self.ids.str(d.command), self.ids.str(d.host), self.ids.str(d.name));
                Record::Process(d.pid(pid).command(command).host(host).name(name))
            }
            Record::Thread(d) => {
                let (pid, name) = (self.pid(space, d.pid), self.ids.str(d.name));
                Record::Thread(d.pid(pid).name(name))
            }
            Record::Device(d) => {
                let id = DeviceId(space.fresh(DEVICE));
                self.ids.devices.insert(d.id.0, id);
                let (name, arch, vendor, parent) = (
                    self.ids.str(d.name),
                    self.ids.str(d.arch),
                    self.ids.str(d.vendor_name),
                    self.ids.device(d.parent),
                );
                Record::Device(d.id(id).name(name).arch(arch).vendor_name(vendor).parent(parent))
            }
            Record::Stream(d) => {
                let id = StreamId(space.fresh(STREAM));
                self.ids.streams.insert(d.id.0, id);
                let (device, pid, name, parent) = (
                    self.ids.device(d.device),
                    self.pid(space, d.pid),
                    self.ids.str(d.name),
                    self.ids.stream(d.parent),
                );
                Record::Stream(d.id(id).device(device).pid(pid).name(name).parent(parent))
            }
            Record::Module(d) => {
                let id = ModuleId(space.fresh(MODULE));
                self.ids.modules.insert(d.id.0, id);
                let path = self.ids.str(d.path);
                Record::Module(d.id(id).path(path))
            }
            Record::Frame(d) => {
                let id = FrameId(space.fresh(FRAME));
                self.ids.frames.insert(d.id.0, id);
                let (module, pid, name) =
                    (self.ids.module(d.module), self.pid(space, d.pid), self.ids.str(d.name));
                let inlined = d.inlined.iter().map(|s| self.ids.str(*s)).collect::<Vec<_>>();
                let file = self.ids.str(d.file);
                Record::Frame(d.id(id).module(module).pid(pid).name(name).inlined(inlined).file(file))
            }
            Record::Stack(d) => {
                let id = StackId(space.fresh(STACK));
                self.ids.stacks.insert(d.id.0, id);
                let frames = d.frames.iter().map(|f| self.ids.frame(*f)).collect::<Vec<_>>();
                Record::Stack(d.id(id).frames(frames))
            }
            Record::ClockDomain(d) => {
                let name = self.ids.str(d.name);
                Record::ClockDomain(d.name(name))
            }
            other => other,
        };
        out.push(r);
    }

    fn launch(&mut self, l: &mut Option<LaunchRef>) {
        if let Some(l) = l {
            l.stack = self.ids.stack(l.stack);
            l.api = self.ids.str(l.api);
            l.time = self.align.at(l.time);
        }
    }

    /// Translates event `r` in place: ids, pids and timestamps.
    fn event(&mut self, space: &mut Space, r: &mut Record) {
        let a = self.align;
        match r {
            Record::ApiCall(c) => {
                (c.pid, c.name) = (self.pid(space, c.pid), self.ids.str(c.name));
                (c.start, c.end) = (a.at(c.start), a.at(c.end));
            }
            Record::DeviceOp(op) => {
                op.pid = self.pid(space, op.pid);
                (op.device, op.stream, op.name) =
                    (self.ids.device(op.device), self.ids.stream(op.stream), self.ids.str(op.name));
                (op.src_device, op.dst_device) =
                    (self.ids.device(op.src_device), self.ids.device(op.dst_device));
                (op.start, op.end) = (a.at(op.start), a.at(op.end));
                self.launch(&mut op.launch);
                self.launch(&mut op.recorded);
            }
            Record::LaunchSite(s) => {
                (s.pid, s.api, s.stack) =
                    (self.pid(space, s.pid), self.ids.str(s.api), self.ids.stack(s.stack));
                s.time = a.at(s.time);
            }
            Record::CpuSample(s) => {
                (s.pid, s.stack, s.time) = (self.pid(space, s.pid), self.ids.stack(s.stack), a.at(s.time));
            }
            Record::Marker(m) | Record::Range(m) => {
                (m.pid, m.name, m.domain) =
                    (self.pid(space, m.pid), self.ids.str(m.name), self.ids.str(m.domain));
                (m.start, m.end) = (a.at(m.start), a.at(m.end));
            }
            Record::Counter(c) => {
                (c.pid, c.name, c.device) =
                    (self.pid(space, c.pid), self.ids.str(c.name), self.ids.device(c.device));
                c.time = a.at(c.time);
            }
            Record::Loss(l) => {
                (l.pid, l.cause, l.time) = (self.pid(space, l.pid), self.ids.str(l.cause), a.at(l.time));
            }
            Record::Overhead(o) => {
                (o.pid, o.name, o.device) =
                    (self.pid(space, o.pid), self.ids.str(o.name), self.ids.device(o.device));
                (o.start, o.end) = (a.at(o.start), a.at(o.end));
            }
            Record::Window(w) => {
                w.pid = self.pid(space, w.pid);
                (w.start, w.end) = (a.at(w.start), a.at(w.end));
            }
            Record::DeviceSample(d) => {
                (d.pid, d.device) = (self.pid(space, d.pid), self.ids.device(d.device));
                (d.kernel, d.stall, d.file) =
                    (self.ids.str(d.kernel), self.ids.str(d.stall), self.ids.str(d.file));
                (d.instruction, d.call_file) = (self.ids.str(d.instruction), self.ids.str(d.call_file));
                (d.start, d.end) = (a.at(d.start), a.at(d.end));
            }
            Record::Retired(t) => {
                (t.pid, t.time) = (self.pid(space, t.pid), a.at(t.time));
            }
            Record::ClockSync(_) => {}
            _ => {}
        }
    }
}

/// The time a record is merged by, on its recording's own clock; definitions go first (0).
pub fn time_of(r: &Record) -> u64 {
    match r {
        Record::ApiCall(c) => c.start,
        Record::DeviceOp(op) => op.start,
        Record::LaunchSite(s) => s.time,
        Record::CpuSample(s) => s.time,
        Record::Marker(m) | Record::Range(m) => m.start,
        Record::Counter(c) => c.time,
        Record::Loss(l) => l.time,
        Record::Overhead(o) => o.start,
        Record::Window(w) => w.start,
        Record::DeviceSample(d) => d.start,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recording(index: usize, shift_ns: u64) -> Recording {
        Recording::new(index, Alignment { shift_ns, error_ns: Some(0), fine: None })
    }

    fn defs(text: &str) -> Vec<Record> {
        vec![
            Record::Str(StrDef::new(StrId(1), "python3 train.py")),
            Record::Str(StrDef::new(StrId(2), text)),
            Record::Process(ProcessDef::default().pid(7).command(StrId(1))),
            Record::Device(DeviceDef::default().id(DeviceId(1)).name(StrId(2))),
            Record::Frame(FrameDef::default().id(FrameId(1)).name(StrId(2))),
            Record::Stack(StackDef::default().id(StackId(1)).frames(vec![FrameId(1)])),
        ]
    }

    #[test]
    fn two_recordings_keep_their_ids_apart_and_share_strings_by_text() {
        let mut space = Space::default();
        let (mut a, mut b) = (recording(0, 0), recording(1, 500));
        let mut out = Vec::new();
        for r in defs("gemm") {
            a.translate(&mut space, r, &mut out);
        }
        for r in defs("conv") {
            b.translate(&mut space, r, &mut out);
        }
        // b's command is a's string 1 again: not defined twice; its "conv" is string 3.
        let strs: Vec<_> =
            out.iter().filter_map(|r| if let Record::Str(d) = r { Some(d.id.0) } else { None }).collect();
        assert_eq!(strs, [1, 2, 3]);
        let pids: Vec<_> =
            out.iter().filter_map(|r| if let Record::Process(d) = r { Some(d.pid) } else { None }).collect();
        assert_eq!(pids, [7, 7 + PID_LIMIT], "the second host's pid 7 is another process");
        let devices: Vec<_> = out
            .iter()
            .filter_map(|r| if let Record::Device(d) = r { Some((d.id.0, d.name.0)) } else { None })
            .collect();
        assert_eq!(devices, [(1, 2), (2, 3)]);
        out.clear();
        let op = DeviceOp::default().pid(7).device(DeviceId(1)).name(StrId(2)).start(1000).end(1100);
        let launch = LaunchRef::default().stack(StackId(1)).time(900).tid(7);
        b.translate(&mut space, Record::DeviceOp(op.launch(Some(launch))), &mut out);
        let Record::DeviceOp(op) = &out[0] else { panic!() };
        assert_eq!((op.pid, op.device.0, op.name.0), (7 + PID_LIMIT, 2, 3));
        assert_eq!((op.start, op.end), (1500, 1600));
        let l = op.launch.unwrap();
        assert_eq!((l.stack.0, l.time), (2, 1400));
        assert_eq!((a.ids.dangling, b.ids.dangling), (0, 0));
    }
}
