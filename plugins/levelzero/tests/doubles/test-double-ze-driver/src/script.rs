//! The script that shapes the test double: devices, clocks, kernel durations, completion mode.
//!
//! Read once from `XPUPROF_TEST_ZE_DRIVER` as `key=value` pairs separated by `;`:
//!
//! | key | meaning | default |
//! |---|---|---|
//! | `devices` | root devices | 1 |
//! | `subdevices` | sub-devices (tiles) per root device | 0 |
//! | `name` | device name | `xpuprof test double GPU` |
//! | `tick_hz` | device timestamp ticks per second | 12500000 (80 ns per tick) |
//! | `offset` | device ticks at driver start | 0 |
//! | `valid_bits` | `kernelTimestampValidBits`: kernel timestamps wrap there | 32 |
//! | `queued_ns` | work already queued on each engine at driver start: the first command starts this long after the driver started (or when it comes, if later), the next ones right after it | 0 |
//! | `kernel.NAME` | duration of kernel `NAME` in ns | |
//! | `kernel_ns` | duration of any other kernel | 10000 |
//! | `copy_ns` | duration of a copy | 4000 |
//! | `fill_ns` | duration of a fill | 2000 |
//! | `complete` | `submit`: events signal when submitted; `sync`: only at a host sync | `submit` |
//! | `old_props` | `1`: answer `ze_device_properties_t` as spec 1.0 (ns per tick) | 0 |

use std::collections::HashMap;

/// The parsed script.
#[derive(Debug, Clone)]
pub struct Script {
    /// Root devices.
    pub devices: u32,
    /// Sub-devices per root device.
    pub subdevices: u32,
    /// Device name.
    pub name: String,
    /// Ticks per second.
    pub tick_hz: u64,
    /// Device ticks at start.
    pub offset: u64,
    /// Kernel timestamp valid bits.
    pub valid_bits: u32,
    /// Work queued on each engine at driver start, ns.
    pub queued_ns: u64,
    /// Kernel durations by name, ns.
    pub kernels: HashMap<String, u64>,
    /// Default kernel duration, ns.
    pub kernel_ns: u64,
    /// Copy duration, ns.
    pub copy_ns: u64,
    /// Fill duration, ns.
    pub fill_ns: u64,
    /// Events become visible only at a host synchronisation.
    pub complete_at_sync: bool,
    /// Report timer resolution in ns per tick (spec 1.0 semantics).
    pub old_props: bool,
}

impl Default for Script {
    fn default() -> Self {
        Self {
            devices: 1,
            subdevices: 0,
            name: "xpuprof test double GPU".into(),
            tick_hz: 12_500_000,
            offset: 0,
            valid_bits: 32,
            queued_ns: 0,
            kernels: HashMap::new(),
            kernel_ns: 10_000,
            copy_ns: 4_000,
            fill_ns: 2_000,
            complete_at_sync: false,
            old_props: false,
        }
    }
}

impl Script {
    /// Parses `text`; unknown keys and bad numbers panic with the offending pair (a test double
    /// must not run a different scenario than the one written).
    pub fn parse(text: &str) -> Self {
        let mut s = Self::default();
        for pair in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) =
                pair.split_once('=').unwrap_or_else(|| panic!("test ze driver: `{pair}` is not key=value"));
            let num =
                || v.parse::<u64>().unwrap_or_else(|_| panic!("test ze driver: `{pair}`: not a number"));
            match k {
                "devices" => s.devices = num() as u32,
                "subdevices" => s.subdevices = num() as u32,
                "name" => s.name = v.to_string(),
                "tick_hz" => s.tick_hz = num().max(1),
                "offset" => s.offset = num(),
                "valid_bits" => s.valid_bits = (num() as u32).clamp(1, 64),
                "queued_ns" => s.queued_ns = num(),
                "kernel_ns" => s.kernel_ns = num(),
                "copy_ns" => s.copy_ns = num(),
                "fill_ns" => s.fill_ns = num(),
                "complete" => s.complete_at_sync = v == "sync",
                "old_props" => s.old_props = v == "1",
                _ if k.starts_with("kernel.") => {
                    s.kernels.insert(k["kernel.".len()..].to_string(), num());
                }
                _ => panic!("test ze driver: unknown script key `{k}`"),
            }
        }
        s
    }

    /// The script of this process.
    pub fn from_env() -> Self {
        Self::parse(&std::env::var("XPUPROF_TEST_ZE_DRIVER").unwrap_or_default())
    }

    /// Duration of kernel `name`, ns.
    pub fn kernel_duration(&self, name: &str) -> u64 {
        self.kernels.get(name).copied().unwrap_or(self.kernel_ns)
    }

    /// Ticks of `ns` nanoseconds.
    pub fn ticks_of(&self, ns: u64) -> u64 {
        (ns as u128 * self.tick_hz as u128 / 1_000_000_000) as u64
    }

    /// Mask of the kernel timestamp bits.
    pub fn mask(&self) -> u64 {
        if self.valid_bits >= 64 {
            u64::MAX
        } else {
            (1u64 << self.valid_bits) - 1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_key() {
        let s = Script::parse(
            "devices=2;subdevices=2;tick_hz=1000;offset=5;valid_bits=16;queued_ns=9;kernel.k=7;complete=sync",
        );
        assert_eq!((s.devices, s.subdevices, s.tick_hz, s.offset, s.queued_ns), (2, 2, 1000, 5, 9));
        assert_eq!(s.mask(), 0xffff);
        assert_eq!(s.kernel_duration("k"), 7);
        assert_eq!(s.kernel_duration("other"), 10_000);
        assert!(s.complete_at_sync);
    }
}
