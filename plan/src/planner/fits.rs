//! The event where every active job fits at its base count (and the running
//! ones at what they hold): the planning order cannot change who runs, so
//! none is made. Most events of a loaded but not overloaded cluster are
//! like this, and skipping the order makes them cost a pass over the jobs.

use super::Planner;
use crate::simulator::{Alloc, Ctx};

impl Planner {
    /// Every running job, then every waiting one, each at its base count
    /// taken from `free` (a running job gets back what it holds in `grow`).
    pub(super) fn everyone_fits(&self, ctx: &Ctx<'_>, free: &mut [u32]) -> (Vec<usize>, Vec<Option<Alloc>>) {
        let order: Vec<usize> = self
            .running
            .as_slice()
            .iter()
            .copied()
            .chain(self.starved.places().map(|p| p.3))
            .chain(self.queue.places().map(|p| p.3))
            .collect();
        let out = order.iter().map(|&j| self.take_base(ctx, j, free)).collect();
        (order, out)
    }
}
