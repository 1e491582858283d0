//! Sending records to the host, and logging through it.

use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

use abi_stable::std_types::{RSlice, RStr};

use crate::abi::FfiHost;
use crate::codec;
use crate::model::{Record, StrDef, StrId};

/// Batches are handed to the host once they reach this size.
const FLUSH_BYTES: usize = 64 * 1024;

/// The longest a record may wait in an emitter's buffer when the source calls
/// [`Emitter::flush_if_due`] often enough: it bounds what a `kill -9` of xpuprof loses and keeps
/// the live status line moving.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(250);

/// Encodes records and hands them to the host in batches.
///
/// Each clone has its own buffer, so give every thread its own clone; a clone flushes when its
/// buffer fills, on [`Emitter::flush`], and when dropped. Order is kept within one emitter, not
/// across clones: emit a definition on the same emitter before the events that use it (or
/// flush it first). A source that emits steadily should call [`Emitter::flush_if_due`] from its
/// loop, so that no record waits longer than [`FLUSH_INTERVAL`].
///
/// Emitting is always safe, even from a thread that outlives the plugin instance: what a source
/// emits after its `stop` returned (or after it was destroyed) is dropped by the host and
/// counted in the end summary, so stop and join your threads in `stop`.
#[derive(Debug)]
pub struct Emitter {
    host: Option<FfiHost>,
    buf: Vec<u8>,
    records: u64,
    /// When the oldest record in `buf` was buffered.
    pending_since: Option<Instant>,
}

impl Clone for Emitter {
    fn clone(&self) -> Self {
        Self { host: self.host, buf: Vec::with_capacity(FLUSH_BYTES), records: 0, pending_since: None }
    }
}

impl Emitter {
    pub(crate) fn new(host: FfiHost) -> Self {
        Self { host: Some(host), buf: Vec::with_capacity(FLUSH_BYTES), records: 0, pending_since: None }
    }

    /// An emitter that collects into its buffer and never sends: for tests of plugin code.
    /// Read what was emitted with [`Emitter::take_buffer`].
    pub fn detached() -> Self {
        Self { host: None, buf: Vec::new(), records: 0, pending_since: None }
    }

    /// Notes when the buffer stops being empty (once per batch, not per record).
    #[inline]
    fn mark_pending(&mut self) {
        if self.buf.is_empty() && self.host.is_some() {
            self.pending_since = Some(Instant::now());
        }
    }

    /// Encodes one record into the batch.
    #[inline]
    pub fn emit(&mut self, record: &Record) {
        self.mark_pending();
        codec::encode(record, &mut self.buf);
        self.records += 1;
        if self.host.is_some() && self.buf.len() >= FLUSH_BYTES {
            self.flush();
        }
    }

    /// Appends records that are already encoded (for example, a stream received from an
    /// in-target agent that used [`crate::codec`] itself).
    pub fn emit_encoded(&mut self, batch: &[u8]) {
        if self.host.is_some() && self.buf.is_empty() && batch.len() >= FLUSH_BYTES {
            self.send(batch);
            return;
        }
        self.mark_pending();
        self.buf.extend_from_slice(batch);
        if self.host.is_some() && self.buf.len() >= FLUSH_BYTES {
            self.flush();
        }
    }

    /// Hands everything buffered to the host.
    pub fn flush(&mut self) {
        if self.buf.is_empty() || self.host.is_none() {
            return;
        }
        self.pending_since = None;
        let buf = std::mem::take(&mut self.buf);
        self.send(&buf);
        self.buf = buf;
        self.buf.clear();
    }

    /// Flushes when the oldest buffered record has waited [`FLUSH_INTERVAL`] or longer. Cheap
    /// when there is nothing to do: call it from a source's loop, at least every
    /// [`FLUSH_INTERVAL`].
    pub fn flush_if_due(&mut self) {
        if self.pending_since.is_some_and(|t| t.elapsed() >= FLUSH_INTERVAL) {
            self.flush();
        }
    }

    fn send(&self, bytes: &[u8]) {
        if let Some(h) = self.host {
            (h.emit)(h.ctx, RSlice::from_slice(bytes));
        }
    }

