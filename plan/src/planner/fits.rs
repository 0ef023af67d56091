//! The event where every active job fits at its base count (and the running
//! ones at what they hold): the planning order cannot change who runs, so
//! none is made. Most events of a loaded but not overloaded cluster are
//! like this, and skipping the order makes them cost a pass over the jobs.

use super::Planner;
use crate::simulator::{Alloc, Ctx};

impl Planner {
    /// Every running job at what it holds, then every waiting one at its
    /// base count, taken from `free`: what the ordered pass and the first
    /// step of `grow` (running jobs get back what they hold) would give.
    pub(super) fn everyone_fits(&self, ctx: &Ctx<'_>, free: &mut [u32]) -> (Vec<usize>, Vec<Option<Alloc>>) {
        let running = self.running.as_slice();
        let mut order = Vec::with_capacity(running.len());
        let mut out = Vec::with_capacity(running.len());
        for &j in running {
            let held = self.held[j];
            if let Some((t, g)) = held {
                free[t as usize] -= g;
            }
            order.push(j);
            out.push(held);
        }
        for j in self.starved.places().chain(self.queue.places()).map(|p| p.3) {
            order.push(j);
            out.push(self.take_base(ctx, j, free));
        }
        (order, out)
    }
}
