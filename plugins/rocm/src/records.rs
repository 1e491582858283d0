//! rocprofiler-sdk buffer records → SDK events. Each record is the SDK's struct exactly as the
//! SDK wrote it (`rocprofiler-sdk-sys`, layouts pinned by its tests); a record shorter than the
//! struct this build knows is counted as skipped, a longer one (a newer SDK appending fields) is
//! read through its known prefix.

use rocprofiler_sdk_sys::*;
use xpuprof_sdk::model::*;
use xpuprof_sdk::Emitter;

use crate::decode::Decoder;

/// The record as `T`, when it is at least that long.
fn read<T: Copy>(rec: &[u8]) -> Option<T> {
    (rec.len() >= std::mem::size_of::<T>()).then(|| {
        // SAFETY: `rec` holds at least size_of::<T>() bytes; T is a bindgen struct of integers,
        // integer typedefs, unions of integers and raw pointers: every bit pattern is valid.
        unsafe { std::ptr::read_unaligned(rec.as_ptr().cast::<T>()) }
    })
}

/// Decodes one record of connection `conn`.
pub fn record(d: &mut Decoder, conn: u64, rec: &[u8], out: &mut Emitter) {
    let Some(kind) = rec.get(8..12).and_then(|b| b.try_into().ok()).map(u32::from_le_bytes) else {
        d.stats.skipped += 1;
        return;
    };
    let done = match kind {
        ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH => read(rec).map(|r| kernel(d, conn, &r, out)),
        ROCPROFILER_BUFFER_TRACING_MEMORY_COPY => read(rec).map(|r| copy(d, conn, &r, out)),
        ROCPROFILER_BUFFER_TRACING_MEMORY_ALLOCATION => read(rec).map(|r| allocation(d, conn, &r, out)),
        ROCPROFILER_BUFFER_TRACING_SCRATCH_MEMORY => read(rec).map(|r| scratch(d, conn, &r, out)),
        ROCPROFILER_BUFFER_TRACING_CORRELATION_ID_RETIREMENT => read(rec).map(|r| retire(d, conn, &r, out)),
        _ => None,
    };
    if done.is_none() {
        d.stats.skipped += 1;
    }
}

fn correlation(internal: u64) -> Option<Correlation> {
    // The agent's launch entries carry the low 32 bits: both sides use the same key.
    (internal != 0).then_some(Correlation { backend: backend::ROCM, id: u64::from(internal as u32) })
}

fn base(d: &Decoder, conn: u64, kind: DeviceOpKind, start: u64, end: u64, corr: u64) -> DeviceOp {
    DeviceOp::default()
        .kind(kind)
        .pid(d.pid(conn))
        .start(start)
        .end(end.max(start))
        .clock(d.domain(conn))
        .correlation(correlation(corr))
}

fn emit(d: &mut Decoder, op: DeviceOp, out: &mut Emitter) {
    d.kit.counts.device_ops += 1;
    if op.kind == DeviceOpKind::Kernel {
        d.kit.counts.kernels += 1;
    }
    out.emit(&Record::DeviceOp(op));
}

fn kernel(
    d: &mut Decoder,
    conn: u64,
    r: &rocprofiler_buffer_tracing_kernel_dispatch_record_t,
    out: &mut Emitter,
) {
    let info = &r.dispatch_info;
    let corr = r.correlation_id.internal;
    let device = d.device(conn, info.agent_id.handle, out);
    let stream = d.stream(conn, device, info.queue_id.handle, corr as u32, out);
    let sym = d.kit.conns.get(&conn).and_then(|c| c.kernels.get(&info.kernel_id)).cloned();
    let name = match &sym {
        Some(k) => k.name,
        None => d.kit.strs.string(out, &format!("[kernel {}]", info.kernel_id)),
    };
    let dim = |v: rocprofiler_dim3_t| [v.x, v.y, v.z];
    let mut k = KernelInfo::default()
        .grid(dim(info.grid_size))
        .block(dim(info.workgroup_size))
        .shared_memory(info.group_segment_size)
        .unit(SizeUnit::WorkItems)
        .scratch_bytes(info.private_segment_size);
    if let Some(s) = sym {
        k = k.vgprs(s.sym.vgprs).sgprs(s.sym.sgprs);
    }
    let op = base(d, conn, DeviceOpKind::Kernel, r.start_timestamp, r.end_timestamp, corr)
        .device(device)
        .stream(stream)
        .name(name)
        .kernel(Some(k));
    emit(d, op, out);
}

