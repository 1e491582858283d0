//! [`MSG_DEVICE`]: a GPU as the CUDA driver describes it (`cuDeviceGetName`, `cuDeviceGetUuid`,
//! `cuDeviceTotalMem`, `cuDeviceGetAttribute`), sent by the agent when a session turns device
//! records on, so the host knows the device of every kernel from the session's start. CUPTI's own
//! device record is written once per process and, on a real GPU after a start without a window
//! (`xpuprof attach --every`), reached the host only at the connection's end: the host would have
//! held every kernel until then. The host defines a device once per UUID, so CUPTI's record of the
//! same device, when it comes too, adds no second one.
//!
//! Payload: `ordinal u32, multiprocessors u32, cc_major u32, cc_minor u32, memory u64,
//! uuid [u8; 16], name_len u32, pad u32`, then `name_len` bytes of UTF-8 name. `ordinal` is the
//! device's number in the process (`CUdevice`, CUPTI's `deviceId`). Fields may be appended after
//! the name later; a host reads the ones it knows. A new message: hosts that do not know it skip
//! it, and the protocol version stays.

use xpuprof_wire::{put_message, Reader, MSG_BACKEND_FIRST};

/// A device's description.
pub const MSG_DEVICE: u8 = MSG_BACKEND_FIRST + 0x01;
/// Size of a [`MSG_DEVICE`] payload's fixed part (before the name).
pub const DEVICE_BYTES: usize = 48;

/// A [`MSG_DEVICE`] payload.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceDesc {
    /// The device's number in the process (CUPTI's `deviceId`).
    pub ordinal: u32,
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
    /// Compute capability, major.
    pub cc_major: u32,
    /// Compute capability, minor.
    pub cc_minor: u32,
    /// Global memory in bytes.
    pub memory: u64,
    /// The driver's UUID of the device (CUPTI's records carry the same).
    pub uuid: [u8; 16],
    /// The driver's name of the device.
    pub name: String,
}

impl DeviceDesc {
    /// Appends this as a [`MSG_DEVICE`] message.
    pub fn put(&self, out: &mut Vec<u8>) {
        let name = self.name.as_bytes();
        put_message(
            out,
            MSG_DEVICE,
            &[
                &self.ordinal.to_le_bytes(),
                &self.multiprocessors.to_le_bytes(),
                &self.cc_major.to_le_bytes(),
                &self.cc_minor.to_le_bytes(),
                &self.memory.to_le_bytes(),
                &self.uuid,
                &(name.len() as u32).to_le_bytes(),
                &0u32.to_le_bytes(),
                name,
            ],
        );
    }

    /// Reads a [`MSG_DEVICE`] payload; `None` when it is shorter than this version's.
    pub fn read(payload: &[u8]) -> Option<Self> {
        let mut r = Reader::new(payload);
        let (ordinal, multiprocessors, cc_major, cc_minor, memory) =
            (r.u32(), r.u32(), r.u32(), r.u32(), r.u64());
        let uuid: [u8; 16] = r.bytes(16).try_into().unwrap_or([0; 16]);
        let (len, _pad) = (r.u32(), r.u32());
        let name = String::from_utf8_lossy(r.bytes(len as usize)).into_owned();
        (!r.short).then_some(Self { ordinal, multiprocessors, cc_major, cc_minor, memory, uuid, name })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_agent_writes_the_host_reads_back_and_longer_payloads_still_read() {
        let d = DeviceDesc {
            ordinal: 1,
            multiprocessors: 132,
            cc_major: 9,
            cc_minor: 0,
            memory: 150 << 30,
            uuid: *b"0123456789abcdef",
            name: "NVIDIA H200".into(),
        };
        let mut m = Vec::new();
        d.put(&mut m);
        let len = DEVICE_BYTES + d.name.len();
        assert_eq!(m.len(), 8 + len);
        assert_eq!((m[4], &m[0..4]), (MSG_DEVICE, &(len as u32 + 4).to_le_bytes()[..]));
        assert_eq!(DeviceDesc::read(&m[8..]).as_ref(), Some(&d));
        let mut longer = m[8..].to_vec();
        longer.extend_from_slice(&[1, 2, 3, 4]);
        assert_eq!(DeviceDesc::read(&longer).as_ref(), Some(&d), "fields appended later are skipped");
        assert_eq!(DeviceDesc::read(&m[8..8 + len - 1]), None, "a short payload is refused");
    }
}
