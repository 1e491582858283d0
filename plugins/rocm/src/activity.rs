//! roctracer activity records (`activity_record_t`, ROCm before 6.2) → SDK events: HIP kernels
//! (named by the string the agent sent for the record's kernel-name pointer) and copies (their
//! direction from the activity's name, `CopyHostToDevice`); barriers and other domains are
//! counted as skipped. roctracer has no allocation, scratch or retirement records.

use roctracer_sys::*;
use xpuprof_rocm_wire as rocm_wire;
use xpuprof_sdk::model::*;
use xpuprof_sdk::Emitter;

use crate::decode::Decoder;

/// Decodes one record of connection `conn`.
pub fn record(d: &mut Decoder, conn: u64, rec: &[u8], out: &mut Emitter) {
    if rec.len() < std::mem::size_of::<activity_record_t>() {
        d.stats.skipped += 1;
        return;
    }
    // SAFETY: `rec` holds a whole record; activity_record_t is integers, unions of integers
    // and raw pointers: every bit pattern is valid.
    let r: activity_record_t = unsafe { std::ptr::read_unaligned(rec.as_ptr().cast()) };
    if r.domain != ACTIVITY_DOMAIN_HIP_OPS || (r.op != HIP_OP_ID_DISPATCH && r.op != HIP_OP_ID_COPY) {
        d.stats.skipped += 1;
        return;
    }
    // SAFETY: HIP activity records use the correlation/time and device/queue members.
    let (t, q) = unsafe { (r.__bindgen_anon_1.__bindgen_anon_1, r.__bindgen_anon_2.__bindgen_anon_1) };
    let device = d.device(conn, q.device_id.max(0) as u64, out);
    let corr = t.correlation_id as u32;
    let stream = d.stream(conn, device, q.queue_id, corr, out);
    let mut op = DeviceOp::default()
        .pid(d.pid(conn))
        .device(device)
        .stream(stream)
        .start(t.begin_ns)
        .end(t.end_ns.max(t.begin_ns))
        .clock(d.domain(conn))
        .correlation((corr != 0).then_some(Correlation { backend: backend::ROCM, id: u64::from(corr) }));
    if r.op == HIP_OP_ID_DISPATCH {
        // SAFETY: dispatch records carry the kernel name pointer.
        let p = unsafe { r.__bindgen_anon_3.kernel_name } as u64;
        let name = d.kit.agent_text(conn, p, "[unnamed kernel]", out);
        op = op.kind(DeviceOpKind::Kernel).name(name);
        d.kit.counts.kernels += 1;
    } else {
        let key = (u32::from(rocm_wire::DOMAIN_ROCTRACER_OPS) + r.op, r.kind);
        let name = d.kit.conns.get(&conn).and_then(|c| c.names.get(&key)).map(String::as_str).unwrap_or("");
        let (kind, host_src, host_dst) = match name {
            "CopyHostToDevice" => (CopyKind::HostToDevice, true, false),
            "CopyDeviceToHost" => (CopyKind::DeviceToHost, false, true),
            "CopyHostToHost" => (CopyKind::HostToHost, true, true),
            "CopyDeviceToDevice" => (CopyKind::DeviceToDevice, false, false),
            _ => (CopyKind::Unknown, false, false),
        };
        // SAFETY: copy records carry their size in bytes.
        let bytes = unsafe { r.__bindgen_anon_3.bytes } as u64;
        op = op
            .kind(DeviceOpKind::Memcpy)
            .bytes(bytes)
            .copy(kind)
            .src_device(if host_src { DeviceId::NONE } else { device })
            .dst_device(if host_dst { DeviceId::NONE } else { device });
    }
    d.kit.counts.device_ops += 1;
    out.emit(&Record::DeviceOp(op));
}
