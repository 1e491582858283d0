//! Where CPython keeps what a stack reader needs, per minor version (64-bit Linux, x86-64 and
//! aarch64 have the same layouts).
//!
//! The numbers are the `offsetof`/`sizeof` values of CPython's own headers for each version;
//! CPython keeps its structs' layouts stable within a minor release. The integration tests
//! compile a probe against the headers of every interpreter installed on the machine and compare
//! it with this table, so a wrong number fails CI instead of reading garbage in a target.

/// A CPython minor version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Major version (3).
    pub major: u8,
    /// Minor version (9 ..= 13).
    pub minor: u8,
}

impl Version {
    /// `major.minor`.
    pub const fn new(major: u8, minor: u8) -> Self {
        Self { major, minor }
    }

    /// Parses the leading `major.minor` of a version string such as `3.11.7 (main, ...)` or a
    /// library name's tail `3.11.so.1.0`.
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.split(|c: char| !c.is_ascii_digit());
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        Some(Self { major, minor })
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// How a version chains its frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frames {
    /// 3.9 and 3.10: heap `PyFrameObject`s linked by `f_back`, one `_PyEval_EvalFrameDefault`
    /// call per frame.
    Objects {
        /// `f_back`.
        back: u64,
        /// `f_code`.
        code: u64,
        /// `f_lasti` (a C int).
        lasti: u64,
        /// `f_lasti` counts code units (3.10) instead of bytes (3.9).
        lasti_in_units: bool,
    },
    /// 3.11 and later: `_PyInterpreterFrame`s linked by `previous`; one eval-loop call runs
    /// every frame down to an entry frame.
    Interpreter {
        /// `f_code` (3.11, 3.12) or `f_executable` (3.13).
        code: u64,
        /// `previous`.
        previous: u64,
        /// `prev_instr` (3.11, 3.12: last instruction started) or `instr_ptr` (3.13).
        instr: u64,
        /// `owner` (a char).
        owner: u64,
        /// `is_entry` (3.11 only): the first frame its eval-loop call ran.
        is_entry: Option<u64>,
    },
}

/// How a code object maps instruction offsets to lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineTable {
    /// 3.9 `co_lnotab`: (byte offset delta, signed line delta) pairs.
    Lnotab,
    /// 3.10 `co_linetable`: (byte offset delta, signed line delta, -128 = no line) pairs.
    Lines310,
    /// 3.11 and later `co_linetable`: the location table (varint entries per code-unit run).
    Locations,
}

/// Where the GIL's state (`struct _gil_runtime_state`) is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GilAt {
    /// `_PyRuntime.ceval.gil`, at this offset of `_PyRuntime` (3.9 to 3.11: one GIL).
    Runtime(u64),
    /// `PyInterpreterState.ceval.gil`, a pointer to it at this offset of the interpreter
    /// state (3.12 and later: a GIL per interpreter, possibly shared).
    Interpreter(u64),
}

/// Offsets (bytes) of one CPython version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The version these offsets are for.
    pub version: Version,
    /// `_PyRuntime.interpreters.head`.
    pub runtime_interpreters_head: u64,
    /// `PyInterpreterState.threads.head` (`tstate_head` before 3.11).
    pub interp_threads_head: u64,
    /// `PyInterpreterState.next`.
    pub interp_next: u64,
    /// `PyThreadState.next`.
    pub tstate_next: u64,
    /// `PyThreadState.thread_id` (the `pthread_t`).
    pub tstate_thread_id: u64,
    /// `PyThreadState.native_thread_id` (the kernel tid; 3.11 and later).
    pub tstate_native_thread_id: Option<u64>,
    /// `PyThreadState.frame` (3.9, 3.10), `.cframe` (3.11, 3.12) or `.current_frame` (3.13).
    pub tstate_frame: u64,
    /// `_PyCFrame.current_frame` when `tstate_frame` points to a `_PyCFrame` (3.11, 3.12).
    pub cframe_current_frame: Option<u64>,
    /// `_PyCFrame.previous` (3.11, 3.12): the `_PyCFrame` of the eval-loop call below, so the
    /// chain of `_PyCFrame`s (locals of `_PyEval_EvalFrameDefault`, one per call) gives each
    /// call's place on the C stack.
    pub cframe_previous: Option<u64>,
    /// The frame chain.
    pub frames: Frames,
    /// Value of `owner` that marks the eval loop's own entry frame on the C stack (3.12 and
    /// later: `FRAME_OWNED_BY_CSTACK`); such frames run no code and separate eval-loop calls.
    pub owner_cstack: Option<u8>,
    /// `PyCodeObject.co_filename`.
    pub code_filename: u64,
    /// `PyCodeObject.co_name`.
    pub code_name: u64,
    /// `PyCodeObject.co_qualname` (3.11 and later).
    pub code_qualname: Option<u64>,
    /// `co_linetable` (`co_lnotab` in 3.9).
    pub code_linetable: u64,
    /// `co_firstlineno` (a C int).
    pub code_firstlineno: u64,
    /// `co_code_adaptive`, where the instructions start inside the code object (3.11 and later).
    pub code_instructions: Option<u64>,
    /// `co_version` (3.12 and later): a number no other code object of the process gets, so a
    /// code object's address plus it names one code object even after the address is reused.
    pub code_version: Option<u64>,
    /// The line-table format.
    pub line_table: LineTable,
    /// The GIL's state.
    pub gil: GilAt,
    /// `PyThreadState.datastack_chunk` (3.11 and later): the newest chunk of the thread's
    /// frame stack, whose `previous` links lead to the root chunk, never freed before the
    /// thread state.
    pub tstate_datastack_chunk: Option<u64>,
    /// `sizeof(PyASCIIObject)`: where a compact ASCII string's characters start.
    pub unicode_ascii_size: u64,
    /// `sizeof(PyCompactUnicodeObject)`: where other compact strings' characters start.
    pub unicode_compact_size: u64,
}

