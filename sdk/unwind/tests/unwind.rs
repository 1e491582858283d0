//! The unwinder on a real stack: C code built without frame pointers (`tests/fixtures/deep.c`,
//! loaded with `dlopen` after the unwinder built its module list), walked in-process and from
//! a copy of the stack, as the eBPF source does.

mod common;

use std::cell::RefCell;

use std::hint::black_box;
use xpuprof_unwind::remote::{Mapping, Remote};

use xpuprof_unwind::{local, Cut, End, Registers, Walk};

type DeepEntry = unsafe extern "C" fn(extern "C" fn(u64) -> u64) -> u64;

/// What the callback captured: the in-process walk and a copy of the stack with its registers.
#[derive(Default)]
struct Captured {
    frames: Vec<u64>,
    /// Each frame's stack pointer, from the in-process walk.
    sps: Vec<u64>,
    walk: Option<Walk>,
    regs: Registers,
    stack: Vec<u8>,
}

thread_local! {
    static CAPTURED: RefCell<Captured> = RefCell::new(Captured::default());
}

#[inline(never)]
extern "C" fn capture(x: u64) -> u64 {
    let regs = Registers::here();
    let (lo, hi) = common::thread_stack();
    let mut out = [0u64; 128];
    let w = local::walk(regs, lo, hi, &mut out);
    let (mut again, mut sps) = ([0u64; 128], [0u64; 128]);
    let (w2, _) = local::walk_skipping_with_sp(regs, lo, hi, &mut again, &mut sps, |_| false);
    assert_eq!((w2, &again[..w2.len]), (w, &out[..w.len]), "the same walk with stack pointers");
    // The copy an eBPF sample would carry: at most 64 KiB from the stack pointer up.
    let len = (hi - regs.sp).min(64 << 10) as usize;
    // SAFETY: `[sp, sp + len)` is the live part of this thread's stack.
    let stack = unsafe { std::slice::from_raw_parts(regs.sp as *const u8, len) }.to_vec();
    CAPTURED.with(|c| {
        let sps = sps[..w.len].to_vec();
        *c.borrow_mut() = Captured { frames: out[..w.len].to_vec(), sps, walk: Some(w), regs, stack };
    });
    std::hint::black_box(x)
}

fn run_fixture() -> Captured {
    // The module list exists before the library is loaded: the walk must refresh it.
    assert!(!local::known_ranges().is_empty());
    run_lib(&common::build_deep(&tempfile_dir("frameless")))
}

fn run_lib(lib: &std::path::Path) -> Captured {
    // SAFETY: the fixture has no initialisers; `deep_entry` has the declared signature.
    let lib = unsafe { libloading::Library::new(lib) }.expect("failed to load the fixture");
    // SAFETY: as above.
    let entry: libloading::Symbol<'_, DeepEntry> = unsafe { lib.get(b"deep_entry") }.unwrap();
    // SAFETY: `capture` has the callback signature the fixture expects.
    unsafe { entry(capture) };
    let c = CAPTURED.with(|c| std::mem::take(&mut *c.borrow_mut()));
    std::mem::forget(lib); // names are looked up below
    c
}

/// A folder of this test process for the test `tag`'s fixtures.
fn tempfile_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("xpuprof-unwind-test-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn walks_through_frameless_code_to_the_root_in_process_and_from_a_copy() {
    let c = run_fixture();
    let names = common::names(&c.frames);
    assert!(common::has_path(&names), "the full path is not in the walk: {names:?}");
    assert_eq!(c.walk.unwrap().end, End::Root, "the walk did not reach the thread's root: {names:?}");

    // The same stack from a copy, with modules from /proc/self/maps and the files.
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let parsed: Vec<_> = xpuprof_wire::maps::parse(&maps)
        .into_iter()
        .map(|m| (m.start, m.end, m.offset, m.exec, m.path))
        .collect();
    let mut remote = Remote::default();
    let pid = std::process::id();
    remote.set_maps(
        pid,
        1,
        parsed.iter().map(|(s, e, off, x, name)| Mapping {
            start: *s,
            end: *e,
            offset: *off,
            exec: *x,
            name,
            open: std::path::Path::new(name),
        }),
    );
    let mut out = [0u64; 128];
    let w = remote.walk(pid, c.regs, &c.stack, &mut out);
    assert_eq!(&out[..w.len], &c.frames[..], "the copied stack unwinds to the same frames ({:?})", w.end);
    assert_eq!(w.end, End::Root);
    // The same walk with each frame's stack pointer: the leaf's is the start's, each caller's
    // lies above its callee's (the return address between them), all inside the copy.
    let (mut again, mut sp) = ([0u64; 128], [0u64; 128]);
    assert_eq!(remote.walk_with_sp(pid, c.regs, false, &c.stack, &mut again, &mut sp), w);
    assert_eq!(&again[..w.len], &out[..w.len]);
    assert_eq!(sp[0], c.regs.sp);
    assert!(sp[..w.len].windows(2).all(|p| p[0] < p[1]), "{:x?}", &sp[..w.len]);
    assert!(sp[w.len - 1] < c.regs.sp + c.stack.len() as u64);
    assert_eq!(&sp[..w.len], &c.sps[..], "in-process and copied walks give the same stack pointers");
    // The walk says how much of the copy it needed: exactly that much still reaches the root.
    assert!(w.stack_bytes > 0 && w.stack_bytes <= c.stack.len() as u64, "{}", w.stack_bytes);
    let needed = &c.stack[..w.stack_bytes as usize];
    let mut just = [0u64; 128];
    assert_eq!(remote.walk(pid, c.regs, needed, &mut just), w, "a copy of stack_bytes bytes");
    assert_eq!(&just[..w.len], &out[..w.len]);
    let less = &c.stack[..w.stack_bytes as usize - 8];
    assert_ne!(
        remote.walk(pid, c.regs, less, &mut just).end,
        End::Root,
        "8 bytes less do not reach the root"
    );

    // A copy cut short ends the walk where the bytes end, counted, without invented frames.
    let short = &c.stack[..256];
    let w = remote.walk(pid, c.regs, short, &mut out);
    assert_eq!(w.end, End::Cut(Cut::Unreadable));
    assert_eq!(&out[..w.len], &c.frames[..w.len]);
    assert!(xpuprof_unwind::stats().snapshot().cut[Cut::Unreadable as usize] >= 1);
    // The fixture stays mapped; its file and folder go.
    let _ = std::fs::remove_dir_all(tempfile_dir("frameless"));
}

