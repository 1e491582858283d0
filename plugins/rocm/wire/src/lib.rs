//! # xpuprof-rocm-wire: what the ROCm agent says beyond `xpuprof-wire`'s common messages
//!
//! The common messages carry the launch sites, the raw vendor records (rocprofiler-sdk buffer
//! records, or roctracer activity records), drops, clock pairs and API names. What only ROCm has
//! comes from the SDK's *callbacks* (kernel symbols at code-object load, agents, roctx markers,
//! HIP stream bindings), whose payloads point into the process: the agent copies what it needs
//! into the backend-private messages below (numbers from [`wire::MSG_BACKEND_FIRST`]), so the
//! host never decodes a pointer. One crate for both ends, so agent and decoder agree on a byte.
//!
//! All integers little-endian; `str` is `len u32` + UTF-8 bytes.
//!
//! - [`MSG_API`]: `api u32` ([`Api`]), `major u32, minor u32, patch u32`: which tracing library
//!   feeds this stream; sent right after the hello, before any record.
//! - [`MSG_KERNELS`]: `count u32`, then `kernel_id u64, lds u32, scratch u32, sgprs u32,
//!   vgprs u32, name str` ([`Kernel`]).
//! - [`MSG_AGENTS`]: `count u32`, then `handle u64, kind u32, node u32, index i32, cus u32,
//!   memory u64, arch str, product str` ([`Agent`]).
//! - [`MSG_MARKERS`]: `count u32`, then `tid u32, op u32, time u64, text str` ([`Marker`]);
//!   `time` is already in the session clock.
//! - [`MSG_STREAMS`]: `count u32`, then `correlation u64, stream u64` ([`StreamUse`]): the API
//!   call with that internal correlation id ran on that HIP stream.
//!
//! The agent's options (`XPUPROF_ROCM_OPTS`) are declared here too ([`AgentOpts`]).

use xpuprof_wire::{self as wire, Reader};

mod options;

pub use options::{AgentOpts, ApiChoice};

/// Which tracing library the stream comes from.
pub const MSG_API: u8 = wire::MSG_BACKEND_FIRST;
/// Kernel symbols.
pub const MSG_KERNELS: u8 = wire::MSG_BACKEND_FIRST + 1;
/// Agents (devices and CPUs).
pub const MSG_AGENTS: u8 = wire::MSG_BACKEND_FIRST + 2;
/// roctx markers and ranges.
pub const MSG_MARKERS: u8 = wire::MSG_BACKEND_FIRST + 3;
/// HIP streams of API calls.
pub const MSG_STREAMS: u8 = wire::MSG_BACKEND_FIRST + 4;

/// The tracing library in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// rocprofiler-sdk (ROCm 6.2 and later): raw SDK buffer records, BOOTTIME timestamps.
    RocprofilerSdk,
    /// roctracer (ROCm before 6.2): raw activity records, timestamps on ROCr's system clock.
    Roctracer,
}

impl Api {
    fn code(self) -> u32 {
        match self {
            Api::RocprofilerSdk => 1,
            Api::Roctracer => 2,
        }
    }
}

/// Launch-entry domain of HIP API calls traced through rocprofiler-sdk (the operation id is
/// the SDK's HIP runtime API id).
pub const DOMAIN_SDK_HIP: u8 = 1;
/// Launch-entry domain of HIP API calls traced through roctracer (roctracer's HIP API id).
pub const DOMAIN_ROCTRACER_HIP: u8 = 2;
/// API-name domains of roctracer's HIP activity: this plus the activity's operation, with the
/// record's `kind` as the id (`CopyHostToDevice`: a copy's name says its direction).
pub const DOMAIN_ROCTRACER_OPS: u8 = 0x10;

/// A kernel symbol.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Kernel {
    /// The SDK's kernel id (what dispatch records name).
    pub kernel_id: u64,
    /// LDS bytes per work-group.
    pub lds: u32,
    /// Scratch bytes per work-item.
    pub scratch: u32,
    /// Scalar registers.
    pub sgprs: u32,
    /// Vector registers (architected + accumulation).
    pub vgprs: u32,
    /// Name as the code object has it (mangled).
    pub name: String,
}

