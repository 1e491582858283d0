//! Sending records to the host, and logging through it.

use std::collections::HashMap;

use abi_stable::std_types::{RSlice, RStr};

use crate::abi::FfiHost;
use crate::codec;
use crate::model::{Record, StrDef, StrId};

/// Batches are handed to the host once they reach this size.
const FLUSH_BYTES: usize = 64 * 1024;

/// Encodes records and hands them to the host in batches.
///
/// Each clone has its own buffer, so give every thread its own clone; a clone flushes when its
/// buffer fills, on [`Emitter::flush`], and when dropped. Order is kept within one emitter, not
/// across clones: emit a definition on the same emitter before the events that use it (or
/// flush it first).
#[derive(Debug)]
pub struct Emitter {
    host: Option<FfiHost>,
    buf: Vec<u8>,
    records: u64,
}

impl Clone for Emitter {
    fn clone(&self) -> Self {
        Self { host: self.host, buf: Vec::with_capacity(FLUSH_BYTES), records: 0 }
    }
}

impl Emitter {
    pub(crate) fn new(host: FfiHost) -> Self {
        Self { host: Some(host), buf: Vec::with_capacity(FLUSH_BYTES), records: 0 }
    }

    /// An emitter that collects into its buffer and never sends: for tests of plugin code.
    /// Read what was emitted with [`Emitter::take_buffer`].
    pub fn detached() -> Self {
        Self { host: None, buf: Vec::new(), records: 0 }
    }

    /// Encodes one record into the batch.
    #[inline]
    pub fn emit(&mut self, record: &Record) {
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
        let buf = std::mem::take(&mut self.buf);
        self.send(&buf);
        self.buf = buf;
        self.buf.clear();
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
            None => eprintln!("[{level:?}] {msg}"),
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
        emitter.emit(&Record::Str(StrDef { id, text: text.to_owned() }));
        id
    }
}
