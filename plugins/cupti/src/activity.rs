//! CUPTI activity records → SDK events. Each record is read with the layout of its version
//! ([`crate::record_offsets`]); strings behind pointer fields come from the agent's `MSG_STRINGS`.

use xpuprof_sdk::model::*;
use xpuprof_sdk::Emitter;

use crate::decode::Decoder;
use crate::record_offsets::{self as offsets, pick};

/// Clock domain of CUPTI's own timestamps (when the timestamp callback was unavailable).
pub const CUPTI_CLOCK: ClockDomain = ClockDomain(0x0C00_0001);

// CUpti_ActivityKind values (stable across CUPTI versions).
const KIND_MEMCPY: u32 = 1;
const KIND_MEMSET: u32 = 2;
const KIND_KERNEL: u32 = 3;
const KIND_DRIVER: u32 = 4;
const KIND_RUNTIME: u32 = 5;
const KIND_DEVICE: u32 = 8;
const KIND_CONTEXT: u32 = 9;
const KIND_CONCURRENT_KERNEL: u32 = 10;
const KIND_MARKER: u32 = 12;
const KIND_OVERHEAD: u32 = 17;
const KIND_MEMCPY2: u32 = 22;
const KIND_SYNCHRONIZATION: u32 = 38;
const KIND_MEMORY2: u32 = 49;

fn u8_at(b: &[u8], at: usize) -> u8 {
    b.get(at).copied().unwrap_or(0)
}
fn u16_at(b: &[u8], at: usize) -> u16 {
    b.get(at..at + 2).and_then(|s| s.try_into().ok()).map(u16::from_le_bytes).unwrap_or(0)
}
pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4).and_then(|s| s.try_into().ok()).map(u32::from_le_bytes).unwrap_or(0)
}
pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8).and_then(|s| s.try_into().ok()).map(u64::from_le_bytes).unwrap_or(0)
}

/// Maps `CUpti_ActivityMemcpyKind` to the SDK's copy direction.
pub fn copy_kind(k: u8) -> CopyKind {
    match k {
        1 => CopyKind::HostToDevice,
        2 | 4 => CopyKind::DeviceToHost,
        3 => CopyKind::HostToDevice,
        5..=8 => CopyKind::DeviceToDevice,
        9 => CopyKind::HostToHost,
        10 => CopyKind::PeerToPeer,
        _ => CopyKind::Unknown,
    }
}

/// Decodes one record of connection `conn`.
pub fn record(d: &mut Decoder, conn: u64, rec: &[u8], out: &mut Emitter) {
    match u32_at(rec, 0) {
        KIND_KERNEL | KIND_CONCURRENT_KERNEL => kernel(d, conn, rec, out),
        KIND_MEMCPY => memcpy(d, conn, rec, false, out),
        KIND_MEMCPY2 => memcpy(d, conn, rec, true, out),
        KIND_MEMSET => memset(d, conn, rec, out),
        KIND_SYNCHRONIZATION => sync(d, conn, rec, out),
        KIND_MEMORY2 => memory(d, conn, rec, out),
        KIND_MARKER => marker(d, conn, rec, out),
        KIND_DEVICE => crate::devices::record(d, conn, rec, out),
        KIND_CONTEXT => context(d, conn, rec),
        KIND_OVERHEAD => overhead(d, conn, rec, out),
        KIND_RUNTIME | KIND_DRIVER => api(d, conn, rec, out),
        _ => d.stats.skipped_kinds += 1,
    }
}

/// The connection's clock domain for CUPTI's timestamps (device and host times alike: the host
/// converts [`CUPTI_CLOCK`] through the agent's pairings), and its process.
fn clock(d: &Decoder, conn: u64) -> (ClockDomain, u32) {
    match d.kit.conns.get(&conn) {
        Some(c) if c.monotonic || c.agent.runtime_version == 0 => (ClockDomain::SESSION, c.agent.pid),
        Some(c) => (CUPTI_CLOCK, c.agent.pid),
        None => (ClockDomain::SESSION, 0),
    }
}