/// An agent: a GPU or a CPU as the runtime enumerates it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Agent {
    /// The SDK's agent handle (what records name).
    pub handle: u64,
    /// 1 CPU, 2 GPU (the SDK's agent type).
    pub kind: u32,
    /// HSA node id.
    pub node: u32,
    /// Index among agents of its kind (the HIP device ordinal for GPUs).
    pub index: i32,
    /// Compute units.
    pub cus: u32,
    /// Local memory bytes.
    pub memory: u64,
    /// Architecture (`gfx942`).
    pub arch: String,
    /// Marketing name.
    pub product: String,
}

/// Marker operations.
pub mod marker_op {
    /// An instant marker (`roctxMarkA`).
    pub const MARK: u32 = 0;
    /// A range opens (`roctxRangePushA`).
    pub const PUSH: u32 = 1;
    /// The innermost open range of the thread closes (`roctxRangePop`).
    pub const POP: u32 = 2;
}

/// A roctx call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Marker {
    /// Calling thread.
    pub tid: u32,
    /// [`marker_op`].
    pub op: u32,
    /// Session-clock nanoseconds.
    pub time: u64,
    /// The message (empty for a pop).
    pub text: String,
}

/// An API call's HIP stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamUse {
    /// The call's internal correlation id.
    pub correlation: u64,
    /// The SDK's stream id handle.
    pub stream: u64,
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn get_str(r: &mut Reader<'_>) -> String {
    let n = r.u32() as usize;
    String::from_utf8_lossy(r.bytes(n)).into_owned()
}

/// Appends [`MSG_API`].
pub fn put_api(out: &mut Vec<u8>, api: Api, version: (u32, u32, u32)) {
    let at = wire::begin_message(out, MSG_API);
    for v in [api.code(), version.0, version.1, version.2] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    wire::end_message(out, at);
}

/// Reads [`MSG_API`]; `None` for an API this build does not know.
pub fn get_api(payload: &[u8]) -> Option<(Api, (u32, u32, u32))> {
    let mut r = Reader::new(payload);
    let api = match r.u32() {
        1 => Api::RocprofilerSdk,
        2 => Api::Roctracer,
        _ => return None,
    };
    let v = (r.u32(), r.u32(), r.u32());
    (!r.short).then_some((api, v))
}

/// Appends a [`MSG_KERNELS`] message.
pub fn put_kernels(out: &mut Vec<u8>, kernels: &[Kernel]) {
    let at = wire::begin_message(out, MSG_KERNELS);
    out.extend_from_slice(&(kernels.len() as u32).to_le_bytes());
    for k in kernels {
        out.extend_from_slice(&k.kernel_id.to_le_bytes());
        for v in [k.lds, k.scratch, k.sgprs, k.vgprs] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        put_str(out, &k.name);
    }
    wire::end_message(out, at);
}

/// Reads a [`MSG_KERNELS`] payload (a truncated tail is dropped).
pub fn get_kernels(payload: &[u8]) -> Vec<Kernel> {
    let mut r = Reader::new(payload);
    let n = r.u32();
    let mut v = Vec::new();
    for _ in 0..n {
        let k = Kernel {
            kernel_id: r.u64(),
            lds: r.u32(),
            scratch: r.u32(),
            sgprs: r.u32(),
            vgprs: r.u32(),
            name: get_str(&mut r),
        };
        if r.short {
            break;
        }
        v.push(k);
    }
    v
}

/// Appends a [`MSG_AGENTS`] message.
pub fn put_agents(out: &mut Vec<u8>, agents: &[Agent]) {
    let at = wire::begin_message(out, MSG_AGENTS);
    out.extend_from_slice(&(agents.len() as u32).to_le_bytes());
    for a in agents {
        out.extend_from_slice(&a.handle.to_le_bytes());
        out.extend_from_slice(&a.kind.to_le_bytes());
        out.extend_from_slice(&a.node.to_le_bytes());
        out.extend_from_slice(&a.index.to_le_bytes());
        out.extend_from_slice(&a.cus.to_le_bytes());
        out.extend_from_slice(&a.memory.to_le_bytes());
        put_str(out, &a.arch);
        put_str(out, &a.product);
    }
    wire::end_message(out, at);
}

/// Reads a [`MSG_AGENTS`] payload.
pub fn get_agents(payload: &[u8]) -> Vec<Agent> {
    let mut r = Reader::new(payload);
    let n = r.u32();
    let mut v = Vec::new();
    for _ in 0..n {
        let a = Agent {
            handle: r.u64(),
            kind: r.u32(),
            node: r.u32(),
            index: r.u32() as i32,
            cus: r.u32(),
            memory: r.u64(),
            arch: get_str(&mut r),
            product: get_str(&mut r),
        };
        if r.short {
            break;
        }
        v.push(a);
    }
    v
}

