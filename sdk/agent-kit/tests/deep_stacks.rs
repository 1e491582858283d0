//! Launch stacks of 256 frames and more: the registry walks them to the agent's `max_depth`
//! and the stack entry it writes carries them all (wire protocol 1 wrote the frame count as
//! one byte: a 256-frame stack went out as 0 frames and the host misread what followed it).

mod common;

use xpuprof_agent_kit::launches::{Registry, Sites};
use xpuprof_agent_kit::wire::launches::Entry;
use xpuprof_agent_kit::{modules, stack};

/// Recurses `n` levels, then records one launch (correlation 7) with stacks of `max_depth`.
#[inline(never)]
fn launch_at_depth(n: usize, r: &Registry, sites: &Sites<'_>) -> usize {
    if n == 0 {
        assert!(r.enter(sites, 1, 5, 7, stack::registers()).is_some());
        r.exit(0);
        return 0;
    }
    // Not a tail call: every level keeps its frame.
    std::hint::black_box(launch_at_depth(std::hint::black_box(n - 1), r, sites)) + 1
}

/// The stacks and launches one launch from deep recursion sends with `max_depth`.
fn entries(max_depth: usize) -> Vec<Entry> {
    let known = modules::Known::default();
    let sites = Sites { record_entries: true, stacks: true, max_depth, own_code: &[], known: &known };
    let r = Registry::default();
    // Run on a thread with room for the recursion.
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(16 << 20)
            .spawn_scoped(s, || launch_at_depth(max_depth + 100, &r, &sites))
            .unwrap()
            .join()
            .unwrap()
    });
    common::drained_entries(&r)
}

#[test]
fn stacks_of_256_and_300_frames_reach_the_host_whole() {
    for depth in [256, 300] {
        let got = entries(depth);
        assert_eq!(got.len(), 2, "max_depth {depth}: one stack, one launch: {got:?}");
        let Entry::Stack { hash, frames } = &got[0] else { panic!("max_depth {depth}: no stack first") };
        assert_eq!(frames.len(), depth, "max_depth {depth}: the whole walk is sent");
        let Entry::Launch(l) = &got[1] else { panic!("max_depth {depth}: no launch after the stack") };
        assert_eq!((l.correlation, l.api_id, l.stack), (7, 5, *hash), "max_depth {depth}");
    }
}
