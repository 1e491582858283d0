//! How a timeline sink (chrome, perfetto) feeds its queues: API calls wait in [`Launches`] for
//! their launch stack and are written once it is known; device work ends its launch's flow
//! ([`Flows`]) and waits in its timeline's [`Reorder`] window, to be placed in start order. The
//! sink gives its queues and writes one call or one piece of device work; the provided methods
//! do the rest the same way for every timeline sink.

use std::io;

use xpuprof_sdk::model::*;

use super::{timeline_of, Flows, Launches, Ready, Reorder};

/// Device work waiting in the reorder window, with the flow id it may end.
pub type Placed = (DeviceOp, Option<u64>);

/// What a timeline sink holds between records.
#[derive(Debug, Default)]
pub struct Queues {
    /// API calls and launch stacks waiting for each other.
    pub launches: Launches,
    /// The calls ready to write.
    pub ready: Ready,
    /// Flow ids from launches to device work.
    pub flows: Flows,
    /// Device work of each timeline put in start order (allocations per device).
    pub reorder: Reorder<Placed>,
    /// Collectives linked across ranks (placed work, in start order on each stream).
    pub collectives: crate::collectives::Links,
}

/// A sink that writes a timeline of API calls and device work.
pub trait TimelineSink {
    /// The sink's queues.
    fn queues(&mut self) -> &mut Queues;

    /// Writes API call `c` with the stack of its launch (or [`StackId::NONE`]).
    fn write_api_call(&mut self, c: &ApiCall, stack: StackId) -> io::Result<()>;

    /// Writes device work `op`, in start order on its timeline, ending flow `flow` if given.
    fn place(&mut self, op: &DeviceOp, flow: Option<u64>) -> io::Result<()>;

    /// An API call: written now, or held until its launch stack is known.
    fn api_call(&mut self, c: &ApiCall) -> io::Result<()> {
        let q = self.queues();
        q.launches.call(c, &mut q.ready);
        self.write_ready()
    }

    /// A launch site: the calls held for its stack are written; a stack that came before its
    /// call waits for it.
    fn launch_site(&mut self, s: &LaunchSite) -> io::Result<()> {
        if s.correlation.backend != backend::UNCORRELATED {
            let q = self.queues();
            q.launches.stack(s.pid, s.correlation, s.stack, true, &mut q.ready);
        }
        self.write_ready()
    }

    /// Device work: its launch's stack makes the call held for it ready; then it waits in its
    /// timeline's reorder window (allocations and frees in their device's).
    fn device_op(&mut self, op: &DeviceOp) -> io::Result<()> {
        if let (Some(l), Some(c)) = (op.launch, op.correlation) {
            let q = self.queues();
            q.launches.stack(op.pid, c, l.stack, false, &mut q.ready);
            self.write_ready()?;
        }
        let q = self.queues();
        let flow = match (op.launch, op.correlation) {
            (Some(_), Some(c)) => q.flows.end_id(op.pid, c),
            _ => None,
        };
        match q.reorder.push(timeline_of(op), op.start, (op.clone(), flow)) {
            Some((op, flow)) => self.place(&op, flow),
            None => Ok(()),
        }
    }

    /// The end of the trace: every call still held is written without a stack, then the
    /// device work still in the reorder windows is placed.
    fn drain_timeline(&mut self) -> io::Result<()> {
        let q = self.queues();
        q.launches.drain(&mut q.ready);
        self.write_ready()?;
        for (op, flow) in self.queues().reorder.drain() {
            self.place(&op, flow)?;
        }
        Ok(())
    }

    /// Writes the API calls whose launch stack is known (or will not come), keeping the
    /// queue's allocation.
    fn write_ready(&mut self) -> io::Result<()> {
        if self.queues().ready.is_empty() {
            return Ok(());
        }
        let mut ready = std::mem::take(&mut self.queues().ready);
        let mut r = Ok(());
        for (c, stack) in ready.drain(..) {
            r = r.and_then(|()| self.write_api_call(&c, stack));
        }
        self.queues().ready = ready;
        r
    }
}
