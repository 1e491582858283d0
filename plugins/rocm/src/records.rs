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
    d.stats.device_ops += 1;
    if op.kind == DeviceOpKind::Kernel {
        d.stats.kernels += 1;
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
    let sym = d.conns.get(&conn).and_then(|c| c.kernels.get(&info.kernel_id)).cloned();
    let name = match &sym {
        Some(k) => k.name,
        None => d.strs.string(out, &format!("[kernel {}]", info.kernel_id)),
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
    if let Some(c) = d.conns.get_mut(&conn) {
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
    let name = d.strs.string(out, name);
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
    if let Some(conn) = d.conns.get_mut(&conn) {
        conn.stream_of.remove(&(r.internal_correlation_id as u32));
    }
    out.emit(&Record::Retired(
        Retirement::default().pid(pid).correlation(c).time(r.timestamp).clock(d.domain(conn)),
    ));
}
