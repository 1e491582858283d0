//! The launch-site registry across a pause of the agent's callbacks: a call that entered before
//! the pause and whose exit callback never came is closed at the thread's next entry, so later
//! calls keep their own launch entries and stacks instead of reading as nested in it. And across
//! sessions (an agent attached again to a new host): every stack is defined again.

mod common;

use xpuprof_agent_kit::launches::{Registry, Sites};
use xpuprof_agent_kit::wire::launches::{parse, Entry, Launch};
use xpuprof_agent_kit::{modules, stack, timestamps, wire};

/// Runs `calls` against a fresh registry (agent stacks on) and returns the launch entries it
/// drained.
fn launches(calls: impl FnOnce(&Registry, &Sites<'_>)) -> Vec<Launch> {
    let known = modules::Known::default();
    let sites = Sites { record_entries: true, stacks: true, max_depth: 64, own_code: &[], known: &known };
    let r = Registry::default();
    calls(&r, &sites);
    common::drained_launches(&r)
}

#[test]
fn a_call_left_open_by_a_pause_is_closed_at_the_next_entry() {
    let got = launches(|r, sites| {
        // Entered while collecting; the pause turns the callbacks off before its exit.
        assert!(r.enter(sites, 1, 7, 100, stack::registers()).is_some());
        r.new_epoch();
        // After the resume: a new outermost call, not one nested in call 100.
        assert!(r.enter(sites, 1, 7, 101, stack::registers()).is_some(), "call 101 read as nested");
        r.exit(0);
    });
    assert_eq!(got.iter().map(|l| l.correlation).collect::<Vec<_>>(), [100, 101]);
    for l in &got {
        assert_eq!(l.flags & wire::LAUNCH_NESTED, 0, "{l:?}");
        assert_ne!(l.stack, 0, "{l:?} has no stack");
        assert!(l.end >= l.time && l.end > 0, "{l:?} has no exit time");
    }
    // Call 100's exit was never seen: its exit time is its entry time.
    assert_eq!(got[0].end, got[0].time);
}

#[test]
fn without_a_pause_an_inner_call_stays_nested() {
    let got = launches(|r, sites| {
        assert!(r.enter(sites, 1, 7, 200, stack::registers()).is_some());
        assert!(r.enter(sites, 2, 9, 201, stack::registers()).is_none());
        r.exit(0);
        r.exit(0);
    });
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].flags & wire::LAUNCH_NESTED, wire::LAUNCH_NESTED);
}

#[test]
fn a_call_whose_entry_came_before_the_callbacks_is_recorded_at_its_exit() {
    let got = launches(|r, sites| {
        // Call 300 entered before a window opened; only its exit callback comes.
        assert!(r.exit_unentered(sites, 1, 7, 300, stack::registers(), 0), "call 300 not recorded");
        // An ordinary call after it, and a runtime call whose nested driver call (same
        // correlation id) had an entry: its exit is not a second call.
        assert!(r.enter(sites, 1, 7, 301, stack::registers()).is_some());
        assert!(!r.exit_unentered(sites, 1, 7, 301, stack::registers(), 0), "301 has an open entry");
        r.exit(0);
        assert!(!r.exit_unentered(sites, 0, 7, 301, stack::registers(), 0), "301 recorded twice");
    });
    assert_eq!(got.iter().map(|l| l.correlation).collect::<Vec<_>>(), [300, 301]);
    for l in &got {
        assert_eq!(l.flags & wire::LAUNCH_NESTED, 0, "{l:?}");
        assert_ne!(l.stack, 0, "{l:?} has no stack");
    }
    // Call 300's entry was not seen: its entry time is when its exit callback came.
    assert!(got[0].end >= got[0].time && got[0].time > 0, "{:?}", got[0]);
}

/// One launch from the same call site: its stack is defined with the first launch of each session.
#[inline(never)]
fn launch_here(r: &Registry, sites: &Sites<'_>, correlation: u32) {
    assert!(r.enter(sites, 1, 7, correlation, stack::registers()).is_some());
    r.exit(0);
}

#[test]
fn a_new_session_defines_every_stack_again() {
    let known = modules::Known::default();
    let sites = Sites { record_entries: true, stacks: true, max_depth: 64, own_code: &[], known: &known };
    let r = Registry::default();
    let clock = timestamps::Clock::new(false);
    let stacks_drained = |r: &Registry| {
        let mut out = Vec::new();
        r.drain(&mut out, &clock);
        let (msgs, _) = wire::split_messages(&out);
        let entries: Vec<Entry> = msgs
            .iter()
            .filter(|m| m.ty == wire::MSG_LAUNCHES)
            .flat_map(|m| parse(m.payload, wire::PROTOCOL).1)
            .collect();
        entries.iter().filter(|e| matches!(e, Entry::Stack { .. })).count()
    };
    // One call site: every round launches from the same line.
    let mut got = Vec::new();
    for round in 0..4u32 {
        if round == 3 {
            r.new_session();
        }
        launch_here(&r, &sites, round);
        got.push(stacks_drained(&r));
    }
    assert_eq!(got, [1, 0, 0, 1], "defined once per host: again after the new session");
}
