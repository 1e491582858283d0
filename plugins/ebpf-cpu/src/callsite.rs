//! Recognising return addresses: a word is one if the bytes just before it in the mapped file
//! encode an x86-64 `call`. Used to recover callers that the frame-pointer walk skips; the
//! search stops at the first caller that sets up a frame pointer (its frame is the one the
//! walk starts from, and older words above are stale).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use blazesym::symbolize::source::{Elf, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};

use xpuprof_sdk::hash::IdMap;

/// Caches files and answers per (file, offset).
#[derive(Debug)]
pub struct CallSites {
    files: IdMap<Arc<str>, Option<File>>,
    answers: IdMap<(Arc<str>, u64), bool>,
    has_frame: IdMap<(Arc<str>, u64), bool>,
    symbolizer: Symbolizer,
}

impl Default for CallSites {
    fn default() -> Self {
        let symbolizer = Symbolizer::builder()
            .enable_code_info(false)
            .enable_inlined_fns(false)
            .enable_demangling(false)
            .build();
        Self { files: IdMap::default(), answers: IdMap::default(), has_frame: IdMap::default(), symbolizer }
    }
}

impl CallSites {
    /// True when the instruction ending at `offset` of the file at `path` (opened through
    /// `open_path`) is a call.
    pub fn follows_call(
        &mut self,
        path: &Arc<str>,
        open_path: impl FnOnce() -> std::path::PathBuf,
        offset: u64,
    ) -> bool {
        if let Some(a) = self.answers.get(&(path.clone(), offset)) {
            return *a;
        }
        let file = self.files.entry(path.clone()).or_insert_with(|| File::open(open_path()).ok());
        let mut bytes = [0u8; 7];
        let answer = offset >= 7
            && file.as_ref().is_some_and(|f| f.read_exact_at(&mut bytes, offset - 7).is_ok())
            && ends_with_call(&bytes);
        self.answers.insert((path.clone(), offset), answer);
        answer
    }

    /// True when the function containing `offset` starts with the frame-pointer prologue
    /// (`[endbr64] push rbp; mov rbp, rsp`); false when it does not or is not known.
    pub fn in_function_with_frame(&mut self, path: &Arc<str>, open: &Path, offset: u64) -> bool {
        if let Some(a) = self.has_frame.get(&(path.clone(), offset)) {
            return *a;
        }
        let src = Source::Elf(Elf { debug_syms: false, ..Elf::new(open) });
        let start = match self.symbolizer.symbolize_single(&src, Input::FileOffset(offset)) {
            Ok(Symbolized::Sym(sym)) => offset.checked_sub(sym.offset as u64),
            _ => None,
        };
        let mut bytes = [0u8; 8];
        let file = self.files.get(path).and_then(Option::as_ref);
        let read = |start: u64| file.is_some_and(|f| f.read_exact_at(&mut bytes, start).is_ok());
        let answer = start.is_some_and(read) && starts_with_frame_setup(&bytes);
        self.has_frame.insert((path.clone(), offset), answer);
        answer
    }
}

/// `push rbp; mov rbp, rsp`, optionally after `endbr64`.
fn starts_with_frame_setup(b: &[u8; 8]) -> bool {
    const PROLOGUE: [u8; 4] = [0x55, 0x48, 0x89, 0xe5];
    const ENDBR64: [u8; 4] = [0xf3, 0x0f, 0x1e, 0xfa];
    b[..4] == PROLOGUE || (b[..4] == ENDBR64 && b[4..] == PROLOGUE)
}

/// True when `b` (the 7 bytes before a return address) ends with a call instruction:
/// `e8 rel32`, or `ff /2` (indirect call through a register or memory, 2 to 7 bytes).
pub fn ends_with_call(b: &[u8; 7]) -> bool {
    if b[2] == 0xe8 {
        return true;
    }
    (2..=7).any(|len| {
        let at = 7 - len;
        b[at] == 0xff && (b[at + 1] >> 3) & 7 == 2 && modrm_len(b[at + 1], b.get(at + 2).copied()) == len - 1
    })
}

/// Length of a ModRM operand (ModRM byte + SIB + displacement) for the `ff /2` forms.
fn modrm_len(modrm: u8, sib: Option<u8>) -> usize {
    let (md, rm) = (modrm >> 6, modrm & 7);
    let has_sib = md != 3 && rm == 4;
    let disp = match md {
        0 if rm == 5 => 4,
        0 if has_sib && sib.is_some_and(|s| s & 7 == 5) => 4,
        1 => 1,
        2 => 4,
        _ => 0,
    };
    1 + usize::from(has_sib) + disp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail(code: &[u8]) -> [u8; 7] {
        let mut b = [0x90u8; 7];
        b[7 - code.len()..].copy_from_slice(code);
        b
    }

    #[test]
    fn recognises_call_encodings() {
        assert!(ends_with_call(&tail(&[0xe8, 1, 2, 3, 4]))); // call rel32
        assert!(ends_with_call(&tail(&[0xff, 0xd0]))); // call rax
        assert!(ends_with_call(&tail(&[0x41, 0xff, 0xd3]))); // call r11
        assert!(ends_with_call(&tail(&[0xff, 0x15, 1, 2, 3, 4]))); // call [rip+disp32]
        assert!(ends_with_call(&tail(&[0xff, 0x50, 0x08]))); // call [rax+8]
        assert!(ends_with_call(&tail(&[0xff, 0x14, 0x24]))); // call [rsp]
    }

    #[test]
    fn recognises_frame_setup() {
        assert!(starts_with_frame_setup(&[0x55, 0x48, 0x89, 0xe5, 0, 0, 0, 0]));
        assert!(starts_with_frame_setup(&[0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5]));
        assert!(!starts_with_frame_setup(&[0x41, 0x57, 0x41, 0x56, 0, 0, 0, 0]));
    }

    #[test]
    fn rejects_other_instructions() {
        assert!(!ends_with_call(&[0x90; 7]));
        assert!(!ends_with_call(&tail(&[0xff, 0xe0]))); // jmp rax
        assert!(!ends_with_call(&tail(&[0x48, 0x89, 0xe5]))); // mov rbp, rsp
    }
}
