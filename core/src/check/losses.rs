//! What the host would lose of a source's records: they go through the host's own pipeline
//! (renumbering, clock conversion, the correlator), as in a session, and device work that
//! reaches no launch is reported with the cause; how much reached its launch stack, and how much
//! its API call alone (a copy without a launch site), is said. (The order of a launch's `ApiCall` and `LaunchSite` does not matter:
//! the correlator holds device work until the site comes; see `pipeline::correlator`.)

use xpuprof_sdk::model::Record;

use super::report::Report;
use crate::pipeline::Pipeline;

/// Runs `batches` (one source's, in emission order) through a pipeline and reports its losses.
pub fn check(batches: &[Vec<u8>], report: &mut Report) {
    let mut pipeline = Pipeline::new(1, false);
    let mut sink = |_: &mut Vec<Record>, _: bool| {};
    for b in batches {
        pipeline.push(0, b, &mut sink);
    }
    pipeline.finish(&mut sink);
    let c = pipeline.stats().correlation;
    judge(&c, report);
}

/// Reports the correlator's counters `c`.
fn judge(c: &crate::pipeline::correlator::CorrelationStats, report: &mut Report) {
    const RULE: &str = "device work reaches its launch";
    if c.device_ops == 0 {
        return;
    }
    let ops = c.device_ops;
    if c.unmatched > 0 {
        report.error(
            RULE,
            format!(
                "{} of {ops} DeviceOps carry a correlation id that no ApiCall or LaunchSite of their process \
                 carries: the host shows them under an unknown launch site and reports them lost; give each \
                 the `correlation` (backend and id) of the API call that launched it",
                c.unmatched
            ),
        );
    }
    if c.unmatched == 0 {
        report.pass(
            RULE,
            format!(
                "{ops} device operations: {} joined with their launch stack, {} with their API call only, {} \
                 without a correlation id",
                c.joined_with_stack, c.joined_api_only, c.uncorrelated
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xpuprof_sdk::codec;
    use xpuprof_sdk::model::*;

    fn batch(records: &[Record]) -> Vec<u8> {
        let mut b = Vec::new();
        for r in records {
            codec::encode(r, &mut b);
        }
        b
    }

    /// Definitions, then per launch id: its API call, its site (unless `no_site`), its kernel, in
    /// one of two orders.
    fn session(ids: &[u64], no_site: &[u64], api_first: bool) -> Vec<Vec<u8>> {
        let corr = |id| Some(Correlation { backend: backend::TEST, id });
        let mut recs = vec![
            Record::Str(StrDef::new(StrId(1), "launch")),
            Record::Device(DeviceDef::default().id(DeviceId(1)).name(StrId(1))),
            Record::Stream(StreamDef::default().id(StreamId(1)).device(DeviceId(1)).pid(7)),
            Record::Frame(FrameDef::default().id(FrameId(1)).name(StrId(1))),
            Record::Stack(StackDef::new(StackId(1), vec![FrameId(1)])),
        ];
        let t = xpuprof_sdk::clock::now_ns();
        for &id in ids {
            let call = Record::ApiCall(
                ApiCall::default().pid(7).tid(7).start(t).end(t).name(StrId(1)).correlation(corr(id)),
            );
            let site = LaunchSite::default().pid(7).tid(7).time(t).stack(StackId(1)).api(StrId(1));
            let site = Record::LaunchSite(site.correlation(Correlation { backend: backend::TEST, id }));
            let op = Record::DeviceOp(
                DeviceOp::default()
                    .kind(DeviceOpKind::Kernel)
                    .pid(7)
                    .device(DeviceId(1))
                    .stream(StreamId(1))
                    .start(t)
                    .end(t + 10)
                    .name(StrId(1))
                    .correlation(corr(id)),
            );
            // API call first: its device work comes before its site (the order that lost the
            // first launch's stack); else the site, the call, the work.
            let mut launch = vec![call, op];
            if !no_site.contains(&id) {
                launch.insert(if api_first { 2 } else { 0 }, site);
            }
            recs.extend(launch);
        }
        vec![batch(&recs)]
    }

    fn run(batches: &[Vec<u8>]) -> Report {
        let mut r = Report::default();
        check(batches, &mut r);
        r
    }

    #[test]
    fn either_order_of_api_call_and_launch_site_keeps_every_stack() {
        for api_first in [true, false] {
            let r = run(&session(&[1, 2, 3], &[], api_first));
            assert!(r.passed(), "{r}");
            assert!(
                r.to_string().contains("3 device operations: 3 joined with their launch stack, 0 with"),
                "{r}"
            );
        }
    }

    #[test]
    fn work_without_its_launch_is_an_error_work_with_its_api_call_only_is_counted() {
        let mut b = session(&[1, 2], &[2], true);
        let stray = DeviceOp::default()
            .kind(DeviceOpKind::Kernel)
            .pid(7)
            .device(DeviceId(1))
            .stream(StreamId(1))
            .name(StrId(1))
            .correlation(Some(Correlation { backend: backend::TEST, id: 99 }));
        b.push(batch(&[Record::DeviceOp(stray)]));
        let r = run(&b);
        let text = r.to_string();
        assert!(
            text.contains("ERROR   device work reaches its launch: 1 of 3 DeviceOps carry a correlation id"),
            "{text}"
        );
        assert_eq!(r.errors().count(), 1, "a launch without a site (a copy) is no error: {text}");
        let r = run(&session(&[1, 2], &[2], true));
        let counted = "2 device operations: 1 joined with their launch stack, 1 with their API call only";
        assert!(r.passed() && r.to_string().contains(counted), "{r}");
    }
}
