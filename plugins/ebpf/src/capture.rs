//! Capture windows: what the recording thread attaches only while a window is open.
//!
//! Outside a window nothing of the source runs in the target's context: the samplers' perf
//! events are closed, `sched_switch` is detached and every launch uprobe removed. Only the
//! process-tree tracepoints (fork, exec, exit) stay, so the tree is still known when the next
//! window opens.

use std::sync::mpsc::SyncSender;

use crate::bpf::{self, Attachments, ProfileSkel};
use crate::config::Config;
use crate::uprobes::ProbeSet;

/// A request from the host's thread to open (`on`) or close the window; the recording thread
/// answers once it is done.
#[derive(Debug)]
pub struct Control {
    /// Open or close.
    pub on: bool,
    /// Receives the outcome.
    pub reply: SyncSender<Result<(), String>>,
}

/// The window's attachments, while one is open.
#[derive(Debug, Default)]
pub struct Window {
    links: Option<Attachments>,
}

impl Window {
    /// Whether a window is open.
    pub fn is_open(&self) -> bool {
        self.links.is_some()
    }

    /// Opens the window: samplers and off-CPU tracking attached, uprobes allowed again (the
    /// caller scans the tree's files for them). Opening an open window does nothing.
    pub fn open(
        &mut self,
        skel: &ProfileSkel<'_>,
        cfg: &Config,
        probes: &mut ProbeSet,
    ) -> Result<(), String> {
        if self.is_open() {
            return Ok(());
        }
        bpf::clear_offcpu(skel);
        self.links = Some(bpf::attach_window(skel, cfg)?);
        probes.resume();
        Ok(())
    }

    /// Closes the window: every window attachment and uprobe detached. Closing a closed window
    /// does nothing.
    pub fn close(&mut self, probes: &mut ProbeSet) {
        self.links = None;
        probes.pause();
    }
}
