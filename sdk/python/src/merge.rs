//! The merge of a thread's Python frames into its native stack, the way `py-spy --native` shows
//! them: every native frame inside the interpreter's eval loop is replaced by the Python frames
//! that call of the eval loop runs.

/// How a merge went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Merged {
    /// Frames written.
    pub len: usize,
    /// Python frames that no eval-loop frame of the native stack stood for (the native walk
    /// ended before reaching them): appended after the native frames, outermost last.
    pub unplaced: usize,
}

/// Writes `native` (innermost first) into `out`, each frame for which `is_eval` holds replaced
/// by the next run of `python` frames up to and including one marked as an entry (`(frame,
/// entry)` pairs, innermost first). Python frames left over when the native frames end are
/// appended. An eval-loop frame with no Python frames left stays as it is.
pub fn merge(
    native: &[u64],
    is_eval: impl Fn(u64) -> bool,
    python: &[(u64, bool)],
    out: &mut [u64],
) -> Merged {
    let mut n = 0;
    let mut py = python.iter().peekable();
    let mut push = |f: u64, n: &mut usize| {
        if *n < out.len() {
            out[*n] = f;
            *n += 1;
        }
    };
    for &f in native {
        if !is_eval(f) || py.peek().is_none() {
            push(f, &mut n);
            continue;
        }
        for &(p, entry) in py.by_ref() {
            push(p, &mut n);
            if entry {
                break;
            }
        }
    }
    let mut unplaced = 0;
    for &(p, _) in py {
        push(p, &mut n);
        unplaced += 1;
    }
    Merged { len: n, unplaced }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVAL: u64 = 0xe0;

    fn run(native: &[u64], python: &[(u64, bool)]) -> (Vec<u64>, usize) {
        let mut out = [0u64; 16];
        let m = merge(native, |f| f == EVAL, python, &mut out);
        (out[..m.len].to_vec(), m.unplaced)
    }

    #[test]
    fn replaces_each_eval_frame_by_its_run_of_python_frames() {
        // leaf C function, eval (runs b, a), C call, eval (runs main), root.
        let native = [0x10, EVAL, 0x20, EVAL, 0x30];
        let python = [(0xb, false), (0xa, true), (0x1, true)];
        assert_eq!(run(&native, &python), (vec![0x10, 0xb, 0xa, 0x20, 0x1, 0x30], 0));
    }

    #[test]
    fn appends_python_frames_the_native_walk_did_not_reach() {
        assert_eq!(run(&[0x10, EVAL], &[(0xb, true), (0xa, true)]), (vec![0x10, 0xb, 0xa], 1));
        assert_eq!(run(&[0x10], &[(0xb, true)]), (vec![0x10, 0xb], 1));
    }

    #[test]
    fn keeps_eval_frames_without_python_frames_and_stops_at_the_output_size() {
        assert_eq!(run(&[EVAL, 0x30], &[]), (vec![EVAL, 0x30], 0));
        let mut out = [0u64; 2];
        let m = merge(&[0x10, EVAL, 0x30], |f| f == EVAL, &[(0xb, true)], &mut out);
        assert_eq!((out, m.len), ([0x10, 0xb], 2));
    }
}
