//! Devices: their definitions and the device work waiting for them.
//!
//! A process's devices are described twice: by the agent from the CUDA driver when a session
//! begins ([`xpuprof_cupti_wire::MSG_DEVICE`]), and by CUPTI's device record, once per process,
//! which on a real GPU after a start without a window reached the host only at the connection's
//! end. Both define the device once per UUID, so the second adds nothing. Device work that
//! arrives before its device is defined waits ([`crate::activity::emit_op`]); what still waits
//! when a window closes is emitted then, with the devices known so far (an ordinal-only device
//! for one never described), so each window's outputs hold their own work; the same happens at
//! the connection's end.

use xpuprof_cupti_wire::DeviceDesc;
use xpuprof_sdk::model::*;
use xpuprof_sdk::Emitter;

use crate::activity::{emit_op, u32_at, u64_at};
use crate::decode::Decoder;
use crate::record_offsets as offsets;

/// CUPTI's device record (`CUpti_ActivityDevice*`) of connection `conn`.
pub(crate) fn record(d: &mut Decoder, conn: u64, rec: &[u8], out: &mut Emitter) {
    if rec.len() < offsets::DEVICE_MIN {
        d.stats.unknown_versions += 1;
        return;
    }
    let [mem, sms, id, uuid, name, cc_major, cc_minor] = offsets::DEVICE;
    let mut u = [0u8; 16];
    u.copy_from_slice(rec.get(uuid..uuid + 16).unwrap_or(&[0; 16]));
    let name = d.kit.agent_string(conn, u64_at(rec, name)).unwrap_or("[unnamed]").to_owned();
    let desc = DeviceDesc {
        ordinal: u32_at(rec, id),
        multiprocessors: u32_at(rec, sms),
        cc_major: u32_at(rec, cc_major),
        cc_minor: u32_at(rec, cc_minor),
        memory: u64_at(rec, mem),
        uuid: u,
        name,
    };
    define(d, conn, &desc, out);
}

/// The agent's [`xpuprof_cupti_wire::MSG_DEVICE`] of connection `conn`.
pub(crate) fn message(d: &mut Decoder, conn: u64, payload: &[u8], out: &mut Emitter) {
    match DeviceDesc::read(payload) {
        Some(desc) => define(d, conn, &desc, out),
        None => d.stats.unknown_versions += 1,
    }
}

/// Defines `desc`'s device (once per UUID across the session, and once per ordinal in a
/// process: a second description of an ordinal already described, such as CUPTI's after the
/// agent's with a UUID of another form, names the same device), maps its ordinal in `conn`'s
/// process to it, and emits the work that waited for it.
fn define(d: &mut Decoder, conn: u64, desc: &DeviceDesc, out: &mut Emitter) {
    let u = desc.uuid;
    let known = d.kit.conns.get(&conn).and_then(|c| c.devices.get(&desc.ordinal).copied());
    // Described before (ordinal-only devices of work released at a window's end are not).
    let described = known.filter(|dev| d.devices_by_uuid.values().any(|v| v == dev));
    if let Some(dev) = described {
        if u != [0; 16] {
            d.devices_by_uuid.entry(u).or_insert(dev);
        }
        release(d, conn, Some(desc.ordinal), out);
        return;
    }
    let existing = d.devices_by_uuid.get(&u).copied().filter(|_| u != [0; 16]);
    let dev = match existing {
        Some(dev) => dev,
        None => {
            let dev = DeviceId(d.next_device);
            d.next_device += 1;
            let name = d.kit.strs.string(out, &desc.name);
            let arch = d.kit.strs.string(out, &format!("sm_{}{}", desc.cc_major, desc.cc_minor));
            let vendor_name = d.kit.strs.string(out, "NVIDIA");
            out.emit(&Record::Device(
                DeviceDef::default()
                    .id(dev)
                    .vendor(Vendor::Nvidia)
                    .index(desc.ordinal)
                    .name(name)
                    .uuid(u)
                    .compute_units(desc.multiprocessors)
                    .memory_bytes(desc.memory)
                    .kind(DeviceKind::Gpu)
                    .arch(arch)
                    .vendor_name(vendor_name),
            ));
            d.devices_by_uuid.insert(u, dev);
            dev
        }
    };
    d.kit.conns.entry(conn).or_default().devices.insert(desc.ordinal, dev);
    release(d, conn, Some(desc.ordinal), out);
}

/// Emits `conn`'s waiting work of device `ordinal` (all of it for `None`).
fn release(d: &mut Decoder, conn: u64, ordinal: Option<u32>, out: &mut Emitter) {
    let Some(c) = d.kit.conns.get_mut(&conn) else { return };
    let (ready, keep): (Vec<_>, Vec<_>) =
        std::mem::take(&mut c.pending).into_iter().partition(|(o, _, _, _)| ordinal.is_none_or(|x| x == *o));
    c.pending = keep;
    for (o, s, ends, op) in ready {
        emit_op(d, conn, o, s, ends, op, out);
    }
}