fn copy(d: &mut Decoder, conn: u64, r: &rocprofiler_buffer_tracing_memory_copy_record_t, out: &mut Emitter) {
    let src = d.device(conn, r.src_agent_id.handle, out);
    let dst = d.device(conn, r.dst_agent_id.handle, out);
    let kind = match r.operation as u32 {
        ROCPROFILER_MEMORY_COPY_HOST_TO_DEVICE => CopyKind::HostToDevice,
        ROCPROFILER_MEMORY_COPY_DEVICE_TO_HOST => CopyKind::DeviceToHost,
        ROCPROFILER_MEMORY_COPY_DEVICE_TO_DEVICE if src != dst => CopyKind::PeerToPeer,
        ROCPROFILER_MEMORY_COPY_DEVICE_TO_DEVICE => CopyKind::DeviceToDevice,
        ROCPROFILER_MEMORY_COPY_HOST_TO_HOST => CopyKind::HostToHost,
        _ => CopyKind::Unknown,
    };
    // The device that did the copy: the GPU end (the destination when both are GPUs).
    let device = if dst.is_none() { src } else { dst };
    let corr = r.correlation_id.internal;
    let stream = d.hip_stream(conn, device, corr as u32, StreamId::NONE, out).unwrap_or(StreamId::NONE);
    let op = base(d, conn, DeviceOpKind::Memcpy, r.start_timestamp, r.end_timestamp, corr)
        .device(device)
        .stream(stream)
        .bytes(r.bytes)
        .copy(kind)
        .src_device(src)
        .dst_device(dst);
    emit(d, op, out);
}

fn allocation(
    d: &mut Decoder,
    conn: u64,
    r: &rocprofiler_buffer_tracing_memory_allocation_record_t,
    out: &mut Emitter,
) {
    let kind = match r.operation as u32 {
        ROCPROFILER_MEMORY_ALLOCATION_ALLOCATE | ROCPROFILER_MEMORY_ALLOCATION_VMEM_ALLOCATE => {
            DeviceOpKind::Alloc
        }
        ROCPROFILER_MEMORY_ALLOCATION_FREE | ROCPROFILER_MEMORY_ALLOCATION_VMEM_FREE => DeviceOpKind::Free,
        _ => {
            d.stats.skipped += 1;
            return;
        }
    };
    let device = d.device(conn, r.agent_id.handle, out);
    // SAFETY: every member of the address union is a 64-bit value.
    let address = unsafe { r.address.value };
    let mut bytes = r.allocation_size;
    if let Some(c) = d.kit.conns.get_mut(&conn) {
        if kind == DeviceOpKind::Alloc {
            c.allocations.insert(address, bytes);
        } else if let Some(size) = c.allocations.remove(&address) {
            // The size a free releases, for the sinks' allocation accounting.
            bytes = bytes.max(size);
        }
    }
    let op = base(d, conn, kind, r.start_timestamp, r.end_timestamp, r.correlation_id.internal)
        .device(device)
        .bytes(bytes);
    emit(d, op, out);
}

fn scratch(
    d: &mut Decoder,
    conn: u64,
    r: &rocprofiler_buffer_tracing_scratch_memory_record_t,
    out: &mut Emitter,
) {
    let name = match r.operation as u32 {
        ROCPROFILER_SCRATCH_MEMORY_ALLOC => "scratch_alloc",
        ROCPROFILER_SCRATCH_MEMORY_FREE => "scratch_free",
        ROCPROFILER_SCRATCH_MEMORY_ASYNC_RECLAIM => "scratch_reclaim",
        _ => "scratch",
    };
    let name = d.kit.strs.string(out, name);
    let corr = r.correlation_id.internal;
    let device = d.device(conn, r.agent_id.handle, out);
    let stream = d.stream(conn, device, r.queue_id.handle, corr as u32, out);
    let op = base(d, conn, DeviceOpKind::Other, r.start_timestamp, r.end_timestamp, corr)
        .device(device)
        .stream(stream)
        .name(name);
    emit(d, op, out);
}

fn retire(
    d: &mut Decoder,
    conn: u64,
    r: &rocprofiler_buffer_tracing_correlation_id_retirement_record_t,
    out: &mut Emitter,
) {
    let Some(c) = correlation(r.internal_correlation_id) else { return };
    d.stats.retired += 1;
    let pid = d.pid(conn);
    if let Some(conn) = d.kit.conns.get_mut(&conn) {
        conn.stream_of.remove(&(r.internal_correlation_id as u32));
    }
    out.emit(&Record::Retired(
        Retirement::default().pid(pid).correlation(c).time(r.timestamp).clock(d.domain(conn)),
    ));
}

#[cfg(test)]
mod tests {
    use xpuprof_rocm_wire::{self as rocm_wire, Api};
    use xpuprof_sdk::codec;
    use xpuprof_sdk::Logger;
    use xpuprof_toolbox::agent_host::StreamDecoder;
    use xpuprof_wire as wire;

