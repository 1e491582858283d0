//! The interpreter of another process (eBPF samples, tests): found by the binaries it maps — a
//! `libpython3.X.so` or a `python3.X` executable exporting CPython's symbols — and read through
//! [`ProcessMemory`].

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use object::{Object, ObjectSegment, ObjectSymbol};

use crate::chain::RawFrame;
use crate::code::Code;
use crate::cpython_offsets::{Layout, Version};
use crate::memory::{Memory, ProcessMemory};
use crate::Error;

/// A process's CPython interpreter.
#[derive(Debug, Clone)]
pub struct Target {
    /// The process.
    pub pid: u32,
    /// The file CPython's code was found in.
    pub binary: String,
    /// Its layout.
    pub layout: &'static Layout,
    /// Address of `_PyRuntime`.
    pub runtime: u64,
    /// Address of `PyCode_Type`.
    pub code_type: u64,
    /// Address range of `_PyEval_EvalFrameDefault`.
    pub eval: (u64, u64),
}

/// One Python thread of a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thread {
    /// Kernel thread id (0 before 3.11, which does not record it).
    pub tid: u32,
    /// Address of its `PyThreadState`.
    pub state: u64,
}

impl Target {
    /// The interpreter process `pid` runs, or `Ok(None)` when it maps no CPython.
    pub fn find(pid: u32) -> Result<Option<Target>, Error> {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))
            .map_err(|e| Error::Binary { path: format!("/proc/{pid}/maps"), cause: e.to_string() })?;
        for (path, start) in file_starts(&maps) {
            let name = path.rsplit('/').next().unwrap_or_default();
            let candidate = name.starts_with("libpython3.") || name.starts_with("python3");
            if !candidate {
                continue;
            }
            let file = format!("/proc/{pid}/root{path}");
            let data = std::fs::read(&file)
                .map_err(|e| Error::Binary { path: file.clone(), cause: e.to_string() })?;
            let elf = object::File::parse(&*data)
                .map_err(|e| Error::Binary { path: file.clone(), cause: e.to_string() })?;
            let syms =
                symbols(&elf, &["_PyRuntime", "PyCode_Type", "_PyEval_EvalFrameDefault", "Py_Version"]);
            let (Some(runtime), Some(code_type), Some(eval)) = (syms[0], syms[1], syms[2]) else { continue };
            let lowest = elf.segments().map(|s| s.address()).min().unwrap_or(0) & !0xfff;
            let bias = start.wrapping_sub(lowest);
            let mem = ProcessMemory { pid };
            let version = Version::parse(name.trim_start_matches("libpython").trim_start_matches("python"))
                .or_else(|| syms[3].and_then(|(v, _)| mem.u64(v + bias).ok()).map(from_hex));
            let text = version.map(|v| v.to_string()).unwrap_or_else(|| name.to_owned());
            let layout = version.and_then(Layout::of).ok_or(Error::Version { text })?;
            return Ok(Some(Target {
                pid,
                binary: path.to_owned(),
                layout,
                runtime: runtime.0 + bias,
                code_type: code_type.0 + bias,
                eval: (eval.0 + bias, eval.0 + bias + eval.1.max(1)),
            }));
        }
        Ok(None)
    }

    /// The interpreter's Python threads (every interpreter's, main first).
    pub fn threads(&self) -> Result<Vec<Thread>, Error> {
        let (mem, l) = (ProcessMemory { pid: self.pid }, self.layout);
        let mut out = Vec::new();
        let mut interp = mem.u64(self.runtime + l.runtime_interpreters_head)?;
        while interp != 0 && out.len() < 4096 {
            let mut t = mem.u64(interp + l.interp_threads_head)?;
            while t != 0 && out.len() < 4096 {
                let tid = match l.tstate_native_thread_id {
                    Some(at) => mem.u32(t + at)?,
                    None => 0,
                };
                out.push(Thread { tid, state: t });
                t = mem.u64(t + l.tstate_next)?;
            }
            interp = mem.u64(interp + l.interp_next)?;
        }
        out.reverse();
        Ok(out)
    }
}