/// A window of `conn` closed, or the connection ended: its waiting device work is emitted now,
/// under an ordinal-only device definition for a device never described, instead of waiting
/// for a description that may come only at the connection's end (or never). Returns how many
/// operations waited.
pub(crate) fn flush_pending(d: &mut Decoder, conn: u64, out: &mut Emitter) -> usize {
    let ordinals: Vec<u32> =
        d.kit.conns.get(&conn).map(|c| c.pending.iter().map(|(o, _, _, _)| *o).collect()).unwrap_or_default();
    let waited = ordinals.len();
    for o in ordinals {
        if d.kit.conns.get(&conn).is_some_and(|c| c.devices.contains_key(&o)) {
            continue;
        }
        let dev = DeviceId(d.next_device);
        d.next_device += 1;
        let name = d.kit.strs.string(out, &format!("CUDA device {o}"));
        out.emit(&Record::Device(
            DeviceDef::default().id(dev).vendor(Vendor::Nvidia).index(o).name(name).uuid([0; 16]),
        ));
        d.kit.conns.entry(conn).or_default().devices.insert(o, dev);
    }
    release(d, conn, None, out);
    waited
}

#[cfg(test)]
mod tests {
    use xpuprof_sdk::codec::decode_all;
    use xpuprof_sdk::Logger;

    use super::*;

    fn kernel_on(ordinal: u32) -> (u32, Option<u32>, Option<(u32, u32)>, DeviceOp) {
        (ordinal, Some(7), None, DeviceOp::default().kind(DeviceOpKind::Kernel).start(10).end(20))
    }

    fn records(out: &mut Emitter) -> Vec<Record> {
        decode_all(&out.take_buffer()).unwrap()
    }

    #[test]
    fn the_agents_and_cuptis_descriptions_of_one_device_define_it_once_and_release_its_work() {
        let mut d = Decoder::new(Logger::stderr());
        d.kit.conns.entry(1).or_default().pending.push(kernel_on(0));
        let desc = DeviceDesc {
            ordinal: 0,
            multiprocessors: 132,
            cc_major: 9,
            memory: 1 << 30,
            uuid: *b"0123456789abcdef",
            name: "NVIDIA H200".into(),
            ..Default::default()
        };
        let mut m = Vec::new();
        desc.put(&mut m);
        let mut out = Emitter::detached();
        message(&mut d, 1, &m[8..], &mut out);
        define(&mut d, 1, &DeviceDesc { name: "as CUPTI names it".into(), ..desc.clone() }, &mut out);
        let other_form = DeviceDesc { uuid: *b"MIG-0123456789ab", ..desc.clone() };
        define(&mut d, 1, &other_form, &mut out);
        let recs = records(&mut out);
        let devices: Vec<&DeviceDef> =
            recs.iter().filter_map(|r| if let Record::Device(x) = r { Some(x) } else { None }).collect();
        assert_eq!(devices.len(), 1, "one definition for one device of the process: {devices:?}");
        assert_eq!((devices[0].compute_units, devices[0].memory_bytes), (132, 1 << 30));
        let ops: Vec<&DeviceOp> =
            recs.iter().filter_map(|r| if let Record::DeviceOp(x) = r { Some(x) } else { None }).collect();
        assert_eq!(ops.len(), 1, "the waiting kernel is released by the agent's description");
        assert_eq!(ops[0].device, devices[0].id);
    }

    #[test]
    fn work_waiting_at_a_window_close_is_emitted_then_under_the_devices_known() {
        let mut d = Decoder::new(Logger::stderr());
        let c = d.kit.conns.entry(1).or_default();
        c.devices.insert(0, DeviceId(9));
        c.pending.push(kernel_on(1));
        let mut out = Emitter::detached();
        assert_eq!(flush_pending(&mut d, 1, &mut out), 1);
        let recs = records(&mut out);
        let device = recs.iter().find_map(|r| if let Record::Device(x) = r { Some(x.clone()) } else { None });
        let device = device.expect("an ordinal-only device for the one never described");
        assert_eq!((device.index, device.uuid), (1, [0; 16]));
        assert!(recs.iter().any(|r| matches!(r, Record::DeviceOp(o) if o.device == device.id)));
        assert!(d.kit.conns.get(&1).is_some_and(|c| c.pending.is_empty()));
        assert_eq!(flush_pending(&mut d, 1, &mut out), 0, "nothing waits any more");
        // A description that comes later defines the device for the process's later work.
        let desc =
            DeviceDesc { ordinal: 1, uuid: *b"0123456789abcdef", name: "late".into(), ..Default::default() };
        define(&mut d, 1, &desc, &mut out);
        let later =
            records(&mut out)
                .into_iter()
                .find_map(|r| if let Record::Device(x) = r { Some(x) } else { None });
        let later = later.expect("the described device is defined");
        assert_ne!(later.id, device.id);
        assert_eq!(d.kit.conns.get(&1).and_then(|c| c.devices.get(&1).copied()), Some(later.id));
    }
}
