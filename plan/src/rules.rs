//! The rules a schedule is planned, simulated and verified under.
//!
//! tracecast's own rules (`simple`) interpolate GPU counts between measured
//! ones, charge a flat restart cost per change, run every job (best effort
//! when a deadline cannot be met) and let placement cost throughput.
//! `elasticflow` is ElasticFlow's simulator's set (ASPLOS'23, pkusys/ElasticFlow
//! `scheduler/` at 04a0109), so that a plan can be compared with it on equal
//! terms:
//! - GPU counts only those the throughput table measured, each job capped at
//!   its batch size and 64 (`jobs.py:294-302`); tracecast's planner keeps to
//!   the tighter per-model caps of ElasticFlow's own (`models.py:80-128`);
//! - decisions in rounds at least 60 s apart (`scheduler.py:2036-2045`); a job
//!   that finishes between rounds holds its GPUs until the next one;
//! - ElasticFlow's overhead formula (`utils.estimate_overhead`) charged at
//!   every round to every job holding GPUs, instead of a flat restart cost;
//! - admission control: a deadline job that is not admitted never runs and
//!   counts as a missed deadline;
//! - placement never changes throughput.

use serde::{Deserialize, Serialize};

/// A job's GPUs as (node, GPUs on it) pairs (`placement::Placement`; named
/// apart so that the rules, which the workload holds, need no placement code).
type GpuSet = Vec<(u32, u32)>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Counts {
    /// Any count; between measured counts the throughput is interpolated.
    Interpolated,
    /// Only counts the throughput table measured.
    Measured,
}

impl Counts {
    pub fn name(self) -> &'static str {
        match self {
            Counts::Interpolated => "interpolated",
            Counts::Measured => "measured",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Overhead {
    /// `restart_s` without progress after every change but a job's first start.
    Flat,
    /// ElasticFlow's per-round formula (see [`EfOverhead`]).
    ElasticFlow,
}

/// How ElasticFlow's simulator charges its overhead formula; it differs by scheduler.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EfCharge {
    /// Its planner (and tracecast's own policies under its rules): every
    /// round, but a GPU set the job held since the last flush costs only the
    /// base.
    #[default]
    Remembered,
    /// Its Gandiva (`gandiva_sim_jobs`): the whole formula every round while
    /// jobs are still to arrive, nothing after the last arrival.
    EveryRoundWhileArriving,
    /// Its Tiresias (`dlas_sim_jobs`): the whole formula for a start, paid
    /// at the job's next round out of the time it ran since (nothing if it
    /// finished first); and to every running job in every 60th round, where
    /// a start pays it at once.
    DeferredStarts,
    /// Its Themis (`themis_sim_jobs`, which re-plans every 60 s): the formula
    /// computed once per job and charged in rounds whose running set
    /// changed, until the job's first round whose running set did not;
    /// nothing from then on.
    UntilSteady,
    /// Its EDF (`one_queue_edf_sim_jobs`, where the charge is commented out).
    Never,
}

/// Where in the run a job is charged.
#[derive(Clone, Copy, Debug)]
pub struct ChargeAt {
    /// The round's index (0-based).
    pub round: u64,
    /// Jobs are still to arrive after this round.
    pub arriving: bool,
    /// The job starts a segment in this round.
    pub started: bool,
    /// Some job started, stopped or finished in this round.
    pub set_changed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Admission {
    /// Every job runs; a deadline that cannot be met is served best effort.
    BestEffort,
    /// A deadline job may be rejected on arrival: it never runs and counts as missed.
    Reject,
}

impl Admission {
    pub fn name(self) -> &'static str {
        match self {
            Admission::BestEffort => "best_effort",
            Admission::Reject => "reject",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuCap {
    /// A job may use up to the cluster's GPUs.
    None,
    /// ElasticFlow's: every policy at most the batch size and 64 GPUs; the
    /// planner ElasticFlow's per-model caps (`models.get_max_gpu`, A100).
    ElasticFlow,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rules {
    /// `simple` or `elasticflow`.
    pub name: String,
    pub counts: Counts,
    pub overhead: Overhead,
    pub admission: Admission,
    pub gpu_cap: GpuCap,
    /// Least time between two decision rounds (0: decide at every event).
    pub round_gap_s: f64,
    /// Placement spread costs throughput (the workload's penalty factors).
    pub placement_penalty: bool,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            name: "simple".into(),
            counts: Counts::Interpolated,
            overhead: Overhead::Flat,
            admission: Admission::BestEffort,
            gpu_cap: GpuCap::None,
            round_gap_s: 0.0,
            placement_penalty: true,
        }
    }
}

impl Rules {
    pub fn elasticflow() -> Rules {
        Rules {
            name: "elasticflow".into(),
            counts: Counts::Measured,
            overhead: Overhead::ElasticFlow,
            admission: Admission::Reject,
            gpu_cap: GpuCap::ElasticFlow,
            round_gap_s: 60.0,
            placement_penalty: false,
        }
    }