fn text(d: &mut Decoder, conn: u64, ptr: u64, out: &mut Emitter) -> StrId {
    if ptr == 0 {
        return StrId::NONE;
    }
    d.kit.agent_text(conn, ptr, "[unnamed]", out)
}

fn stream(
    d: &mut Decoder,
    conn: u64,
    device: DeviceId,
    ordinal: u32,
    native: u32,
    out: &mut Emitter,
) -> StreamId {
    let next = &mut d.next_stream;
    let c = d.kit.conns.entry(conn).or_default();
    if let Some(s) = c.streams.get(&(ordinal, native)) {
        return *s;
    }
    let id = StreamId(*next);
    *next += 1;
    c.streams.insert((ordinal, native), id);
    let def = StreamDef::default().id(id).device(device).pid(c.agent.pid).native_id(native as u64);
    out.emit(&Record::Stream(def.kind(QueueKind::CudaStream)));
    id
}

/// Emits a device op, or parks it until its device's definition arrives ([`crate::devices`]).
/// `ends` are a peer copy's source and destination device ordinals.
pub(crate) fn emit_op(
    d: &mut Decoder,
    conn: u64,
    ordinal: u32,
    native_stream: Option<u32>,
    ends: Option<(u32, u32)>,
    mut op: DeviceOp,
    out: &mut Emitter,
) {
    let devices = d.kit.conns.get(&conn).map(|c| &c.devices);
    let device_of = |o: u32| devices.and_then(|m| m.get(&o).copied());
    let Some(dev) = device_of(ordinal) else {
        d.kit.conns.entry(conn).or_default().pending.push((ordinal, native_stream, ends, op));
        return;
    };
    op.device = dev;
    // The copy's ends: the host side is no device; a peer copy names both devices.
    match (op.copy, ends) {
        (CopyKind::HostToDevice, _) => op.dst_device = dev,
        (CopyKind::DeviceToHost, _) => op.src_device = dev,
        (CopyKind::DeviceToDevice, _) => (op.src_device, op.dst_device) = (dev, dev),
        (_, Some((src, dst))) => {
            op.src_device = device_of(src).unwrap_or(DeviceId::NONE);
            op.dst_device = device_of(dst).unwrap_or(DeviceId::NONE);
        }
        _ => {}
    }
    if let Some(s) = native_stream {
        op.stream = stream(d, conn, dev, ordinal, s, out);
    }
    d.kit.counts.device_ops += 1;
    if op.kind == DeviceOpKind::Kernel {
        d.kit.counts.kernels += 1;
    }
    out.emit(&Record::DeviceOp(op));
}

fn base_op(kind: DeviceOpKind, pid: u32, clock: ClockDomain, start: u64, end: u64, corr: u32) -> DeviceOp {
    DeviceOp::default()
        .kind(kind)
        .pid(pid)
        .start(start)
        .end(end)
        .clock(clock)
        .correlation((corr != 0).then_some(Correlation { backend: backend::CUDA, id: corr as u64 }))
}

/// Sets the graph ids of work a graph ran and its submission link: the graph, the call that
/// built the node ([`crate::graphs`]), the graph launch that ran it.
/// `kernel` is the kernel's name pointer in the record (0 for other work).
fn graph(d: &mut Decoder, conn: u64, op: &mut DeviceOp, id: u32, node: u64, kernel: u64) {
    if id == 0 && node == 0 {
        return;
    }
    op.graph = Some(GraphInfo::default().graph(id as u64).node(node));
    let launch = op.correlation.map_or(0, |c| c.id as u32);
    if let Some(c) = d.kit.conns.get_mut(&conn) {
        let name = c.agent.strings.get(&kernel).map(String::as_str);
        op.submission = Some(c.graphs.submission(id, node, launch, name));
    }
}

