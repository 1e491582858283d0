//! The socket the agents connect to: a Unix stream socket in a private folder, one connection
//! per process (children inherit the variable and connect too), one reader thread per
//! connection handing its bytes to one decoder thread, which owns the [`Decoder`] and so needs
//! no lock.

use std::io::{self, Read};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use xpuprof_sdk::Logger;

use crate::decode::Decoder;

/// What a reader thread tells the decoder: bytes of connection `.0`, or its end (`None`).
type Chunk = (u64, Option<Vec<u8>>);

/// A socket listened on, before the target starts.
#[derive(Debug)]
pub struct Listening {
    dir: PathBuf,
    socket: PathBuf,
    listener: UnixListener,
}

impl Listening {
    /// Listens on `agent.sock` in a new folder only this user can enter.
    pub fn new() -> io::Result<Self> {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let name = format!("xpuprof-acme-{}-{}", std::process::id(), nanos.as_nanos());
        let dir = std::env::temp_dir().join(name);
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let socket = dir.join("agent.sock");
        let listener = UnixListener::bind(&socket)?;
        Ok(Self { dir, socket, listener })
    }

    /// The socket's path, for the agent's variable.
    pub fn socket(&self) -> &Path {
        &self.socket
    }
}

/// The running host: the accepting thread and the decoder thread.
#[derive(Debug)]
pub struct Host {
    dir: PathBuf,
    stop: Arc<AtomicBool>,
    acceptor: JoinHandle<()>,
    decoder: JoinHandle<Decoder>,
}

impl Host {
    /// Accepts connections and decodes them with `decoder`.
    pub fn start(l: Listening, mut decoder: Decoder, log: Logger) -> io::Result<Self> {
        let (tx, rx) = mpsc::channel::<Chunk>();
        let stop = Arc::new(AtomicBool::new(false));
        // Polled, so that `stop` ends it without a connection of its own.
        l.listener.set_nonblocking(true)?;
        let (listener, stopped) = (l.listener, stop.clone());
        let acceptor = std::thread::Builder::new().name("acme-accept".into()).spawn(move || {
            let mut next = 0u64;
            loop {
                match listener.accept() {
                    Ok((stream, _)) => {
                        next += 1;
                        let read = stream.set_nonblocking(false).and_then(|()| read_connection(next, stream, tx.clone()));
                        if let Err(e) = read {
                            // Its agent sees the host gone, and counts what it could not send.
                            log.warn(&format!("acme-agent: failed to read connection {next}: {e}; its process is not traced"));
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        if stopped.load(Ordering::Acquire) {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    Err(_) => break,
                }
            }
        })?;
        let decoder = std::thread::Builder::new().name("acme-decode".into()).spawn(move || {
            // Ends when the acceptor and every reader dropped their sender.
            for (conn, bytes) in rx {
                match bytes {
                    Some(b) => decoder.feed(conn, &b),
                    None => decoder.end(conn),
                }
            }
            decoder
        })?;
        Ok(Self { dir: l.dir, stop, acceptor, decoder })
    }

    /// Stops accepting, waits until every connection ended (each agent closes its own when its
    /// process exits, after its last message) and was decoded, and returns the decoder.
    pub fn stop(self) -> io::Result<Decoder> {
        self.stop.store(true, Ordering::Release);
        let joined = self.acceptor.join().map_err(|_| io::Error::other("the accepting thread panicked"));
        let decoder = self.decoder.join().map_err(|_| io::Error::other("the decoder thread panicked"));
        let _ = std::fs::remove_dir_all(&self.dir);
        joined?;
        decoder
    }
}

/// Reads connection `conn` on a thread of its own until the agent closes it.
fn read_connection(conn: u64, mut stream: UnixStream, tx: Sender<Chunk>) -> io::Result<()> {
    std::thread::Builder::new().name(format!("acme-conn-{conn}")).spawn(move || {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx.send((conn, Some(buf[..n].to_vec()))).is_err() {
                        return;
                    }
                }
            }
        }
        let _ = tx.send((conn, None));
    })?;
    Ok(())
}
