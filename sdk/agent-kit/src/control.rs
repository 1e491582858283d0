//! The host's commands to the agent ([`wire::control::Command`]): capture on/off and the end of
//! the session, read from the agent's own socket (the host writes the other direction of the
//! stream the sender thread writes) by one agent thread, so application threads never wait on
//! the host.

use std::io::Read;
use std::os::unix::net::UnixStream;

use crate::wire::control::Command;

/// Most bytes of commands read at once.
const READ_BYTES: usize = 4096;

/// Starts the thread `xpuprof-<name>-ctl` that reads commands from `stream` (a clone of the
/// host connection, [`crate::channel::Outputs::control`]) and calls `handle` for each. When the
/// host closes the connection (or it breaks), `handle` gets [`Command::Detach`] and the thread
/// ends; `handle` must therefore accept a detach when the session already ended.
pub fn spawn(
    name: &str,
    mut stream: UnixStream,
    handle: impl Fn(Command) + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new().name(format!("xpuprof-{name}-ctl")).spawn(move || {
        let mut buf = Vec::new();
        let mut chunk = [0u8; READ_BYTES];
        while let Ok(n @ 1..) = stream.read(&mut chunk) {
            buf.extend_from_slice(&chunk[..n]);
            let (cmds, used) = Command::split(&buf);
            buf.drain(..used);
            for c in cmds {
                handle(c);
            }
        }
        handle(Command::Detach);
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::mpsc;

    use super::*;

    #[test]
    fn reads_commands_split_across_writes_and_detaches_when_the_host_leaves() {
        let (mut host, agent) = UnixStream::pair().unwrap();
        let (tx, rx) = mpsc::channel();
        let t = spawn("test", agent, move |c| tx.send(c).unwrap()).unwrap();
        let mut b = Vec::new();
        Command::Capture(true).encode(&mut b);
        Command::Capture(false).encode(&mut b);
        host.write_all(&b[..5]).unwrap();
        host.flush().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        host.write_all(&b[5..]).unwrap();
        drop(host);
        t.join().unwrap();
        let got: Vec<Command> = rx.iter().collect();
        assert_eq!(got, [Command::Capture(true), Command::Capture(false), Command::Detach]);
    }
}