fn kernel(d: &mut Decoder, conn: u64, rec: &[u8], out: &mut Emitter) {
    let Some(l) = pick(&offsets::KERNELS, rec.len()) else {
        d.stats.unknown_versions += 1;
        return;
    };
    let (clk, pid) = clock(d, conn);
    let mut op = base_op(
        DeviceOpKind::Kernel,
        pid,
        clk,
        u64_at(rec, l.start),
        u64_at(rec, l.end),
        u32_at(rec, l.correlation),
    );
    op.name = text(d, conn, u64_at(rec, l.name), out);
    op.collective =
        d.kit.agent_string(conn, u64_at(rec, l.name)).map_or(CollectiveOp::None, crate::collective::of);
    if let Some(c) = d.kit.conns.get_mut(&conn) {
        c.collectives.apply(&mut op);
    }
    let dims = |at: usize| [u32_at(rec, at), u32_at(rec, at + 4), u32_at(rec, at + 8)];
    op.kernel = Some(
        KernelInfo::default()
            .grid(dims(l.grid))
            .block(dims(l.block))
            .shared_memory(u32_at(rec, l.static_shared).saturating_add(u32_at(rec, l.dynamic_shared)))
            .registers(u16_at(rec, l.registers) as u32),
    );
    graph(d, conn, &mut op, u32_at(rec, l.graph), u64_at(rec, l.graph_node), u64_at(rec, l.name));
    emit_op(d, conn, u32_at(rec, l.device), Some(u32_at(rec, l.stream)), None, op, out);
}

fn memcpy(d: &mut Decoder, conn: u64, rec: &[u8], peer: bool, out: &mut Emitter) {
    let versions: &[(usize, offsets::Memcpy)] = if peer { &offsets::PEER_COPIES } else { &offsets::MEMCPYS };
    let Some(l) = pick(versions, rec.len()) else {
        d.stats.unknown_versions += 1;
        return;
    };
    let (clk, pid) = clock(d, conn);
    let mut op = base_op(
        DeviceOpKind::Memcpy,
        pid,
        clk,
        u64_at(rec, l.start),
        u64_at(rec, l.end),
        u32_at(rec, l.correlation),
    );
    op.bytes = u64_at(rec, l.bytes);
    op.copy = if peer { CopyKind::PeerToPeer } else { copy_kind(u8_at(rec, l.copy_kind)) };
    graph(d, conn, &mut op, u32_at(rec, l.graph), u64_at(rec, l.graph_node), 0);
    let ends = l.ends.map(|(src, dst)| (u32_at(rec, src), u32_at(rec, dst)));
    emit_op(d, conn, u32_at(rec, l.device), Some(u32_at(rec, l.stream)), ends, op, out);
}

fn memset(d: &mut Decoder, conn: u64, rec: &[u8], out: &mut Emitter) {
    let Some(l) = pick(&offsets::MEMSETS, rec.len()) else {
        d.stats.unknown_versions += 1;
        return;
    };
    let (clk, pid) = clock(d, conn);
    let mut op = base_op(
        DeviceOpKind::Memset,
        pid,
        clk,
        u64_at(rec, l.start),
        u64_at(rec, l.end),
        u32_at(rec, l.correlation),
    );
    op.bytes = u64_at(rec, l.bytes);
    graph(d, conn, &mut op, u32_at(rec, l.graph), u64_at(rec, l.graph_node), 0);
    emit_op(d, conn, u32_at(rec, l.device), Some(u32_at(rec, l.stream)), None, op, out);
}

const SYNC_NAMES: [&str; 5] = [
    "sync: unknown",
    "sync: cudaEventSynchronize",
    "sync: cudaStreamWaitEvent",
    "sync: cudaStreamSynchronize",
    "sync: cudaDeviceSynchronize",
];

