//! The host's side of the agents' command channel: every accepted connection is kept for
//! writing too, and [`Control`] sends each of them the host's commands
//! ([`xpuprof_wire::control::Command`]: capture on/off, detach). A process that connects after a
//! window opened or closed is told the current state at once, so children started during a
//! session follow it.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use xpuprof_wire::control::Command;

/// Closing edges the agents sent (each after its window's records), decoded and flushed into the
/// session so far: [`AgentSource`](super::AgentSource) waits on it when the host closes a
/// window, so a window's outputs hold its records (continuous mode finishes a window's sinks
/// right after the close). One counter per plugin library, which runs one source.
static CLOSED_WINDOWS: AtomicU64 = AtomicU64::new(0);

/// An agent's window closed and its records were flushed into the session.
pub(super) fn window_closed() {
    CLOSED_WINDOWS.fetch_add(1, Ordering::SeqCst);
}

/// Closing edges decoded so far.
pub(super) fn closed_windows() -> u64 {
    CLOSED_WINDOWS.load(Ordering::SeqCst)
}

/// The longest a command write may block on one agent (its socket buffer full: the agent is
/// stuck); that agent is then dropped from the command list.
const WRITE_TIMEOUT: Duration = Duration::from_millis(500);

/// The connections' write halves and the capture state the host asked for.
#[derive(Debug, Default)]
pub(super) struct Control {
    conns: Mutex<Vec<(u64, UnixStream)>>,
    /// The last capture state asked for (`None`: never asked).
    capture: Mutex<Option<bool>>,
    accepted: AtomicU64,
}

impl Control {
    /// Connection `id` was accepted: keep a handle to write to it, and tell it the current state.
    pub(super) fn accepted(&self, id: u64, stream: &UnixStream) {
        self.accepted.fetch_add(1, Ordering::SeqCst);
        let Ok(mut w) = stream.try_clone() else { return };
        let _ = w.set_write_timeout(Some(WRITE_TIMEOUT));
        let state = self.capture.lock().ok().and_then(|c| *c);
        if let Some(on) = state {
            let mut b = Vec::new();
            Command::Capture(on).encode(&mut b);
            if w.write_all(&b).is_err() {
                return;
            }
        }
        if let Ok(mut c) = self.conns.lock() {
            c.push((id, w));
        }
    }

    /// Connections accepted so far.
    pub(super) fn count(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Waits until `n` connections were accepted, at most `timeout`; true when they were.
    pub(super) fn wait_for(&self, n: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.count() < n {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    /// Sends `cmd` to every connected agent; returns how many it reached. A capture command is
    /// also remembered for agents that connect later.
    pub(super) fn send(&self, cmd: Command) -> usize {
        if let (Command::Capture(on), Ok(mut c)) = (cmd, self.capture.lock()) {
            *c = Some(on);
        }
        let mut b = Vec::new();
        cmd.encode(&mut b);
        let Ok(mut conns) = self.conns.lock() else { return 0 };
        conns.retain_mut(|(_, s)| s.write_all(&b).is_ok());
        conns.len()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    #[test]
    fn tells_agents_the_commands_and_late_agents_the_current_state() {
        let c = Control::default();
        let (agent1, host1) = UnixStream::pair().unwrap();
        c.accepted(1, &host1);
        assert_eq!(c.send(Command::Capture(true)), 1);
        let (agent2, host2) = UnixStream::pair().unwrap();
        c.accepted(2, &host2);
        drop(agent1);
        assert_eq!(c.send(Command::Detach), 1, "the closed agent is dropped");
        assert!(c.wait_for(2, Duration::ZERO));
        drop((host1, host2, c));
        let mut got = Vec::new();
        (&agent2).read_to_end(&mut got).unwrap();
        assert_eq!(Command::split(&got).0, [Command::Capture(true), Command::Detach]);
    }
}