#[test]
fn the_fast_path_finds_the_frames_framehop_finds_with_and_without_frame_pointers() {
    for (name, flag) in
        [("libdeep-fp.so", "-fno-omit-frame-pointer"), ("libdeep-nofp.so", "-fomit-frame-pointer")]
    {
        let lib = common::build_deep_with(&tempfile_dir("fast"), name, flag);
        // One call site for both runs, so every frame can be compared: with the fast path, then
        // framehop alone (the fast path takes the steps the CFI prescribes: the same frames).
        let mut runs = Vec::new();
        let mut fast_steps = Vec::new();
        for fast in [true, false] {
            xpuprof_unwind::set_fast_path(fast);
            let before = xpuprof_unwind::stats().snapshot().fast_steps;
            runs.push(run_lib(&lib));
            fast_steps.push(xpuprof_unwind::stats().snapshot().fast_steps - before);
        }
        xpuprof_unwind::set_fast_path(true);
        let names = common::names(&runs[0].frames);
        assert!(common::has_path(&names), "{name}: the full path is not in the walk: {names:?}");
        assert_eq!(runs[0].walk.unwrap().end, End::Root, "{name}: {names:?}");
        // The fixture's frames step by their cached rules (other tests may add more).
        assert!(
            fast_steps[0] >= common::PATH.len() as u64,
            "{name}: {} fast steps: {names:?}",
            fast_steps[0]
        );
        let slow = common::names(&runs[1].frames);
        assert_eq!(runs[1].frames, runs[0].frames, "{name}: framehop alone: {slow:?}");
        assert_eq!(runs[1].walk.unwrap().end, End::Root);
    }
    let _ = std::fs::remove_dir_all(tempfile_dir("fast"));
}

// ---- [`local::walk_reusing`] against the plain walk on stacks that change between walks the ways
// a program's launches do: the same call again, another depth, and the case that rules out
// trusting the innermost frames alone: a function called from two lines of its caller, at the
// same depth (every frame inside it identical, only the caller's return address differs).

/// Walks found, walks that reused frames, and walks whose frames differed from the plain walk.
#[derive(Debug, Default)]
struct Tally {
    walks: usize,
    reused: usize,
    differed: usize,
}

/// Walks the stack here both ways and compares.
#[inline(never)]
fn leaf(t: &mut Tally) {
    let regs = Registers::here();
    let (lo, hi) = common::thread_stack();
    let (mut a, mut a_sp) = ([0u64; 256], [0u64; 256]);
    let (mut b, mut b_sp) = ([0u64; 256], [0u64; 256]);
    let (wa, first_a, reused) = local::walk_reusing(regs, lo, hi, &mut a, &mut a_sp, |_| false);
    let (wb, first_b) = local::walk_skipping_with_sp(regs, lo, hi, &mut b, &mut b_sp, |_| false);
    t.walks += 1;
    t.reused += usize::from(reused > 0);
    let same = (wa.len, wa.end, first_a.map(|r| r.ip)) == (wb.len, wb.end, first_b.map(|r| r.ip))
        && a[..wa.len] == b[..wb.len]
        && a_sp[..wa.len] == b_sp[..wb.len];
    t.differed += usize::from(!same);
}

#[inline(never)]
fn down(k: u64, t: &mut Tally) -> u64 {
    if k == 0 {
        leaf(t);
        return black_box(1);
    }
    black_box(down(black_box(k - 1), t)) + 1
}

/// Calls `down(k)` from two lines: the frames inside are the same at both calls.
#[inline(never)]
fn two_lines(k: u64, t: &mut Tally) -> u64 {
    let x = down(black_box(k), t);
    black_box(x);
    down(black_box(k), t) + x
}

#[test]
fn reused_walks_equal_the_plain_walk() {
    let mut t = Tally::default();
    for i in 0..200u64 {
        black_box(two_lines(i % 7, &mut t));
        black_box(down(i % 3, &mut t));
        black_box(down(i % 3, &mut t));
    }
    assert_eq!(t.differed, 0, "walks reusing the previous one found other frames: {t:?}");
    assert_eq!(t.walks, 800);
    assert!(t.reused > t.walks / 4, "the same call again reuses the previous walk: {t:?}");
}
