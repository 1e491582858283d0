//! Perfetto sink throughput and size: writing a long run of launches (per launch: an API call,
//! its launch site and its kernel, so three records) as a Perfetto trace. Prints the bytes per
//! launch of each configuration next to the throughput.
//!
//! Time is the benchmark thread's CPU time, not wall time: the development machine is shared
//! (load averages of 15+ on 2 cores), where wall time measures the neighbours.

use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use xpuprof_archive::sample;
use xpuprof_plugin_perfetto::{config, TraceOptions, TraceWriter};

const LAUNCHES: usize = 100_000;

/// CPU time of the calling thread (`CLOCK_THREAD_CPUTIME_ID`).
struct ThreadCpuTime;

fn thread_cpu_now() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant Linux supports.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

impl Measurement for ThreadCpuTime {
    type Intermediate = Duration;
    type Value = Duration;

    fn start(&self) -> Duration {
        thread_cpu_now()
    }

    fn end(&self, start: Duration) -> Duration {
        thread_cpu_now().saturating_sub(start)
    }

    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }

    fn zero(&self) -> Duration {
        Duration::ZERO
    }

    fn to_f64(&self, v: &Duration) -> f64 {
        v.as_nanos() as f64
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        criterion::measurement::WallTime.formatter()
    }
}

fn write(records: &[xpuprof_sdk::model::Record], opts: &TraceOptions) -> u64 {
    let mut w = TraceWriter::new(std::io::sink(), opts.clone());
    for r in records {
        w.record(r).unwrap();
    }
    w.finish().unwrap().1.file_bytes
}

fn bench(c: &mut Criterion<ThreadCpuTime>) {
    let records = sample::launches(LAUNCHES);
    let mut g = c.benchmark_group("perfetto");
    g.throughput(Throughput::Elements(records.len() as u64));
    g.sample_size(10);
    let mut plain = config::defaults();
    plain.output.compress = false;
    let mut bare = config::defaults();
    bare.args = false;
    for (name, opts) in
        [("write", config::defaults()), ("write_uncompressed", plain), ("write_no_args", bare)]
    {
        let bytes = write(&records, &opts);
        eprintln!("perfetto/{name}: {:.1} bytes per launch", bytes as f64 / LAUNCHES as f64);
        g.bench_function(name, |b| b.iter(|| write(&records, &opts)));
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(ThreadCpuTime);
    targets = bench
}
criterion_main!(benches);
