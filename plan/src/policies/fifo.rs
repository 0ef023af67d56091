//! First in, first out, no backfilling: a job waits until every earlier job runs.

use super::ordered::{Key, Order};
use crate::simulator::Ctx;
use crate::waitqueue::ordered_bits;

pub struct Fifo;

impl Order for Fifo {
    fn name(&self) -> String {
        "fifo".into()
    }

    fn key(&self, ctx: &Ctx<'_>, j: usize, _running: bool) -> Key {
        (ordered_bits(ctx.w.jobs[j].submit), 0, 0, j)
    }

    fn strict(&self) -> bool {
        true
    }
}
