//! The decoder of the agents' streams ([`crate::wire`]) into SDK records: its state and the
//! lookups the message handlers share.
//!
//! One [`Decoder`] serves every connection of a session (one per CUDA process), so all
//! definitions share one id space. Launch stacks arrive as raw return addresses plus the
//! process's module map; they become `ModuleDef` + `FrameDef::default().kind(FileOffset)` (address =
//! return address − 1, the call instruction, − mapping start + mapping file offset) so the host
//! can symbolise them after the process is gone. What each message does is in `stream.rs` (the
//! decoder as the toolbox's `KitDecoder`); activity records are decoded in [`crate::activity`].

use xpuprof_sdk::hash::IdMap;

use xpuprof_sdk::model::*;
use xpuprof_sdk::{Emitter, Logger};
use xpuprof_toolbox::agent_host::{AgentConn, AgentDecoder};

/// Counters of this backend (the kit's, shared with every agent-backed decoder, are in
/// `AgentDecoder::counts`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stats {
    /// API calls emitted.
    pub api_calls: u64,
    /// Records of a kind this decoder does not use.
    pub skipped_kinds: u64,
    /// Records smaller than every known version of their kind.
    pub unknown_versions: u64,
}

/// An API name, interned on first use.
#[derive(Debug, Clone)]
pub(crate) enum ApiName {
    Text(String),
    Id(StrId, ApiKind),
}

/// A device op waiting for its device's definition: device ordinal, native stream, a peer
/// copy's source and destination ordinals, the op.
pub(crate) type Parked = (u32, Option<u32>, Option<(u32, u32)>, DeviceOp);

/// Per-connection (per-process) state.
#[derive(Debug, Default)]
pub struct Conn {
    /// What the kit's messages said (process, hello, module map, strings, Python frames).
    pub(crate) agent: AgentConn,
    pub(crate) monotonic: bool,
    pub(crate) api_from_callbacks: bool,
    pub(crate) api_names: IdMap<(u8, u32), ApiName>,
    pub(crate) devices: IdMap<u32, DeviceId>,
    pub(crate) ctx_device: IdMap<u32, u32>,
    pub(crate) streams: IdMap<(u32, u32), StreamId>,
    /// Device ops waiting for their device's definition.
    pub(crate) pending: Vec<Parked>,
    pub(crate) open_ranges: IdMap<u32, (u64, StrId, StrId, u32)>,
    /// CUDA graph nodes: which call built each one.
    pub(crate) graphs: crate::graphs::GraphNodes,
    /// Collective arguments of launches, waiting for their kernels.
    pub(crate) collectives: crate::collective::PendingArgs,
}

xpuprof_toolbox::kit_conn!(Conn);

/// Decoder state shared by all connections.
#[derive(Debug)]
pub struct Decoder {
    /// The kit's part: definitions, launch stacks, connections, the shared counters.
    pub kit: AgentDecoder<Conn>,
    pub(crate) devices_by_uuid: IdMap<[u8; 16], DeviceId>,
    pub(crate) next_device: u32,
    pub(crate) next_stream: u32,
    /// This backend's counters.
    pub stats: Stats,
    /// PC sampling: stall reasons, cubins' line tables, counters.
    pub(crate) pc: crate::pc_sampling::PcSamples,
}

/// Cause strings of the losses this plugin reports.
pub const LOSS_DROPPED: &str = "cupti dropped records";
/// Messages an agent's channel dropped (host gone or too slow).
pub const LOSS_AGENT_CHANNEL: &str = "cupti agent messages dropped";
/// Records of a version this decoder does not know.
pub const LOSS_UNKNOWN_VERSION: &str = "cupti records of an unknown version";

impl Decoder {
    /// A decoder logging through `log`.
    pub fn new(log: Logger) -> Self {
        Self {
            kit: AgentDecoder::new(log, LOSS_AGENT_CHANNEL),
            devices_by_uuid: IdMap::default(),
            next_device: 1,
            next_stream: 1,
            stats: Stats::default(),
            pc: Default::default(),
        }
    }

    /// PC sampling's instruction text: `Some(nvdisasm)` disassembles each sampled cubin with
    /// that tool, so the samples carry their SASS; `None`: none was found (the end-of-run line
    /// says so). Without this call samples carry no SASS text.
    pub fn disassemble_with(&mut self, nvdisasm: Option<std::path::PathBuf>) {
        use crate::pc_sampling::{Disassembler, SassSetting};
        self.pc.sass = nvdisasm.map_or(SassSetting::NotFound, |p| SassSetting::With(Disassembler::at(p)));
    }

    /// PC sampling's end-of-run line so far (`None` when nothing was sampled).
    pub fn pc_report(&self) -> Option<String> {
        self.pc.report()
    }

    /// The interned name of API `cbid` of `domain` and what the call does, or none (and
    /// [`ApiKind::Unknown`]) if the agent never named it.
    pub(crate) fn api_name(
        &mut self,
        conn: u64,
        domain: u8,
        cbid: u32,
        out: &mut Emitter,
    ) -> (StrId, ApiKind) {
        let Some(c) = self.kit.conns.get_mut(&conn) else { return (StrId::NONE, ApiKind::Unknown) };
        match c.api_names.get(&(domain, cbid)) {
            Some(ApiName::Id(id, kind)) => (*id, *kind),
            Some(ApiName::Text(t)) => {
                let t = t.clone();
                let kind = crate::api_kind::classify(&t);
                let id = self.kit.strs.string(out, &t);
                if let Some(c) = self.kit.conns.get_mut(&conn) {
                    c.api_names.insert((domain, cbid), ApiName::Id(id, kind));
                }
                (id, kind)
            }
            None => (StrId::NONE, ApiKind::Unknown),
        }
    }

    pub(crate) fn thread(&mut self, pid: u32, tid: u32, out: &mut Emitter) {
        if tid != 0 {
            self.kit.strs.thread(out, pid, tid, "");
        }
    }
}

/// `cudaLaunchKernel_v7000` → `cudaLaunchKernel` (CUPTI's callback names carry a version).
pub fn api_display_name(name: &str) -> &str {
    match name.rfind("_v") {
        Some(i) if i > 0 && name[i + 2..].bytes().all(|b| b.is_ascii_digit()) && name.len() > i + 2 => {
            &name[..i]
        }
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_cupti_version_suffix() {
        assert_eq!(api_display_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
        assert_eq!(api_display_name("cudaLaunchKernel_ptsz_v7000"), "cudaLaunchKernel_ptsz");
        assert_eq!(api_display_name("cuLaunchKernel"), "cuLaunchKernel");
        assert_eq!(api_display_name("cuMemcpyHtoD_v2"), "cuMemcpyHtoD");
        assert_eq!(api_display_name("x_v"), "x_v");
    }
}
