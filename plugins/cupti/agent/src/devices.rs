//! The devices of a session, described by the agent itself from the CUDA driver
//! ([`crate::sys::driver_devices`]) and sent as [`xpuprof_cupti_wire::MSG_DEVICE`] messages when
//! a session with device records begins. CUPTI describes a device once per process (at the first
//! enable of device records), and on a real GPU after a start without a window (`xpuprof attach
//! --every`) its description reached the host only at the connection's end, while the host held
//! every kernel waiting for its device. The host defines a device once per UUID, so CUPTI's own
//! record, when it comes too, adds no second one.
//!
//! A session that begins inside `cuInit` (the driver loading the agent) cannot ask the driver
//! there: the window thread asks once CUDA is initialised ([`describe_when_initialised`]).

use std::time::{Duration, Instant};

use xpuprof_agent_kit::channel::Chunk;

use crate::{say, Agent};

/// How long the window thread waits for `cuInit` to finish before giving up the description.
pub const INIT_WAIT: Duration = Duration::from_secs(10);

/// Appends a [`xpuprof_cupti_wire::MSG_DEVICE`] for each device of the process to `out`; none
/// when the driver cannot say (told with `-v`: the host then releases each window's device work
/// at its end with the devices it knows).
pub(crate) fn put_all(a: &Agent, out: &mut Vec<u8>) {
    match crate::sys::driver_devices() {
        Ok(devices) => {
            for d in devices.iter().filter(|d| d.uuid != [0; 16]) {
                d.put(out);
            }
        }
        Err(e) if a.config.common.verbose => {
            say(&format!("cannot describe the devices from the driver: {e}"))
        }
        Err(_) => {}
    }
}

/// On the window thread, for session `session` begun inside `cuInit`: waits (at most
/// [`INIT_WAIT`]) until CUDA is initialised, then sends the devices' descriptions.
pub(crate) fn describe_when_initialised(a: &Agent, session: u32) {
    let deadline = Instant::now() + INIT_WAIT;
    loop {
        match crate::sys::cuda_initialised() {
            Some(true) => break,
            Some(false) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => return,
        }
    }
    if !crate::session::is_current(a, session) {
        return;
    }
    let mut m = Vec::new();
    put_all(a, &mut m);
    if !m.is_empty() {
        a.core.channel.push(Chunk::Bytes(m));
    }
}