/// Appends one marker to an open [`MSG_MARKERS`] batch `out` (see [`finish_markers`]).
pub fn put_marker(out: &mut Vec<u8>, m: &Marker) {
    out.extend_from_slice(&m.tid.to_le_bytes());
    out.extend_from_slice(&m.op.to_le_bytes());
    out.extend_from_slice(&m.time.to_le_bytes());
    put_str(out, &m.text);
}

/// Wraps `count` markers written by [`put_marker`] into a [`MSG_MARKERS`] message.
pub fn finish_markers(out: &mut Vec<u8>, count: u32, body: &[u8]) {
    let at = wire::begin_message(out, MSG_MARKERS);
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(body);
    wire::end_message(out, at);
}

/// Reads a [`MSG_MARKERS`] payload.
pub fn get_markers(payload: &[u8]) -> Vec<Marker> {
    let mut r = Reader::new(payload);
    let n = r.u32();
    let mut v = Vec::new();
    for _ in 0..n {
        let m = Marker { tid: r.u32(), op: r.u32(), time: r.u64(), text: get_str(&mut r) };
        if r.short {
            break;
        }
        v.push(m);
    }
    v
}

/// Appends a [`MSG_STREAMS`] message.
pub fn put_streams(out: &mut Vec<u8>, uses: &[StreamUse]) {
    let at = wire::begin_message(out, MSG_STREAMS);
    out.extend_from_slice(&(uses.len() as u32).to_le_bytes());
    for u in uses {
        out.extend_from_slice(&u.correlation.to_le_bytes());
        out.extend_from_slice(&u.stream.to_le_bytes());
    }
    wire::end_message(out, at);
}

/// Reads a [`MSG_STREAMS`] payload.
pub fn get_streams(payload: &[u8]) -> Vec<StreamUse> {
    let mut r = Reader::new(payload);
    let n = r.u32();
    let mut v = Vec::new();
    for _ in 0..n {
        let u = StreamUse { correlation: r.u64(), stream: r.u64() };
        if r.short {
            break;
        }
        v.push(u);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_round_trips() {
        let mut b = Vec::new();
        put_api(&mut b, Api::Roctracer, (4, 1, 0));
        let k =
            Kernel { kernel_id: 7, lds: 1024, scratch: 16, sgprs: 24, vgprs: 40, name: "_Z4saxpyPf".into() };
        put_kernels(&mut b, std::slice::from_ref(&k));
        let a = Agent {
            handle: 9,
            kind: 2,
            node: 1,
            index: 0,
            cus: 304,
            memory: 1 << 30,
            arch: "gfx942".into(),
            product: "MI300X".into(),
        };
        put_agents(&mut b, std::slice::from_ref(&a));
        let m = Marker { tid: 5, op: marker_op::PUSH, time: 123, text: "step".into() };
        let mut body = Vec::new();
        put_marker(&mut body, &m);
        finish_markers(&mut b, 1, &body);
        let s = StreamUse { correlation: 11, stream: 3 };
        put_streams(&mut b, &[s]);
        let (msgs, used) = wire::split_messages(&b);
        assert_eq!(used, b.len());
        assert_eq!(get_api(msgs[0].payload), Some((Api::Roctracer, (4, 1, 0))));
        assert_eq!(get_kernels(msgs[1].payload), vec![k]);
        assert_eq!(get_agents(msgs[2].payload), vec![a]);
        assert_eq!(get_markers(msgs[3].payload), vec![m]);
        assert_eq!(get_streams(msgs[4].payload), vec![s]);
        assert!(msgs.iter().all(|m| m.ty >= wire::MSG_BACKEND_FIRST));
    }

    #[test]
    fn truncated_payloads_keep_what_is_whole() {
        let mut b = Vec::new();
        let k = Kernel { name: "k".into(), ..Kernel::default() };
        put_kernels(&mut b, &[k.clone(), k.clone()]);
        let (msgs, _) = wire::split_messages(&b);
        let p = msgs[0].payload;
        assert_eq!(get_kernels(&p[..p.len() - 1]), vec![k]);
    }
}
