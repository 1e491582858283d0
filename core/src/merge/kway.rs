//! The streaming merge: each recording is replayed on its own thread into a bounded channel
//! of batches, and the merge takes, record by record, the one whose (aligned) time is least
//! among the recordings' next records. Each recording's records keep their own order (a
//! definition still precedes its uses); memory is a few batches per recording, however long
//! the recordings are.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::mpsc::{sync_channel, Receiver};
use std::thread::JoinHandle;

use xpuprof_archive::{ArchiveError, Reader, ReplayStats};
use xpuprof_sdk::model::Record;

use super::renumber::time_of;

/// Batches a recording's replay thread may run ahead of the merge.
const AHEAD: usize = 4;

/// One recording being replayed.
pub struct Feed {
    rx: Receiver<Vec<Record>>,
    batch: VecDeque<Record>,
    thread: Option<JoinHandle<Result<ReplayStats, ArchiveError>>>,
    shift: u64,
}

impl Feed {
    /// Starts replaying `reader` on a thread; its times are compared moved by `shift` ns.
    pub fn start(mut reader: Reader, shift: u64) -> Self {
        let (tx, rx) = sync_channel(AHEAD);
        let thread = std::thread::Builder::new()
            .name("xpuprof-merge".into())
            .spawn(move || {
                // A send fails only when the merge stopped listening: the rest is not needed.
                reader.replay_records(&mut |batch| drop(tx.send(std::mem::take(batch))))
            })
            .ok();
        Self { rx, batch: VecDeque::new(), thread, shift }
    }

    /// The merge time of the next record, waiting for the replay; `None` at the end.
    fn head(&mut self) -> Option<u64> {
        while self.batch.is_empty() {
            self.batch = self.rx.recv().ok()?.into();
        }
        self.batch.front().map(|r| match time_of(r) {
            0 => 0,
            t => t.saturating_add(self.shift),
        })
    }

    /// What the replay found: its stats, or why it failed.
    pub fn finish(mut self) -> Result<ReplayStats, String> {
        drop(self.rx);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r.map_err(|e| e.to_string()),
            Some(Err(_)) => Err("the replay thread panicked".into()),
            None => Err("failed to start a replay thread".into()),
        }
    }
}

/// Calls `f(i, record)` with every record of every feed, least merge time first.
pub fn merge(feeds: &mut [Feed], f: &mut dyn FnMut(usize, Record)) {
    let mut heap = BinaryHeap::new();
    for (i, feed) in feeds.iter_mut().enumerate() {
        if let Some(t) = feed.head() {
            heap.push(Reverse((t, i)));
        }
    }
    while let Some(Reverse((_, i))) = heap.pop() {
        let feed = &mut feeds[i];
        // Records of one feed go on while it stays least: one heap operation per switch.
        while let Some(r) = feed.batch.pop_front() {
            f(i, r);
            match feed.head() {
                None => break,
                Some(t) if heap.peek().is_none_or(|Reverse(top)| (t, i) <= *top) => continue,
                Some(t) => {
                    heap.push(Reverse((t, i)));
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use xpuprof_archive::{Meta, Writer};
    use xpuprof_sdk::model::{CpuSample, StrDef, StrId};

    use super::*;

    fn archive(dir: &Path, records: &[Record]) -> Reader {
        let mut w = Writer::create(&dir.join("archive"), &Meta::default()).unwrap();
        for r in records {
            w.write(r).unwrap();
        }
        w.finish().unwrap();
        xpuprof_archive::open(dir).unwrap()
    }

    fn sample(pid: u32, time: u64) -> Record {
        Record::CpuSample(CpuSample::default().pid(pid).tid(pid).time(time).weight(1))
    }

    #[test]
    fn records_come_least_time_first_and_each_recording_keeps_its_order() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let def = Record::Str(StrDef::new(StrId(1), "x"));
        // Thousands of records, so the feeds run through several batches.
        let ra: Vec<_> =
            std::iter::once(def.clone()).chain((0..3000).map(|i| sample(1, 100 + i * 10))).collect();
        let rb: Vec<_> = std::iter::once(def).chain((0..3000).map(|i| sample(2, i * 10))).collect();
        // Recording b is shifted by 95 ns: its samples fall 5 ns before a's.
        let mut feeds = [Feed::start(archive(a.path(), &ra), 0), Feed::start(archive(b.path(), &rb), 95)];
        let mut got = Vec::new();
        merge(&mut feeds, &mut |i, r| got.push((i, time_of(&r))));
        assert_eq!(got.len(), 6002);
        assert_eq!(&got[..2], &[(0, 0), (1, 0)], "definitions go first");
        let merged: Vec<u64> = got.iter().map(|(i, t)| if *i == 1 && *t > 0 { t + 95 } else { *t }).collect();
        assert!(merged.windows(2).all(|w| w[0] <= w[1]), "out of time order");
        for k in 0..2 {
            let own: Vec<u64> = got.iter().filter(|(i, _)| *i == k).map(|(_, t)| *t).collect();
            assert!(own.windows(2).all(|w| w[0] <= w[1]), "recording {k} out of its own order");
        }
        for f in feeds {
            assert_eq!(f.finish().unwrap().records, 3001);
        }
    }
}