    /// These rules with GPU counts as `counts` allows (named `<set>+counts=...` when that changes them).
    pub fn with_counts(mut self, counts: Counts) -> Rules {
        if self.counts != counts {
            self.counts = counts;
            self.name = format!("{}+counts={}", self.name, counts.name());
        }
        self
    }

    /// These rules with admission as `admission` (named `<set>+admission=...` when that changes them).
    pub fn with_admission(mut self, admission: Admission) -> Rules {
        if self.admission != admission {
            self.admission = admission;
            self.name = format!("{}+admission={}", self.name, admission.name());
        }
        self
    }

    /// The most GPUs any policy may give a job of this model and global batch
    /// size: under ElasticFlow's rules its batch size, at most 64
    /// (`jobs.py:294-302`, which every ElasticFlow policy but its own obeys).
    pub fn cap(&self, model: Option<&str>, batch_size: Option<u32>) -> u32 {
        match (self.gpu_cap, model) {
            (GpuCap::ElasticFlow, Some(_)) => batch_size.unwrap_or(64).clamp(1, 64),
            _ => u32::MAX,
        }
    }

    /// The most GPUs tracecast's planner gives such a job: under ElasticFlow's
    /// rules the per-model caps ElasticFlow's own planner keeps to.
    pub fn planner_cap(&self, model: Option<&str>, batch_size: Option<u32>) -> u32 {
        match (self.gpu_cap, model) {
            (GpuCap::ElasticFlow, Some(m)) => elasticflow_max_gpu(m, batch_size).min(self.cap(model, batch_size)),
            _ => u32::MAX,
        }
    }
}

/// ElasticFlow's `models.get_max_gpu(job, 'A100')`: per-model caps; otherwise
/// the batch size (one sample per GPU at least), at most 64.
fn elasticflow_max_gpu(model: &str, batch_size: Option<u32>) -> u32 {
    let bs = batch_size.unwrap_or(64);
    let default = bs.min(64);
    match (model.to_ascii_lowercase().as_str(), bs) {
        ("deepspeech2", _) => bs,
        ("gpt2", 128) => 16,
        ("gpt2", 256) => 32,
        ("bert", 64) => 8,
        ("bert", _) => 16,
        ("inception3", 64) => 16,
        ("inception3", 128) => 32,
        ("resnet50", 64) => 32,
        ("vgg16", 64) => 32,
        _ => default,
    }
}

/// ElasticFlow's overhead per round (`utils.estimate_overhead`, charged at
/// `scheduler.py:1986-1999`): every job holding GPUs pays a base of 2 s (7 s
/// on clusters of 256 GPUs or more); a job on a GPU set not seen since the
/// last flush pays 2 (log2 n + 1) s more; every 60th round the memory of GPU
/// sets is flushed, and the jobs not in it pay 27 s (47 s on 256+ GPUs) more
/// in that round. ElasticFlow remembers GPU sets across jobs; here each job
/// remembers its own, which never charges less, and makes a job's charge
/// independent of the order jobs are looked at.
#[derive(Clone, Copy, Debug)]
pub struct EfOverhead {
    big: bool,
}

/// A job's GPU sets since the last flush.
#[derive(Clone, Debug, Default)]
pub struct SeenSets {
    epoch: u64,
    seen: Vec<GpuSet>,
    /// `until_steady`: the charge fixed at the job's first charged round (0
    /// from its first round whose running set did not change).
    fixed: Option<f64>,
    /// `deferred_starts`: a start's charge not yet paid.
    owed: f64,
}

impl SeenSets {
    /// The start's charge still owed (`deferred_starts`), now paid.
    pub fn take_owed(&mut self) -> f64 {
        std::mem::take(&mut self.owed)
    }
}

/// Rounds between two flushes (ElasticFlow reuses `--scheduling_slot=60` as the count).
const FLUSH_EVERY: u64 = 60;

impl EfOverhead {
    pub fn new(cluster_gpus: u64) -> EfOverhead {
        EfOverhead {
            big: cluster_gpus >= 256,
        }
    }