/// Labels of a target's frames, read once per (code object, identity, offset).
#[derive(Debug, Default)]
pub struct Labels {
    codes: HashMap<(u64, u32), Code>,
    labels: HashMap<(u64, u32, u64), String>,
}

impl Labels {
    /// The first line (`co_firstlineno`) of the code object at `code` with `identity`, once a
    /// label of it was read ([`Labels::label_of`]); 0 before.
    pub fn first_line(&self, code: u64, identity: Option<u32>) -> u32 {
        self.codes.get(&(code, identity.unwrap_or(0))).map_or(0, |c| c.first_line)
    }

    /// `function (file:line)` of `frame` in `target`.
    pub fn label(&mut self, target: &Target, frame: &RawFrame) -> Result<&str, Error> {
        self.label_of(target, frame, None)
    }

    /// [`Labels::label`] of a frame whose code object had `identity` ([`crate::code::identity`])
    /// when the frame was seen: a code object read now with another identity was freed since
    /// ([`Error::Freed`]), and labels are cached per identity, so a reused address gets its own.
    pub fn label_of(
        &mut self,
        target: &Target,
        frame: &RawFrame,
        identity: Option<u32>,
    ) -> Result<&str, Error> {
        let key = (frame.code, identity.unwrap_or(0), frame.offset);
        if !self.labels.contains_key(&key) {
            let code = match self.codes.entry((key.0, key.1)) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => {
                    let mem = ProcessMemory { pid: target.pid };
                    // The code object the frame ran must still be there, before and after it is
                    // read (an interpreter shutting down frees them while the host reads).
                    let gone = || {
                        identity.is_some_and(|id| {
                            crate::code::identity(&mem, target.layout, frame.code).ok() != Some(id)
                        })
                    };
                    if gone() {
                        return Err(Error::Freed { addr: frame.code });
                    }
                    let code = Code::read(&mem, target.layout, frame.code);
                    if gone() {
                        return Err(Error::Freed { addr: frame.code });
                    }
                    e.insert(code?)
                }
            };
            let label = code.label(code.line(target.layout, frame.offset()));
            self.labels.insert(key, label);
        }
        Ok(&self.labels[&key])
    }
}

/// `PY_VERSION_HEX` -> version.
fn from_hex(hex: u64) -> Version {
    Version::new((hex >> 24) as u8, (hex >> 16) as u8)
}

/// Each mapped file's path and the start of its mapping at file offset 0.
fn file_starts(maps: &str) -> Vec<(&str, u64)> {
    let mut out: Vec<(&str, u64)> = Vec::new();
    for line in maps.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 6 || !f[5].starts_with('/') || !f[2].trim_start_matches('0').is_empty() {
            continue;
        }
        let start = f[0].split('-').next().and_then(|s| u64::from_str_radix(s, 16).ok());
        if let Some(start) = start {
            if !out.iter().any(|(p, _)| *p == f[5]) {
                out.push((f[5], start));
            }
        }
    }
    out
}

/// Address and size of each named symbol (dynamic symbols first, then the full table).
fn symbols(elf: &object::File<'_>, names: &[&str]) -> Vec<Option<(u64, u64)>> {
    let mut out = vec![None; names.len()];
    for s in elf.dynamic_symbols().chain(elf.symbols()) {
        if let Some(i) = names.iter().position(|n| s.name() == Ok(n)) {
            if out[i].is_none() && s.address() != 0 {
                out[i] = Some((s.address(), s.size()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_the_offset_zero_mapping_of_each_file() {
        let maps = "\
00400000-00420000 r--p 00000000 08:01 1 /usr/bin/python3.11
00420000-00700000 r-xp 00020000 08:01 1 /usr/bin/python3.11
7f0000000000-7f0000001000 r--p 00000000 08:01 2 /usr/lib/libc.so.6
7f0000002000-7f0000003000 rw-p 00000000 00:00 0 [heap]
";
        assert_eq!(
            file_starts(maps),
            vec![("/usr/bin/python3.11", 0x400000), ("/usr/lib/libc.so.6", 0x7f0000000000)]
        );
        assert_eq!(from_hex(0x030B07F0), Version::new(3, 11));
    }
}
