//! An agent's own work per launch, on the application thread: the launch-site path that runs
//! inside the vendor's API enter and exit callbacks (CUPTI's, for the CUPTI agent): clock reads,
//! stack walk, hash, dedup, entry write, publish under the thread buffer's lock, without the
//! vendor library. The stack is a synthetic frame-pointer chain of 16 frames on this thread's
//! stack, the depth of a launch from a small program through libcudart and libcuda. The buffers
//! are drained every 1024 launches, as the agent's other threads do; the drains are not timed.
//! Timestamps with `clock_gettime`, then from the TSC (where this machine allows it; the last
//! variant then measures the same as the first).
//!
//! `cargo bench -p xpuprof-agent-kit --bench launch_site`

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use xpuprof_agent_kit::launches::{Registry, Sites};
use xpuprof_agent_kit::modules::Known;
use xpuprof_agent_kit::timestamps::Clock;

const FRAMES: usize = 16;
/// CUPTI's driver-API callback domain, as the CUPTI agent records it.
const DOMAIN_DRIVER: u8 = 1;

/// Runs `n` launches (enter + exit) with the stack walk starting in `chain`; times the
/// application thread's part only (the drains, done by the agent's other threads, are not timed).
fn launches(
    reg: &Registry,
    sites: &Sites<'_>,
    clock: &Clock,
    chain: &[usize],
    n: u64,
    first_id: u32,
) -> Duration {
    let fp = chain.as_ptr() as usize;
    let mut out = Vec::with_capacity(1 << 20);
    let mut total = Duration::ZERO;
    let mut done = 0;
    while done < n {
        let chunk = (n - done).min(1024);
        let t = Instant::now();
        for i in done..done + chunk {
            reg.enter(sites, DOMAIN_DRIVER, 307, first_id.wrapping_add(i as u32), fp, fp);
            reg.exit(0);
        }
        total += t.elapsed();
        done += chunk;
        reg.drain(&mut out, clock);
        out.clear();
    }
    total
}

fn bench(c: &mut Criterion) {
    // [next frame pointer, return address] pairs, laid out upwards like a real stack.
    let mut chain = [0usize; 2 * FRAMES + 2];
    let base = chain.as_ptr() as usize;
    for i in 0..FRAMES {
        chain[2 * i] = if i + 1 < FRAMES { base + 16 * (i + 1) } else { 0 };
        chain[2 * i + 1] = 0x5555_0000_1000 + 0x40 * i;
    }
    let chain = std::hint::black_box(chain);
    let known = Known::default();
    let reg = Registry::default();
    let mut g = c.benchmark_group("launch_site");
    let mut id = 1u32;
    // The TSC switch is process-wide and one-way: clock_gettime variants first.
    for (name, stacks, tsc) in [
        ("enter_exit_with_stack_16_frames", true, false),
        ("enter_exit_api_only", false, false),
        ("enter_exit_with_stack_16_frames_tsc", true, true),
    ] {
        let sites = Sites { record_entries: true, stacks, max_depth: 64, own_code: &[], known: &known };
        let clock = Clock::new(tsc);
        if tsc && !clock.is_tsc() {
            eprintln!("the TSC is not usable here: {name} uses clock_gettime");
        }
        g.bench_function(name, |b| {
            b.iter_custom(|n| {
                let d = launches(&reg, &sites, &clock, &chain, n, id);
                id = id.wrapping_add(n as u32);
                d
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
