//! The socket the agents connect to: a Unix stream socket in a private folder, one connection
//! per process (children inherit the variable and connect too), one reader thread per
//! connection handing its bytes to one decoder thread, which owns the [`Decoder`] and so needs
//! no lock.

use std::io::{self, Read};
use std::net::Shutdown;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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

/// How long `stop` waits for connections still open once the target exited (a daemon child
/// that outlives it): then they are shut, and their processes' streams end there.
pub const LINGER: Duration = Duration::from_secs(15);

/// The running host: the accepting thread, the decoder thread, and a handle on every connection
/// (to shut the ones still open after [`LINGER`]).
#[derive(Debug)]
pub struct Host {
    dir: PathBuf,
    stop: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<UnixStream>>>,
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
        let open = Arc::new(Mutex::new(Vec::new()));
        let handles = open.clone();
        let acceptor = std::thread::Builder::new().name("acme-accept".into()).spawn(move || {
            let mut next = 0u64;
            loop {
                match listener.accept() {
                    Ok((stream, _)) => {
                        next += 1;
                        let read = stream
                            .set_nonblocking(false)
                            .and_then(|()| stream.try_clone())
                            .and_then(|handle| {
                                handles.lock().map_err(|_| io::Error::other("poisoned"))?.push(handle);
                                read_connection(next, stream, tx.clone())
                            });
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
        Ok(Self { dir: l.dir, stop, open, acceptor, decoder })
    }

    /// Stops accepting, waits until every connection ended (each agent closes its own when its
    /// process exits, after its last message; one still open after [`LINGER`] is shut) and was
    /// decoded, and returns the decoder.
    pub fn stop(self) -> io::Result<Decoder> {
        self.stop.store(true, Ordering::Release);
        let joined = self.acceptor.join().map_err(|_| io::Error::other("the accepting thread panicked"));
        let deadline = Instant::now() + LINGER;
        while !self.decoder.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Ok(open) = self.open.lock() {
            for stream in open.iter() {
                // Ends its reader (the decoder then counts the stream as cut short).
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
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
