//! The launch detail switch (`xpuprof_launch_detail`, issue #29's in-process windows): launch
//! entries without a stack at level 0, stacks at levels 1 and 2, and timed entries counted by
//! `xpuprof_launch_counts` with their ticks split into the walk and the Python frames.

mod common;

use xpuprof_agent_kit::detail::{xpuprof_launch_counts, xpuprof_launch_detail, COUNTS, TIMED};
use xpuprof_agent_kit::launches::{Registry, Sites};
use xpuprof_agent_kit::{modules, stack};

fn counts() -> [u64; COUNTS] {
    let mut c = [0; COUNTS];
    // SAFETY: COUNTS writable words.
    assert_eq!(unsafe { xpuprof_launch_counts(c.as_mut_ptr(), COUNTS as i32) }, COUNTS as i32);
    c
}

#[inline(never)]
fn launch(r: &Registry, sites: &Sites<'_>, correlation: u32) {
    assert!(r.enter(sites, 1, 7, correlation, stack::registers()).is_some());
    r.exit(0);
}

#[test]
fn levels_switch_stacks_and_timing_in_the_running_process() {
    let known = modules::Known::default();
    let sites = Sites { record_entries: true, stacks: true, max_depth: 64, own_code: &[], known: &known };
    let r = Registry::default();
    let before = xpuprof_launch_detail(-1);
    assert_eq!(before, 2, "full stacks by default");

    // One call site for every level: the stacks differ only by what the level records.
    let levels = [0, 1].into_iter().chain([2 | TIMED as i32; 10]);
    let mut c0 = [0; COUNTS];
    for (k, level) in (1..).zip(levels) {
        if k == 3 {
            c0 = counts();
        }
        xpuprof_launch_detail(level);
        launch(&r, &sites, k);
    }
    let c1 = counts();
    xpuprof_launch_detail(before);

    let got = common::drained_launches(&r);
    assert_eq!(got.iter().map(|l| l.correlation).collect::<Vec<_>>(), (1..13).collect::<Vec<_>>());
    assert_eq!(got[0].stack, 0, "level 0 records the entry without a stack: {:?}", got[0]);
    assert!(got[1..].iter().all(|l| l.stack != 0), "levels 1 and 2 walk: {got:?}");
    assert_eq!(got[1].stack, got[2].stack, "no Python here: native frames only are the full stack");
    // Walks, timed entries (10), and their ticks: the walk's share is part of the whole.
    assert!(c1[0] - c0[0] >= 10, "{c0:?} -> {c1:?}");
    assert_eq!(c1[5] - c0[5], 10, "timed entries: {c0:?} -> {c1:?}");
    let (all, walk) = (c1[6] - c0[6], c1[7] - c0[7]);
    assert!(all > 0 && walk <= all, "ticks in all {all}, in the walk {walk}");
    assert!(c1[9] >= c0[9], "the clock goes forward");
    assert!(c1[10] - c0[10] >= 10, "each timed stack has frames: {c0:?} -> {c1:?}");
}
