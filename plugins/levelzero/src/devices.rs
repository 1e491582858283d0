//! Devices and their clocks: each Level Zero device (or sub-device) becomes a `DeviceDef` and a
//! clock domain of its own (`ClockDomainDef`: the device's tick rate and kernel-timestamp
//! width), tied to the session clock by `ClockSync` pairs. The host unwraps and converts the
//! device ticks of every record in that domain: this plugin does no time arithmetic beyond
//! composing the agent's two readings of one instant (below).
//!
//! The agent reads `zeDeviceGetGlobalTimestamps` (device ticks with the driver's host time,
//! `CLOCK_MONOTONIC_RAW` on Intel's driver) and right after it its own
//! `CLOCK_MONOTONIC_RAW`/`CLOCK_MONOTONIC` pair. The offset between the two host clocks at that
//! instant takes the driver's host time to the session clock, so each device pair becomes
//! `ClockSync(device domain, ticks, session time)`.

use xpuprof_sdk::model::*;
use xpuprof_sdk::Emitter;
use xpuprof_toolbox::Interner;

/// Device clock domains are numbered from here (the device's session-wide id added), clear of
/// [`ClockDomain::SESSION`].
pub const DOMAIN_BASE: u32 = 0x100;

/// A device as events refer to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Device {
    /// Its session-wide id.
    pub id: DeviceId,
    /// Its clock domain.
    pub clock: ClockDomain,
    /// Its kernel timestamps' width (they wrap there).
    pub valid_bits: u32,
}

impl Device {
    /// The end tick of work that started at tick `start` and ended at tick `end`, never below
    /// `start`: where the timestamps wrapped between the two, the wrap added back. Records carry
    /// an end as its distance from the start (the batch codec), so an end that wrapped past its
    /// start would read as a zero duration; the host ignores the bits above the valid ones when
    /// it unwraps, so the sum converts like the raw value.
    pub fn end_after(&self, start: u64, end: u64) -> u64 {
        if self.valid_bits >= 64 || self.valid_bits == 0 {
            return end.max(start);
        }
        let mask = (1u64 << self.valid_bits) - 1;
        start.saturating_add(end.wrapping_sub(start) & mask)
    }
}

/// What the agent says about one device.
#[derive(Debug, Clone, Default)]
pub struct Described {
    /// `ze_device_handle_t`.
    pub handle: u64,
    /// The whole device a sub-device belongs to, if known.
    pub parent: Option<DeviceId>,
    /// Index as the runtime numbers it.
    pub index: u32,
    /// Sub-device index for a sub-device (tile).
    pub sub: Option<u32>,
    /// Timer ticks per second.
    pub tick_hz: u64,
    /// Kernel timestamp width.
    pub valid_bits: u32,
    /// Xe cores / EUs as the driver counts them.
    pub compute_units: u32,
    /// Device UUID.
    pub uuid: [u8; 16],
    /// Marketing name.
    pub name: String,
}

/// Session-wide device numbering.
#[derive(Debug, Default)]
pub struct Devices {
    count: u32,
}

impl Devices {
    /// Emits the device's definition and its clock domain's.
    pub fn define(&mut self, d: Described, strs: &mut Interner, out: &mut Emitter) -> Device {
        self.count += 1;
        let id = DeviceId(self.count);
        let clock = ClockDomain(DOMAIN_BASE + self.count);
        let name = match d.sub {
            Some(t) if !d.name.contains("tile") => format!("{} tile {t}", d.name),
            _ => d.name,
        };
        let timer = strs.string(out, &format!("level-zero device {} timer", self.count));
        out.emit(&Record::ClockDomain(
            ClockDomainDef::default()
                .domain(clock)
                .ticks_per_second(d.tick_hz)
                .valid_bits(d.valid_bits.min(64) as u8)
                .name(timer),
        ));
        let valid_bits = d.valid_bits;
        let (name, vendor_name) = (strs.string(out, &name), strs.string(out, "Intel"));
        let kind = if d.sub.is_some() { DeviceKind::SubDevice } else { DeviceKind::Gpu };
        out.emit(&Record::Device(
            DeviceDef::default()
                .id(id)
                .vendor(Vendor::Intel)
                .vendor_name(vendor_name)
                .index(d.index)
                .name(name)
                .uuid(d.uuid)
                .compute_units(d.compute_units)
                .kind(kind)
                .native_id(d.handle)
                .parent(d.parent.unwrap_or(DeviceId::NONE)),
        ));
        Device { id, clock, valid_bits }
    }
}

