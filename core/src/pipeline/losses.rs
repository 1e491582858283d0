//! Loss accounting at the end of a session: what the pipeline itself dropped or could not
//! join becomes `Loss` records (so every sink shows it) and the end summary's counters. Losses
//! the sources report are counted as they pass (`translate.rs`).

use xpuprof_sdk::model::*;

use super::{SessionState, SourceState};

impl SessionState {
    /// Reports malformed records, device work without a launch site and records of unpaired
    /// clock domains, each as one `Loss` record.
    pub(super) fn report_losses(&mut self, sources: &[SourceState]) {
        let malformed: u64 = sources.iter().map(|s| s.malformed).sum();
        if malformed > 0 {
            let text = "malformed records from a source, skipped";
            self.losses.insert(text.to_owned(), malformed);
            let cause = self.globals.intern(text, &mut self.out);
            let time = self.last_time;
            self.emit(Record::Loss(Loss::default().time(time).cause(cause).count(malformed)));
        }
        let unmatched = self.correlator.stats().unmatched;
        if unmatched > 0 {
            let cause = self.globals.intern("device work without a launch site", &mut self.out);
            self.emit(Record::Loss(Loss::default().time(self.last_time).cause(cause).count(unmatched)));
        }
        let unconverted: u64 = sources.iter().map(|s| s.clocks.unconvertible).sum();
        if unconverted > 0 {
            let text = "records in a clock domain never paired with the session clock";
            let cause = self.globals.intern(text, &mut self.out);
            *self.losses.entry(text.to_owned()).or_default() += unconverted;
            self.emit(Record::Loss(Loss::default().time(self.last_time).cause(cause).count(unconverted)));
        }
    }
}
