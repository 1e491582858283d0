//! The merge of a thread's Python frames into its native stack, the way `py-spy --native` shows
//! them: every native frame inside the interpreter's eval loop is replaced by the Python frames
//! that call of the eval loop runs.
//!
//! Python frames come in runs, one per eval-loop call (innermost first, each ending at the frame
//! the call entered with). [`merge_placed`] puts each run in the native frame that holds its
//! call's marker on the C stack (exact: found by stack address, whatever the symbols say);
//! [`merge`] pairs runs with the native frames whose address lies in the eval loop's symbol
//! (what is left when no address is known).

/// How a merge went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Merged {
    /// Frames written.
    pub len: usize,
    /// Python frames that no eval-loop frame of the native stack stood for (the native walk
    /// ended before reaching them): appended after the native frames, outermost last.
    pub unplaced: usize,
    /// Runs of Python frames placed by the eval loop's symbol because their place on the C
    /// stack was not known ([`merge_placed`]; every placed run, for [`merge`]).
    pub by_symbol: usize,
}

/// The number of runs in `python` (`(frame, entry)` pairs, innermost first): each ends at an
/// entry frame; frames after the last entry frame (a chain read only in part) make one more.
pub fn runs(python: &[(u64, bool)]) -> usize {
    let entries = python.iter().filter(|f| f.1).count();
    entries + usize::from(python.last().is_some_and(|f| !f.1))
}

/// The index of the native frame whose stack range holds `addr` (an eval-loop call's marker):
/// with `sp[i]` the stack pointer of frame `i` (innermost first, increasing), frame `i` spans
/// `[sp[i], sp[i + 1])`; the last frame's top is not known. `None` for 0 or an address outside.
pub fn frame_holding(sp: &[u64], addr: u64) -> Option<usize> {
    let above = sp.partition_point(|&s| s <= addr);
    (addr != 0 && above > 0 && above < sp.len()).then(|| above - 1)
}

/// [`frame_holding`] of each of `markers` into `places` (as far as both go), in one pass over
/// `sp` while the markers go outward (increasing, as the eval-loop calls of one thread's C
/// stack do), by binary search for the first and for a marker that does not go outward: the
/// same places, without a search per run (12 calls in 80 frames: 63 ns against 79 ns,
/// `benches/capture.rs`).
pub fn frames_holding(sp: &[u64], markers: impl Iterator<Item = u64>, places: &mut [Option<usize>]) {
    // The first marker by binary search (a stack of one eval call pays no more than before),
    // the next ones from there on.
    let (mut cursor, mut last) = (None, 0);
    for (p, m) in places.iter_mut().zip(markers) {
        let c = match cursor {
            Some(c) if m >= last => {
                let mut c = c;
                while c < sp.len() && sp[c] <= m {
                    c += 1;
                }
                c
            }
            Some(_) => {
                *p = frame_holding(sp, m);
                continue;
            }
            None => sp.partition_point(|&s| s <= m),
        };
        (cursor, last) = (Some(c), m);
        *p = (m != 0 && c > 0 && c < sp.len()).then(|| c - 1);
    }
}

/// Writes `native` (innermost first) into `out`, each run of `python` put where `places` says:
/// `places[k] = Some(i)` replaces `native[i]` by run `k` (innermost first, see [`runs`]), the
/// native frame that owns its eval-loop call's marker on the C stack. A run without a place goes
/// to the next native frame in the eval loop's symbol (`is_eval`) between the runs placed around
/// it ([`Merged::by_symbol`]), else next to the run placed after it; runs left after the last
/// native frame are appended ([`Merged::unplaced`]). Places that do not go outward as runs do
/// (a torn read) are all dropped for the symbol pairing. `places` is rewritten with where each
/// run went (`None`: appended).
pub fn merge_placed(
    native: &[u64],
    is_eval: impl Fn(u64) -> bool,
    python: &[(u64, bool)],
    places: &mut [Option<usize>],
    out: &mut [u64],
) -> Merged {
    let mut m = Merged::default();
    let ordered =
        places.iter().flatten().try_fold(0, |last, &i| (i >= last && i < native.len()).then_some(i));
    if ordered.is_none() {
        places.fill(None);
    }
    // Runs without a place: the next eval-loop frame after the previous run's place and before
    // the next placed run's, else just before the next placed run.
    let mut from = 0;
    for k in 0..places.len() {
        if let Some(i) = places[k] {
            from = i + 1;
            continue;
        }
        let next = places[k..].iter().flatten().next().copied();
        let limit = next.unwrap_or(native.len());
        match (from..limit).find(|&i| is_eval(native[i])) {
            Some(i) => {
                places[k] = Some(i);
                m.by_symbol += 1;
                from = i + 1;
            }
            None => places[k] = next,
        }
    }
    // Native frames up to each run's place, the run instead of the frame there; then the native
    // frames left and the runs without a place (only the outermost can be left without one).
    let (mut n, mut from, mut p) = (0, 0, 0);
    for &place in places.iter() {
        let Some(i) = place else { break };
        let end = python[p..].iter().position(|f| f.1).map_or(python.len(), |e| p + e + 1);
        if i >= from {
            n = copy(&native[from..i], out, n);
            from = i + 1;
        }
        for &(f, _) in &python[p..end] {
            n = copy(&[f], out, n);
        }
        p = end;
    }
    n = copy(&native[from.min(native.len())..], out, n);
    for &(f, _) in &python[p..] {
        n = copy(&[f], out, n);
    }
    m.unplaced = python.len() - p;
    m.len = n;
    m
}