    /// The overhead (seconds) charged as `how` says at `at` to a job holding
    /// `gpus` GPUs on `p`.
    pub fn charge(&self, how: EfCharge, at: ChargeAt, gpus: u32, p: &[(u32, u32)], mem: &mut SeenSets) -> f64 {
        let flush = at.round > 0 && at.round.is_multiple_of(FLUSH_EVERY);
        match how {
            EfCharge::Remembered => self.remembered(at.round, gpus, p, mem),
            EfCharge::EveryRoundWhileArriving if at.arriving => self.cost(gpus, flush, false),
            EfCharge::DeferredStarts if flush => self.cost(gpus, true, false),
            EfCharge::DeferredStarts if at.started => {
                mem.owed = self.cost(gpus, false, false);
                0.0
            }
            EfCharge::UntilSteady => {
                if !at.set_changed {
                    mem.fixed = Some(0.0);
                }
                match mem.fixed {
                    Some(o) => o,
                    None => {
                        let o = self.remembered(at.round, gpus, p, mem);
                        mem.fixed = Some(o);
                        o
                    }
                }
            }
            EfCharge::EveryRoundWhileArriving | EfCharge::DeferredStarts | EfCharge::Never => 0.0,
        }
    }

    fn remembered(&self, round: u64, gpus: u32, p: &[(u32, u32)], mem: &mut SeenSets) -> f64 {
        // Rounds 60k+1 ..= 60(k+1) share a memory; the flush round still sees the old one.
        let epoch = round.saturating_sub(1) / FLUSH_EVERY;
        if mem.epoch != epoch {
            mem.seen.clear();
            mem.epoch = epoch;
        }
        let cached = mem.seen.iter().any(|s| s == p);
        if !cached {
            mem.seen.push(p.to_vec());
        }
        let flush = round > 0 && round.is_multiple_of(FLUSH_EVERY);
        self.cost(gpus, flush, cached)
    }

    fn cost(&self, gpus: u32, flush: bool, cached: bool) -> f64 {
        let mut o = if self.big { 7.0 } else { 2.0 };
        if cached {
            return o;
        }
        if flush {
            o += if self.big { 47.0 } else { 27.0 };
        }
        o + ((gpus.max(1) as f64).log2() + 1.0) * 2.0
    }