/// One process's device clock readings waiting for the host-clock pair that follows them.
#[derive(Debug, Default)]
pub struct Pairs {
    pending: Vec<(ClockDomain, u64, u64)>,
}

impl Pairs {
    /// A `zeDeviceGetGlobalTimestamps` reading: `ticks` at host time `raw`
    /// (`CLOCK_MONOTONIC_RAW` ns).
    pub fn device(&mut self, clock: ClockDomain, ticks: u64, raw: u64) {
        self.pending.push((clock, ticks, raw));
    }

    /// The agent's `CLOCK_MONOTONIC_RAW`/`CLOCK_MONOTONIC` pair taken right after the device
    /// readings: emits each of them as a pair of its device's ticks with the session clock.
    pub fn host(&mut self, raw: u64, mono: u64, out: &mut Emitter) {
        let offset = i128::from(mono) - i128::from(raw);
        for (clock, ticks, at) in self.pending.drain(..) {
            let session = (i128::from(at) + offset).clamp(0, i128::from(u64::MAX)) as u64;
            out.emit(&Record::ClockSync(ClockSync::new(clock, ticks, session)));
        }
    }
}

#[cfg(test)]
mod tests {
    use xpuprof_sdk::codec::decode_all;

    use super::*;

    #[test]
    fn a_device_pair_becomes_a_session_pair_through_the_host_offset() {
        let mut out = Emitter::detached();
        let mut p = Pairs::default();
        p.device(ClockDomain(DOMAIN_BASE + 1), 5_000, 1_000_000);
        p.host(1_000_500, 7_000_500, &mut out);
        p.host(2_000_000, 8_000_000, &mut out); // nothing pending: nothing emitted
        let recs = decode_all(&out.take_buffer()).unwrap();
        assert_eq!(recs, [Record::ClockSync(ClockSync::new(ClockDomain(DOMAIN_BASE + 1), 5_000, 7_000_000))]);
    }

    #[test]
    fn an_end_that_wrapped_past_its_start_keeps_the_duration() {
        let d = Device { id: DeviceId(1), clock: ClockDomain(DOMAIN_BASE + 1), valid_bits: 32 };
        let start = (1u64 << 32) - 10_000;
        // 50 000 ticks of work across the wrap: the raw end is 40 000.
        assert_eq!(d.end_after(start, 40_000), start + 50_000);
        assert_eq!(d.end_after(100, 300), 300, "no wrap: the end as it is");
        assert_eq!(d.end_after(100, 100), 100);
        let wide = Device { valid_bits: 64, ..d };
        assert_eq!(wide.end_after(500, 400), 500, "a 64-bit clock never wraps: a backward end is no work");
    }

    #[test]
    fn a_sub_device_names_its_parent_and_declares_its_clock() {
        let mut out = Emitter::detached();
        let (mut devs, mut strs) = (Devices::default(), Interner::default());
        let gpu = devs.define(
            Described { tick_hz: 12_500_000, valid_bits: 32, name: "GPU".into(), ..Default::default() },
            &mut strs,
            &mut out,
        );
        let tile = devs.define(
            Described {
                parent: Some(gpu.id),
                sub: Some(1),
                tick_hz: 12_500_000,
                valid_bits: 32,
                name: "GPU".into(),
                handle: 9,
                ..Default::default()
            },
            &mut strs,
            &mut out,
        );
        assert_ne!(gpu.clock, tile.clock);
        let recs = decode_all(&out.take_buffer()).unwrap();
        let tile_def = recs
            .iter()
            .find_map(|r| match r {
                Record::Device(d) if d.id == tile.id => Some(d.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!((tile_def.kind, tile_def.parent, tile_def.native_id), (DeviceKind::SubDevice, gpu.id, 9));
        let domains: Vec<_> = recs
            .iter()
            .filter_map(|r| match r {
                Record::ClockDomain(d) => Some((d.domain, d.ticks_per_second, d.valid_bits)),
                _ => None,
            })
            .collect();
        assert_eq!(domains, [(gpu.clock, 12_500_000, 32), (tile.clock, 12_500_000, 32)]);
    }
}
