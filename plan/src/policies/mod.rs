//! Baseline policies the planner is compared with, all with the GPU counts
//! the jobs requested: FIFO, SJF with true durations (the oracle),
//! Tiresias-style two-dimensional least-attained-service, EDF; and
//! ElasticFlow's elastic EDF (`edf-elastic`), its Tiresias (`dlas-gpu`), its
//! Gandiva (`gandiva`) and its Themis (`themis`). The planner
//! itself (and its fixed-count ablation, `fixed`) lives in `crate::planner`,
//! which uses the GPU-type choice below; every policy by name is in
//! `crate::registry`.

mod dlas;
mod edf;
mod fifo;
mod gandiva;
mod ordered;
mod sjf;
mod themis;
mod tiresias;

pub use dlas::DlasGpu;
pub use edf::{Edf, EdfElastic};
pub use fifo::Fifo;
pub use gandiva::Gandiva;
pub use ordered::{Key, Order, Ordered};
pub use sjf::SjfOracle;
pub use themis::Themis;
pub use tiresias::Tiresias;

use crate::workload::PJob;

/// Whether the rules (the true curve) allow `n` GPUs of `job` on type `t`:
/// unless they allow only measured counts and `n` is not one.
fn allows_count(job: &PJob, t: usize, n: u32) -> bool {
    job.truth[t].as_deref().is_some_and(|c| !c.discrete || c.is_measured(n))
}

/// For a job with one GPU type in its belief, whether `n` GPUs of it can
/// run (believed and allowed): what [`pick_type`] answers there, given room.
/// `None` for a job with several types.
pub fn runs_on_its_only_type(job: &PJob, n: u32) -> Option<bool> {
    match job.belief.as_slice() {
        [c] => Some(c.is_some() && allows_count(job, 0, n)),
        _ => None,
    }
}

/// A GPU type for `n` GPUs of `job` among those with `free` room: the job's
/// current type while it fits and is within 25% of the fastest that fits
/// (moving costs a restart), else the fastest that fits, provided that one
/// reaches `min_ratio` of the job's best type.
pub fn pick_type(job: &PJob, cur: Option<u16>, n: u32, free: &[u32], min_ratio: f64) -> Option<u16> {
    let allows = |t: usize| allows_count(job, t, n);
    if let Some(runs) = runs_on_its_only_type(job, n) {
        // One GPU type: nothing to compare (the common case, and the hot path on big clusters).
        return (runs && free[0] >= n).then_some(0);
    }
    let mut best_any = 0.0f64;
    let mut choice: Option<(u16, f64)> = None;
    for (t, c) in job.belief.iter().enumerate() {
        let Some(c) = c.as_deref().filter(|_| allows(t)) else {
            continue;
        };
        let r = c.r(n);
        best_any = best_any.max(r);
        if free[t] >= n && choice.is_none_or(|(_, b)| r > b) {
            choice = Some((t as u16, r));
        }
    }
    let (t, r) = choice?;
    if let Some(c) = cur.filter(|&c| {
        c != t
            && free[c as usize] >= n
            && job.belief[c as usize].is_some()
            && allows(c as usize)
            && job.belief_rate(c, n) * 1.25 >= r
    }) {
        return Some(c);
    }
    (r >= min_ratio * best_any).then_some(t)
}