    /// What moving to `gpus` GPUs costs in its round (for planning).
    pub fn change_cost(&self, gpus: u32) -> f64 {
        self.cost(gpus, false, false)
    }
}

/// Progress of one segment under per-round pauses: work starts at `start`,
/// each `(t, o)` (sorted) pauses progress for `o` seconds from `t` (pauses
/// add up when they overlap). Returns the work done by `end` at `rate`, and
/// when `need` work was reached (within `tol`) if it was.
pub fn paused_progress(
    start: f64,
    end: f64,
    pauses: &[(f64, f64)],
    rate: f64,
    need: f64,
    tol: f64,
) -> (f64, Option<f64>) {
    let mut from = start;
    let mut done = 0.0;
    let run = |from: f64, to: f64, done: &mut f64| -> Option<f64> {
        if to <= from {
            return None;
        }
        let left = need - *done;
        if rate * (to - from) >= left - tol {
            *done = need;
            return Some(from + (left / rate).max(0.0));
        }
        *done += rate * (to - from);
        None
    };
    for &(t, o) in pauses {
        if let Some(f) = run(from, t.min(end), &mut done) {
            return (done, Some(f));
        }
        from = from.max(t) + o;
    }
    let fin = run(from, end, &mut done);
    (done, fin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elasticflow_caps() {
        let r = Rules::elasticflow();
        assert_eq!(r.planner_cap(Some("bert"), Some(64)), 8);
        assert_eq!(r.planner_cap(Some("bert"), Some(128)), 16);
        assert_eq!(r.planner_cap(Some("resnet50"), Some(256)), 64);
        assert_eq!(r.planner_cap(Some("resnet50"), Some(32)), 32);
        assert_eq!(r.planner_cap(Some("deepspeech2"), Some(20)), 20);
        assert_eq!(r.cap(Some("bert"), Some(64)), 64);
        assert_eq!(r.cap(Some("bert"), Some(32)), 32);
        assert_eq!(r.cap(Some("resnet50"), Some(256)), 64);
        assert_eq!(Rules::default().cap(Some("bert"), Some(64)), u32::MAX);
        assert_eq!(Rules::default().planner_cap(Some("bert"), Some(64)), u32::MAX);
    }

    #[test]
    fn one_rule_changed_is_named() {
        let r = Rules::default().with_counts(Counts::Measured);
        assert_eq!(
            (r.name.as_str(), r.counts),
            ("simple+counts=measured", Counts::Measured)
        );
        assert_eq!(Rules::elasticflow().with_counts(Counts::Measured), Rules::elasticflow());
        let r = Rules::default().with_admission(Admission::Reject);
        assert_eq!(r.name, "simple+admission=reject");
    }

    #[test]
    fn overhead_formula_and_memory() {
        let o = EfOverhead::new(32);
        let (a, b): (GpuSet, GpuSet) = (vec![(0, 8)], vec![(1, 4)]);
        let mut m = SeenSets::default();
        let at = |round, arriving, started| ChargeAt {
            round,
            arriving,
            started,
            set_changed: true,
        };
        let remembered =
            |r, n, p: &GpuSet, m: &mut SeenSets| o.charge(EfCharge::Remembered, at(r, true, false), n, p, m);
        // First sight: 2 + 2 (log2 n + 1); held on: the base only.
        assert_eq!(remembered(0, 8, &a, &mut m), 10.0);
        for r in 1..FLUSH_EVERY {
            assert_eq!(remembered(r, 8, &a, &mut m), 2.0);
        }
        // Round 60 still remembers `a`; a new set pays the flush too.
        assert_eq!(remembered(60, 8, &a, &mut m), 2.0);
        assert_eq!(remembered(60, 4, &b, &mut SeenSets::default()), 2.0 + 27.0 + 6.0);
        // After the flush `a` is new again.
        assert_eq!(remembered(61, 8, &a, &mut m), 10.0);
        let big = EfOverhead::new(512);
        assert_eq!(
            big.charge(EfCharge::Remembered, at(0, true, true), 1, &a, &mut SeenSets::default()),
            9.0
        );
        let mut m = SeenSets::default();
        let mut charge = |how, at| o.charge(how, at, 8, &a, &mut m);
        // Gandiva's: the whole formula every round while jobs arrive, then nothing.
        let every = EfCharge::EveryRoundWhileArriving;
        assert_eq!(charge(every, at(0, true, true)), 10.0);
        assert_eq!(charge(every, at(1, true, false)), 10.0);
        assert_eq!(charge(every, at(60, true, false)), 10.0 + 27.0);
        assert_eq!(charge(every, at(61, false, false)), 0.0);
        // Tiresias's: a start owes its charge, flush rounds charge at once.
        let starts = EfCharge::DeferredStarts;
        let mut m = SeenSets::default();
        assert_eq!(o.charge(starts, at(3, true, true), 8, &a, &mut m), 0.0);
        assert_eq!(m.take_owed(), 10.0);
        assert_eq!(m.take_owed(), 0.0);
        assert_eq!(charge(starts, at(4, true, false)), 0.0);
        assert_eq!(charge(starts, at(120, false, false)), 10.0 + 27.0);
        assert_eq!(o.charge(starts, at(120, true, true), 8, &a, &mut m), 10.0 + 27.0);
        assert_eq!(m.take_owed(), 0.0);
        // EDF's: nothing.
        assert_eq!(charge(EfCharge::Never, at(0, true, true)), 0.0);
        // Themis's: fixed at its first charge, paid while rounds change the
        // running set, nothing from the first round that does not.
        let mut m = SeenSets::default();
        let steady = |round, set_changed, m: &mut SeenSets| {
            let at = ChargeAt {
                round,
                arriving: true,
                started: false,
                set_changed,
            };
            o.charge(EfCharge::UntilSteady, at, 8, &a, m)
        };
        assert_eq!(steady(0, true, &mut m), 10.0);
        assert_eq!(steady(1, true, &mut m), 10.0);
        assert_eq!(steady(2, false, &mut m), 0.0);
        assert_eq!(steady(3, true, &mut m), 0.0);
    }

    #[test]
    fn pauses_delay_progress() {
        // 100 work at 1/s from 0, paused 10 s at 0 and 5 s at 50: done at 115.
        let (done, fin) = paused_progress(0.0, 200.0, &[(0.0, 10.0), (50.0, 5.0)], 1.0, 100.0, 0.0);
        assert_eq!((done, fin), (100.0, Some(115.0)));
        // Overlapping pauses add up.
        let (_, fin) = paused_progress(0.0, 200.0, &[(0.0, 60.0), (30.0, 10.0)], 1.0, 10.0, 0.0);
        assert_eq!(fin, Some(80.0));
        // Not finished inside the segment.
        assert_eq!(
            paused_progress(0.0, 20.0, &[(0.0, 10.0)], 1.0, 100.0, 0.0),
            (10.0, None)
        );
    }
}