/// Offsets that did not change from 3.9 to 3.13.
mod fixed {
    /// `PyObject.ob_type`.
    pub const OBJECT_TYPE: u64 = 8;
    /// `PyVarObject.ob_size`.
    pub const VAR_SIZE: u64 = 16;
    /// `PyBytesObject.ob_sval`.
    pub const BYTES_DATA: u64 = 32;
    /// `PyASCIIObject.length`.
    pub const UNICODE_LENGTH: u64 = 16;
    /// `PyASCIIObject.state` (bit field: interned 2, kind 3, compact 1, ascii 1).
    pub const UNICODE_STATE: u64 = 32;
    /// `_PyStackChunk.previous` (3.11 and later).
    pub const CHUNK_PREVIOUS: u64 = 0;
    /// `_PyStackChunk.size`, in bytes, the header included (3.11 and later).
    pub const CHUNK_SIZE: u64 = 8;
    /// `_gil_runtime_state.last_holder`: the thread state that took the GIL last.
    pub const GIL_LAST_HOLDER: u64 = 8;
    /// `_gil_runtime_state.locked` (a C int; -1 before the GIL is made).
    pub const GIL_LOCKED: u64 = 16;
    /// `_gil_runtime_state.switch_number`: how many times another thread took the GIL.
    pub const GIL_SWITCH_NUMBER: u64 = 24;
}
pub use fixed::*;

const V3_9: Layout = Layout {
    version: Version::new(3, 9),
    runtime_interpreters_head: 32,
    interp_threads_head: 8,
    interp_next: 0,
    tstate_next: 8,
    tstate_thread_id: 176,
    tstate_native_thread_id: None,
    tstate_frame: 24,
    cframe_current_frame: None,
    cframe_previous: None,
    frames: Frames::Objects { back: 24, code: 32, lasti: 104, lasti_in_units: false },
    owner_cstack: None,
    code_filename: 104,
    code_name: 112,
    code_qualname: None,
    code_linetable: 120,
    code_firstlineno: 40,
    code_instructions: None,
    code_version: None,
    line_table: LineTable::Lnotab,
    gil: GilAt::Runtime(352),
    tstate_datastack_chunk: None,
    unicode_ascii_size: 48,
    unicode_compact_size: 72,
};

const V3_10: Layout = Layout {
    version: Version::new(3, 10),
    frames: Frames::Objects { back: 24, code: 32, lasti: 96, lasti_in_units: true },
    line_table: LineTable::Lines310,
    ..V3_9
};

const V3_11: Layout = Layout {
    version: Version::new(3, 11),
    runtime_interpreters_head: 40,
    interp_threads_head: 16,
    interp_next: 0,
    tstate_next: 8,
    tstate_thread_id: 152,
    tstate_native_thread_id: Some(160),
    tstate_frame: 56,
    cframe_current_frame: Some(8),
    cframe_previous: Some(16),
    frames: Frames::Interpreter { code: 32, previous: 48, instr: 56, owner: 69, is_entry: Some(68) },
    owner_cstack: None,
    code_filename: 112,
    code_name: 120,
    code_qualname: Some(128),
    code_linetable: 136,
    code_firstlineno: 72,
    code_instructions: Some(184),
    code_version: None,
    line_table: LineTable::Locations,
    gil: GilAt::Runtime(360),
    tstate_datastack_chunk: Some(296),
    unicode_ascii_size: 48,
    unicode_compact_size: 72,
};

const V3_12: Layout = Layout {
    version: Version::new(3, 12),
    interp_threads_head: 72,
    tstate_thread_id: 136,
    tstate_native_thread_id: Some(144),
    cframe_current_frame: Some(0),
    cframe_previous: Some(8),
    frames: Frames::Interpreter { code: 0, previous: 8, instr: 56, owner: 70, is_entry: None },
    owner_cstack: Some(3),
    code_firstlineno: 68,
    code_instructions: Some(192),
    code_version: Some(92),
    gil: GilAt::Interpreter(384),
    tstate_datastack_chunk: Some(232),
    unicode_ascii_size: 40,
    unicode_compact_size: 56,
    ..V3_11
};

const V3_13: Layout = Layout {
    version: Version::new(3, 13),
    runtime_interpreters_head: 632,
    interp_threads_head: 7344,
    interp_next: 7264,
    tstate_thread_id: 152,
    tstate_native_thread_id: Some(160),
    tstate_frame: 72,
    cframe_current_frame: None,
    cframe_previous: None,
    code_instructions: Some(200),
    gil: GilAt::Interpreter(16),
    ..V3_12
};

/// Every version this crate reads.
pub const SUPPORTED: [&Layout; 5] = [&V3_9, &V3_10, &V3_11, &V3_12, &V3_13];

impl Layout {
    /// The layout of `version`, or `None` for a version this crate cannot read.
    pub fn of(version: Version) -> Option<&'static Layout> {
        SUPPORTED.iter().copied().find(|l| l.version == version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_versions_and_finds_their_layouts() {
        assert_eq!(Version::parse("3.11.7 (main, Dec  8 2023)"), Some(Version::new(3, 11)));
        assert_eq!(Version::parse("3.12.so.1.0"), Some(Version::new(3, 12)));
        assert_eq!(Version::parse("x"), None);
        assert_eq!(Layout::of(Version::new(3, 12)).unwrap().code_instructions, Some(192));
        assert!(Layout::of(Version::new(3, 8)).is_none());
        assert!(Layout::of(Version::new(3, 14)).is_none());
    }
}