fn sync(d: &mut Decoder, conn: u64, rec: &[u8], out: &mut Emitter) {
    if rec.len() < offsets::SYNC_MIN {
        d.stats.unknown_versions += 1;
        return;
    }
    let [ty, start, end, corr, ctx, stream] = offsets::SYNC;
    let (clk, pid) = clock(d, conn);
    let mut op =
        base_op(DeviceOpKind::Sync, pid, clk, u64_at(rec, start), u64_at(rec, end), u32_at(rec, corr));
    op.name =
        d.kit.strs.string(out, SYNC_NAMES.get(u32_at(rec, ty) as usize).copied().unwrap_or(SYNC_NAMES[0]));
    let ordinal =
        d.kit.conns.get(&conn).and_then(|c| c.ctx_device.get(&u32_at(rec, ctx)).copied()).unwrap_or(0);
    let s = u32_at(rec, stream);
    emit_op(d, conn, ordinal, (s != u32::MAX).then_some(s), None, op, out);
}

fn memory(d: &mut Decoder, conn: u64, rec: &[u8], out: &mut Emitter) {
    if rec.len() < offsets::MEMORY_MIN {
        d.stats.unknown_versions += 1;
        return;
    }
    let [oper, corr, bytes, ts, _pid, device, _ctx, stream] = offsets::MEMORY;
    let kind = match u32_at(rec, oper) {
        1 => DeviceOpKind::Alloc,
        2 => DeviceOpKind::Free,
        _ => return,
    };
    let (clk, pid) = clock(d, conn);
    let t = u64_at(rec, ts);
    let corr = u32_at(rec, corr);
    let mut op = base_op(kind, pid, clk, t, t, corr);
    op.bytes = u64_at(rec, bytes);
    if corr == 0 {
        // Not caused by an API call of the program (the driver's own allocations, e.g. when it
        // loads a module lazily): say so instead of leaving it nameless.
        op.name = d.kit.strs.string(out, "driver-internal");
    }
    let s = u32_at(rec, stream);
    emit_op(d, conn, u32_at(rec, device), (s != 0 && s != u32::MAX).then_some(s), None, op, out);
}

fn marker(d: &mut Decoder, conn: u64, rec: &[u8], out: &mut Emitter) {
    if rec.len() < offsets::MARKER_MIN {
        d.stats.unknown_versions += 1;
        return;
    }
    let [flags, ts, id, _okind, oid, name, domain] = offsets::MARKER;
    let (clk, pid) = clock(d, conn);
    let (flags, t, id, tid) = (u32_at(rec, flags), u64_at(rec, ts), u32_at(rec, id), u32_at(rec, oid + 4));
    d.thread(pid, tid, out);
    let (name, domain) = (text(d, conn, u64_at(rec, name), out), text(d, conn, u64_at(rec, domain), out));
    if flags & 2 != 0 {
        d.kit.conns.entry(conn).or_default().open_ranges.insert(id, (t, name, domain, tid));
    } else if flags & 4 != 0 {
        if let Some((start, name, domain, tid)) = d.kit.conns.entry(conn).or_default().open_ranges.remove(&id)
        {
            out.emit(&Record::Range(
                Annotation::default()
                    .pid(pid)
                    .tid(tid)
                    .start(start)
                    .end(t)
                    .name(name)
                    .domain(domain)
                    .clock(clk),
            ));
        }
    } else {
        out.emit(&Record::Marker(
            Annotation::default().pid(pid).tid(tid).start(t).end(t).name(name).domain(domain).clock(clk),
        ));
    }
}

fn context(d: &mut Decoder, conn: u64, rec: &[u8]) {
    if rec.len() < offsets::CONTEXT_MIN {
        return;
    }
    let [ctx, dev] = offsets::CONTEXT;
    d.kit.conns.entry(conn).or_default().ctx_device.insert(u32_at(rec, ctx), u32_at(rec, dev));
}

