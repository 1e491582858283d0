//! What the timeline sinks (chrome, perfetto) share to draw launches and lanes:
//!
//! - [`Flows`]: flow ids made from a launch's correlation key, one start per id, one bit per
//!   launch;
//! - [`Launches`]: API calls held until their launch stack is known, so the API slice carries it;
//! - [`Reorder`]: device work of each stream put in start order within a bounded window, so lanes
//!   are assigned by start time and exist only where work really overlaps;
//! - [`Lanes`]: which lane each slice of a timeline goes on, late work in the gaps it fits;
//! - [`TimelineSink`]: how a sink feeds these ([`Queues`]) and writes what they release.

mod flows;
mod lanes;
mod launches;
mod reorder;
mod sink;

pub use flows::Flows;
pub use lanes::{Lanes, Placement, KEPT};
pub use launches::{Launches, Ready, HELD_CALLS, KEPT_SITES};
pub use reorder::{timeline_of, Reorder, WINDOW};
pub use sink::{Placed, Queues, TimelineSink};