/// Copies `frames` into `out` from `n` on, as far as it goes; returns the new end.
#[inline]
fn copy(frames: &[u64], out: &mut [u64], n: usize) -> usize {
    let k = frames.len().min(out.len().saturating_sub(n));
    out[n..n + k].copy_from_slice(&frames[..k]);
    n + k
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
    Merged { len: n, unplaced, by_symbol: 0 }
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

    fn placed(native: &[u64], python: &[(u64, bool)], places: &[Option<usize>]) -> (Vec<u64>, Merged) {
        let mut out = [0u64; 16];
        let mut places = places.to_vec();
        assert_eq!(places.len(), runs(python));
        let m = merge_placed(native, |f| f == EVAL, python, &mut places, &mut out);
        (out[..m.len].to_vec(), m)
    }

    #[test]
    fn a_marker_belongs_to_the_frame_whose_stack_range_holds_it() {
        let sp = [0x1000, 0x1040, 0x1100, 0x1200];
        assert_eq!(frame_holding(&sp, 0x1000), Some(0));
        assert_eq!(frame_holding(&sp, 0x103f), Some(0));
        assert_eq!(frame_holding(&sp, 0x1040), Some(1));
        assert_eq!(frame_holding(&sp, 0x11f8), Some(2));
        assert_eq!(frame_holding(&sp, 0x1200), None, "the last frame's top is not known");
        assert_eq!(frame_holding(&sp, 0xff8), None, "below the leaf");
        assert_eq!(frame_holding(&sp, 0), None, "not read");
    }

    #[test]
    fn one_pass_places_equal_a_search_per_marker() {
        let sp = [0x1000, 0x1040, 0x1040, 0x1100, 0x1200, 0x1380];
        let markers = [0, 0x1008, 0x1040, 0x1050, 0x1050, 0x1010, 0x11f8, 0x1300, 0x1380, 0x2000, 0xff8];
        let mut places = [None; 11];
        frames_holding(&sp, markers.iter().copied(), &mut places);
        let want: Vec<Option<usize>> = markers.iter().map(|&m| frame_holding(&sp, m)).collect();
        assert_eq!(places.to_vec(), want);
    }

    #[test]
    fn counts_runs() {
        assert_eq!(runs(&[]), 0);
        assert_eq!(runs(&[(1, false), (2, true), (3, true)]), 2);
        assert_eq!(runs(&[(1, true), (2, false)]), 2, "a chain read in part ends with a run of its own");
    }

    #[test]
    fn places_each_run_in_the_frame_that_owns_its_call_whatever_the_symbols_say() {
        // The outer call's frame is not recognised by its symbol (0x21: a cold part, stripped),
        // and a native frame between (0x20) is; the places say where the calls are.
        let native = [0x10, EVAL, 0x20, 0x21, 0x30];
        let python = [(0xb, false), (0xa, true), (0x1, true)];
        let (out, m) = placed(&native, &python, &[Some(1), Some(3)]);
        assert_eq!(out, [0x10, 0xb, 0xa, 0x20, 0x1, 0x30]);
        assert_eq!(m, Merged { len: 6, unplaced: 0, by_symbol: 0 });
        // The symbol pairing of the same stack is one frame off.
        let mut by_symbol = [0u64; 16];
        let s = merge(&native, |f| f == EVAL, &python, &mut by_symbol);
        assert_eq!((&by_symbol[..s.len], s.unplaced), (&[0x10, 0xb, 0xa, 0x20, 0x21, 0x30, 0x1][..], 1));
    }

    #[test]
    fn runs_without_a_place_fall_back_to_the_symbol_between_their_neighbours() {
        let native = [0x10, EVAL, 0x20, EVAL, 0x30, 0x31];
        let python = [(0xc, true), (0xb, true), (0xa, true)];
        // The middle run's marker is unknown: the eval frame between its neighbours takes it.
        let (out, m) = placed(&native, &python, &[Some(1), None, Some(4)]);
        assert_eq!((out, m.by_symbol, m.unplaced), (vec![0x10, 0xc, 0x20, 0xb, 0xa, 0x31], 1, 0));
        // No eval frame between: it goes just inside the next placed run.
        let (out, _) = placed(&[0x10, EVAL, 0x20, 0x30], &python, &[Some(1), None, Some(3)]);
        assert_eq!(out, [0x10, 0xc, 0x20, 0xb, 0xa]);
        // The outermost run's marker lies beyond the walk (cut short): appended, counted.
        let (out, m) = placed(&[0x10, EVAL, 0x20], &python, &[Some(1), None, None]);
        assert_eq!((out, m.unplaced, m.by_symbol), (vec![0x10, 0xc, 0x20, 0xb, 0xa], 2, 0));
    }

    #[test]
    fn places_out_of_order_are_dropped_for_the_symbol_pairing() {
        let native = [0x10, EVAL, 0x20, EVAL];
        let python = [(0xb, true), (0xa, true)];
        let (out, m) = placed(&native, &python, &[Some(3), Some(1)]);
        assert_eq!((out, m.by_symbol), (vec![0x10, 0xb, 0x20, 0xa], 2));
        let (_, m) = placed(&native, &python, &[Some(1), Some(9)]);
        assert_eq!(m.by_symbol, 2, "a place past the native frames");
    }

    #[test]
    fn keeps_eval_frames_without_python_frames_and_stops_at_the_output_size() {
        assert_eq!(run(&[EVAL, 0x30], &[]), (vec![EVAL, 0x30], 0));
        let mut out = [0u64; 2];
        let m = merge(&[0x10, EVAL, 0x30], |f| f == EVAL, &[(0xb, true)], &mut out);
        assert_eq!((out, m.len), ([0x10, 0xb], 2));
    }
}