fn overhead(d: &mut Decoder, conn: u64, rec: &[u8], out: &mut Emitter) {
    if rec.len() < offsets::OVERHEAD_MIN {
        d.stats.unknown_versions += 1;
        return;
    }
    let [kind, okind, oid, start, end] = offsets::OVERHEAD;
    let (clk, pid) = clock(d, conn);
    let tid = if u32_at(rec, okind) == 2 { u32_at(rec, oid + 4) } else { 0 };
    d.thread(pid, tid, out);
    let (what, okind) = match u32_at(rec, kind) {
        1 => ("driver compiler", OverheadKind::Resolution),
        0x10000 => ("buffer flush", OverheadKind::BufferFlush),
        0x20000 => ("instrumentation", OverheadKind::Instrumentation),
        0x30000 => ("resource", OverheadKind::Other),
        0x40000 => ("module loading", OverheadKind::Resolution),
        0x50000 => ("lazy function loading", OverheadKind::Resolution),
        0x60000 => ("command buffer full", OverheadKind::Other),
        0x70000 => ("activity buffer request", OverheadKind::BufferFlush),
        _ => ("other", OverheadKind::Other),
    };
    let name = d.kit.strs.string(out, &format!("CUPTI overhead: {what}"));
    let (s, e) = (u64_at(rec, start), u64_at(rec, end));
    let o = Overhead::default().pid(pid).tid(tid).start(s).end(e).clock(clk);
    out.emit(&Record::Overhead(o.kind(okind).name(name)));
}

fn api(d: &mut Decoder, conn: u64, rec: &[u8], out: &mut Emitter) {
    if rec.len() < offsets::API_MIN {
        d.stats.unknown_versions += 1;
        return;
    }
    let [cbid, start, end, _pid, tid, corr, result] = offsets::API;
    let domain =
        if u32_at(rec, 0) == KIND_RUNTIME { cupti_sys::DOMAIN_RUNTIME } else { cupti_sys::DOMAIN_DRIVER };
    let (clk, pid) = clock(d, conn);
    let tid = u32_at(rec, tid);
    d.thread(pid, tid, out);
    let (name, kind) = d.api_name(conn, domain, u32_at(rec, cbid), out);
    let corr = u32_at(rec, corr);
    out.emit(&Record::ApiCall(
        ApiCall::default()
            .pid(pid)
            .tid(tid)
            .start(u64_at(rec, start))
            .end(u64_at(rec, end))
            .clock(clk)
            .name(name)
            .kind(kind)
            .correlation((corr != 0).then_some(Correlation { backend: backend::CUDA, id: corr as u64 }))
            .result(u32_at(rec, result) as i64),
    ));
    d.stats.api_calls += 1;
}

#[cfg(test)]
mod tests {
    use xpuprof_sdk::codec::decode_all;
    use xpuprof_sdk::Logger;

    use super::*;

    #[test]
    fn a_peer_copy_names_both_devices() {
        let mut d = Decoder::new(Logger::stderr());
        let c = d.kit.conns.entry(1).or_default();
        c.devices.insert(0, DeviceId(7));
        c.devices.insert(1, DeviceId(8));
        let (size, l) = offsets::PEER_COPIES[0];
        let (src, dst) = l.ends.expect("peer copies have ends");
        let mut rec = vec![0u8; size];
        rec[l.start..l.start + 8].copy_from_slice(&100u64.to_le_bytes());
        rec[l.end..l.end + 8].copy_from_slice(&200u64.to_le_bytes());
        rec[src..src + 4].copy_from_slice(&1u32.to_le_bytes());
        rec[dst..dst + 4].copy_from_slice(&0u32.to_le_bytes());
        let mut out = Emitter::detached();
        memcpy(&mut d, 1, &rec, true, &mut out);
        let ops: Vec<DeviceOp> = decode_all(&out.take_buffer())
            .unwrap()
            .into_iter()
            .filter_map(|r| match r {
                Record::DeviceOp(o) => Some(o),
                _ => None,
            })
            .collect();
        assert_eq!(ops.len(), 1);
        assert_eq!(
            (ops[0].copy, ops[0].src_device, ops[0].dst_device),
            (CopyKind::PeerToPeer, DeviceId(8), DeviceId(7))
        );
    }
}