    /// Records emitted through this clone so far.
    pub fn records_emitted(&self) -> u64 {
        self.records
    }

    /// Takes the buffered bytes (for [`Emitter::detached`] emitters in tests).
    pub fn take_buffer(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }
}

impl Drop for Emitter {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Log levels understood by the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Level {
    /// Something failed.
    Error = 1,
    /// Something the user should know.
    Warn = 2,
    /// Progress.
    Info = 3,
    /// Details for debugging.
    Debug = 4,
}

/// Logs through the host, which prefixes the plugin's name and applies `-v`.
#[derive(Debug, Clone, Copy)]
pub struct Logger {
    host: Option<FfiHost>,
}

impl Logger {
    pub(crate) fn new(host: FfiHost) -> Self {
        Self { host: Some(host) }
    }

    /// A logger that writes to stderr (tests of plugin code).
    pub fn stderr() -> Self {
        Self { host: None }
    }

    /// Logs `msg` at `level`.
    pub fn log(&self, level: Level, msg: &str) {
        match self.host {
            Some(h) => (h.log)(h.ctx, level as u8, RStr::from_str(msg)),
            None => {
                // Best effort, like the host's own messages: a closed stderr is not an error.
                let _ = writeln!(std::io::stderr(), "[{level:?}] {msg}");
            }
        }
    }

    /// Logs an error.
    pub fn error(&self, msg: &str) {
        self.log(Level::Error, msg);
    }

    /// Logs a warning.
    pub fn warn(&self, msg: &str) {
        self.log(Level::Warn, msg);
    }

    /// Logs progress.
    pub fn info(&self, msg: &str) {
        self.log(Level::Info, msg);
    }

    /// Logs details.
    pub fn debug(&self, msg: &str) {
        self.log(Level::Debug, msg);
    }
}

/// Interns strings for one emitter: the first use of a text emits its [`StrDef`].
///
/// Ids start at `first_id`; give each interner that shares an id space a distinct range, or
/// share one interner behind a lock.
#[derive(Debug)]
pub struct StringInterner {
    map: HashMap<String, StrId>,
    next: u32,
}

impl Default for StringInterner {
    fn default() -> Self {
        Self::new(1)
    }
}

impl StringInterner {
    /// An interner that hands out ids from `first_id` on.
    pub fn new(first_id: u32) -> Self {
        Self { map: HashMap::new(), next: first_id.max(1) }
    }

    /// The id of `text`, emitting its definition the first time.
    pub fn intern(&mut self, emitter: &mut Emitter, text: &str) -> StrId {
        if let Some(id) = self.map.get(text) {
            return *id;
        }
        let id = StrId(self.next);
        self.next += 1;
        self.map.insert(text.to_owned(), id);
        emitter.emit(&Record::Str(StrDef::default().id(id).text(text.to_owned())));
        id
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::c_void;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    static BATCHES: AtomicUsize = AtomicUsize::new(0);

    extern "C" fn count_batch(_ctx: *const c_void, _batch: RSlice<'_, u8>) {
        BATCHES.fetch_add(1, Ordering::SeqCst);
    }

    extern "C" fn ignore_log(_ctx: *const c_void, _level: u8, _message: RStr<'_>) {}

    #[test]
    fn a_record_waits_at_most_the_flush_interval() {
        let host = FfiHost { ctx: std::ptr::null(), emit: count_batch, log: ignore_log };
        let mut e = Emitter::new(host);
        e.emit(&Record::Str(StrDef::new(StrId(1), "a")));
        e.flush_if_due();
        assert_eq!(BATCHES.load(Ordering::SeqCst), 0, "a fresh record is not due yet");
        std::thread::sleep(FLUSH_INTERVAL);
        e.emit(&Record::Str(StrDef::new(StrId(2), "b")));
        e.flush_if_due();
        assert_eq!(BATCHES.load(Ordering::SeqCst), 1, "the oldest record was due: one batch sent");
        e.flush_if_due();
        assert_eq!(BATCHES.load(Ordering::SeqCst), 1, "nothing left to send");
        std::mem::forget(e);
    }
}