    use super::*;
    use crate::decode::SDK_CLOCK;

    fn bytes<T>(v: &T) -> &[u8] {
        // SAFETY: a plain C struct viewed as its bytes for the duration of the borrow.
        unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), std::mem::size_of::<T>()) }
    }

    /// A stream as the SDK path writes it: the dispatch record becomes a kernel with its
    /// symbol's name and registers, sizes in work-items, the SDK's clock and the low 32 bits of
    /// the internal id; the retirement a `Retired`; a truncated record is counted, not read.
    #[test]
    fn sdk_records_become_model_events() {
        let mut s = Vec::new();
        let mut h = wire::Hello::new(10201, wire::FLAG_AGENT_STACKS);
        h.pid = 4242;
        h.encode(&mut s);
        rocm_wire::put_api(&mut s, Api::RocprofilerSdk, (1, 2, 1));
        let gpu = rocm_wire::Agent {
            handle: 2,
            kind: 2,
            arch: "gfx942".into(),
            product: "MI300X".into(),
            ..Default::default()
        };
        rocm_wire::put_agents(&mut s, &[gpu]);
        let k = rocm_wire::Kernel {
            kernel_id: 7,
            sgprs: 24,
            vgprs: 40,
            name: "saxpy".into(),
            ..Default::default()
        };
        rocm_wire::put_kernels(&mut s, &[k]);
        wire::put_message(&mut s, wire::MSG_CLOCK, &[&1000u64.to_le_bytes(), &5000u64.to_le_bytes()]);
        let mut d = rocprofiler_buffer_tracing_kernel_dispatch_record_t {
            size: std::mem::size_of::<rocprofiler_buffer_tracing_kernel_dispatch_record_t>() as u64,
            kind: ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH as i32,
            start_timestamp: 2000,
            end_timestamp: 2500,
            ..Default::default()
        };
        d.correlation_id.internal = (1 << 32) | 9;
        d.dispatch_info.agent_id.handle = 2;
        d.dispatch_info.queue_id.handle = 77;
        d.dispatch_info.kernel_id = 7;
        d.dispatch_info.grid_size = rocprofiler_dim3_t { x: 1024, y: 1, z: 1 };
        d.dispatch_info.workgroup_size = rocprofiler_dim3_t { x: 256, y: 1, z: 1 };
        let r = rocprofiler_buffer_tracing_correlation_id_retirement_record_t {
            size: 32,
            kind: ROCPROFILER_BUFFER_TRACING_CORRELATION_ID_RETIREMENT as i32,
            timestamp: 2600,
            internal_correlation_id: (1 << 32) | 9,
        };
        let short = &bytes(&d)[..100];
        wire::records::put(&mut s, &[bytes(&d), bytes(&r), short]);
        let mut dec = Decoder::new(Logger::stderr());
        let mut out = Emitter::detached();
        assert_eq!(dec.feed(1, &s, &mut out), s.len());
        let recs = codec::decode_all(&out.take_buffer()).expect("a valid batch");
        let op = recs
            .iter()
            .find_map(|r| if let Record::DeviceOp(op) = r { Some(op.clone()) } else { None })
            .expect("a kernel");
        assert_eq!(
            (op.kind, op.pid, op.start, op.end, op.clock),
            (DeviceOpKind::Kernel, 4242, 2000, 2500, SDK_CLOCK)
        );
        assert_eq!(op.correlation, Some(Correlation { backend: backend::ROCM, id: 9 }));
        let k = op.kernel.expect("launch configuration");
        assert_eq!(
            (k.grid, k.block, k.unit, k.vgprs, k.sgprs),
            ([1024, 1, 1], [256, 1, 1], SizeUnit::WorkItems, 40, 24)
        );
        assert!(recs.iter().any(|r| matches!(r, Record::Str(s) if s.text == "saxpy" && s.id == op.name)));
        assert!(recs
            .iter()
            .any(|r| matches!(r, Record::Device(dv) if dv.id == op.device && dv.native_id == 2)));
        assert!(recs.iter().any(
            |r| matches!(r, Record::Stream(st) if st.id == op.stream && st.kind == QueueKind::HsaQueue)
        ));
        assert!(recs
            .iter()
            .any(|r| matches!(r, Record::ClockSync(c) if c.domain == SDK_CLOCK && c.source_time == 1000)));
        assert!(recs
            .iter()
            .any(|r| matches!(r, Record::Retired(t) if t.correlation.id == 9 && t.pid == 4242)));
        assert_eq!((dec.kit.counts.kernels, dec.stats.retired, dec.stats.skipped), (1, 1, 1));
    }
}
