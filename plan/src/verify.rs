//! `verify`: replay a schedule against the true throughputs and reject it if
//! it uses more GPUs than exist, overlaps a job with itself, changes a rigid
//! job's count, does not finish a job's work, or was made for another restart
//! cost than the workload's, or breaks the workload's rules (a count the
//! table did not measure, a change between decision rounds, a rejection the
//! rules do not allow). ElasticFlow's per-round overhead is recomputed here,
//! never read from the file. The replay also yields each job's completion
//! time, from which the metrics are computed.

use rayon::slice::ParallelSliceMut;

pub use crate::error::VerifyError;
use crate::placement::placed_rate;
use crate::rules::{Admission, ChargeAt, Counts, EfOverhead, Overhead, SeenSets, paused_progress};
use crate::schedule::Schedule;
use crate::workload::Workload;

/// The outcome of a successful replay.
#[derive(Clone, Debug)]
pub struct Replay {
    /// When each job's work completed.
    pub finish: Vec<f64>,
    /// When each job first held GPUs.
    pub first_start: Vec<f64>,
    /// GPU-seconds held (including restarts and any time after completion).
    pub gpu_seconds: f64,
    pub restart_gpu_seconds: f64,
    pub restarts: u64,
    pub segments: u64,
    pub interpolated_segments: u64,
    /// GPU-seconds held at counts the throughput table did not measure.
    pub unmeasured_gpu_seconds: f64,
    /// Jobs rejected by admission control.
    pub rejected: Vec<bool>,
}

const MAX_SHOWN: usize = 20;

/// Replay `s` on `w`'s true throughputs, charging `restart_s` (the workload's
/// restart cost, not the schedule's own `restart_s`) after every change.
pub fn verify(s: &Schedule, w: &Workload, restart_s: f64) -> Result<Replay, VerifyError> {
    let c = &w.cluster;
    let mut problems = Vec::new();
    let mut count = 0usize;
    let mut bad = |msg: String| {
        count += 1;
        if problems.len() < MAX_SHOWN {
            problems.push(msg);
        }
    };
    if s.segments.len() != w.jobs.len() {
        bad(format!(
            "schedule has {} jobs, the workload {}",
            s.segments.len(),
            w.jobs.len()
        ));
        return Err(VerifyError { count, problems });
    }
    if s.rules != w.rules {
        bad(format!(
            "the schedule was made under rules `{}`, the replay is under `{}` (--rules)",
            s.rules.name, w.rules.name
        ));
        return Err(VerifyError { count, problems });
    }
    let rules = &w.rules;
    let ef = (rules.overhead == Overhead::ElasticFlow).then(|| EfOverhead::new(c.total_gpus()));
    // ElasticFlow's rules charge per round instead of a flat restart.
    let restart_s = if ef.is_some() { 0.0 } else { restart_s };
    // The file's restart_s is never trusted: a negative one would credit more
    // work than a segment's length, 0 would skip the restarts.
    let tol = 1e-9 * restart_s.max(1.0);
    if restart_s.is_nan() || restart_s < 0.0 {
        bad(format!(
            "the restart cost to replay with is {restart_s} s; it must be >= 0"
        ));
    } else if s.restart_s.is_nan() || (s.restart_s - restart_s).abs() > tol {
        bad(format!(
            "restart_s is {} s, not the workload's restart cost of {restart_s} s (--restart-s)",
            s.restart_s
        ));
    }
    let rounds = &s.rounds;
    let in_rounds = rules.round_gap_s > 0.0 || ef.is_some();
    if in_rounds {
        for (k, pair) in rounds.windows(2).enumerate() {
            let gap = pair[1] - pair[0];
            if gap.is_nan() || gap < rules.round_gap_s - 1e-6 {
                bad(format!(
                    "rounds {k} and {} are {:.3} s apart; the rules need {} s",
                    k + 1,
                    gap,
                    rules.round_gap_s
                ));
            }
        }
    }
    // The index of the round at `t`, if one is.
    let round_at = |t: f64| {
        let i = rounds.partition_point(|&r| r < t - 1e-6);
        rounds.get(i).is_some_and(|&r| (r - t).abs() <= 1e-6).then_some(i)
    };
    let is_round = |t: f64| round_at(t).is_some();
    let n = w.jobs.len();
    let last_submit = w.jobs.iter().map(|j| j.submit).fold(f64::NEG_INFINITY, f64::max);
    // Rounds at which some job starts, stops or finishes.
    let mut set_changed = vec![false; rounds.len()];
    for seg in s.segments.iter().flatten() {
        for i in [round_at(seg.start), round_at(seg.end)].into_iter().flatten() {
            set_changed[i] = true;
        }
    }
    let mut out = Replay {
        finish: vec![f64::NAN; n],
        first_start: vec![f64::NAN; n],
        gpu_seconds: 0.0,
        restart_gpu_seconds: 0.0,
        restarts: 0,
        segments: 0,
        interpolated_segments: 0,
        unmeasured_gpu_seconds: 0.0,
        rejected: s.rejected.clone(),
    };
    if s.rejected.len() != n {
        bad(format!(
            "the schedule marks {} jobs rejected or not, the workload has {n}",
            s.rejected.len()
        ));
        return Err(VerifyError { count, problems });
    }
    // (time, signed GPUs, node, job) for the capacity sweep: two per node a
    // segment holds (millions on a big plan: sized once, not grown).
    let shares: usize = s.segments.iter().flatten().map(|seg| seg.nodes.len()).sum();
    let mut usage: Vec<(f64, i64, u32, usize)> = Vec::with_capacity(2 * shares);
    for (j, (job, segs)) in w.jobs.iter().zip(&s.segments).enumerate() {
        let eps = 1e-6 * job.submit.abs().max(1.0);
        if s.rejected[j] {
            if rules.admission != Admission::Reject {
                bad(format!(
                    "job `{}` is rejected, which rules `{}` do not allow",
                    job.id, rules.name
                ));
            } else if job.deadline.is_none() {
                bad(format!("job `{}` is rejected but has no deadline", job.id));
            } else if !segs.is_empty() {
                bad(format!("job `{}` is rejected but holds GPUs", job.id));
            }
            continue;
        }
        let mut done = 0.0f64;
        let mut finish = None;
        let mut seen = SeenSets::default();
        for (k, seg) in segs.iter().enumerate() {
            out.segments += 1;
            // Written only into a problem: formatting it for every segment
            // took a large share of verifying a big plan.
            let here = || format!("job `{}` segment {k} [{:.3}, {:.3})", job.id, seg.start, seg.end);
            if seg.end.is_nan() || seg.start.is_nan() || seg.end < seg.start {
                bad(format!("{}: ends before it starts", here()));
                continue;
            }
            if seg.start < job.submit - eps {
                bad(format!(
                    "{}: starts before the job is submitted at {:.3}",
                    here(),
                    job.submit
                ));
            }
            if k > 0 && seg.start < segs[k - 1].end - eps {
                bad(format!(
                    "{}: overlaps the job's previous segment, which ends at {:.3}",
                    here(),
                    segs[k - 1].end
                ));
            }
            let Some(curve) = job.truth.get(seg.ty as usize).and_then(|c| c.as_ref()) else {
                bad(format!(
                    "{}: the job cannot run on GPU type {}",
                    here(),
                    c.gpu_types.get(seg.ty as usize).map_or("?", |s| s.as_str())
                ));
                continue;
            };
            if !job.elastic && seg.gpus != job.req {
                bad(format!(
                    "{}: rigid job holds {} GPUs, not its {}",
                    here(),
                    seg.gpus,
                    job.req
                ));
            }
            let mut placed = 0u32;
            for &(node, g) in &seg.nodes {
                match c.nodes.get(node as usize) {
                    None => bad(format!("{}: node {node} does not exist", here())),
                    Some(nd) if nd.gpu_type != seg.ty => bad(format!(
                        "{}: node {node} has {} GPUs, not {}",
                        here(),
                        c.gpu_types[nd.gpu_type as usize],
                        c.gpu_types[seg.ty as usize]
                    )),
                    Some(_) => usage.extend([(seg.start, g as i64, node, j), (seg.end, -(g as i64), node, j)]),
                }
                placed += g;
            }
            if placed != seg.gpus || seg.gpus == 0 {
                bad(format!("{}: {} GPUs but its nodes hold {placed}", here(), seg.gpus));
                continue;
            }
            let measured = curve.is_measured(seg.gpus);
            if !measured {
                out.unmeasured_gpu_seconds += (seg.end - seg.start) * seg.gpus as f64;
                if rules.counts == Counts::Measured {
                    bad(format!(
                        "{}: {} GPUs is not a count the throughput table measured for this job (rules `{}`)",
                        here(),
                        seg.gpus,
                        rules.name
                    ));
                }
            }
            if in_rounds && !is_round(seg.start) {
                bad(format!(
                    "{}: starts between decision rounds (rules `{}`)",
                    here(),
                    rules.name
                ));
            }
            // A segment continuing the previous one unchanged costs nothing; any other start but the first restarts.
            let continues = k > 0 && {
                let p = &segs[k - 1];
                (seg.start - p.end).abs() <= eps && p.ty == seg.ty && p.gpus == seg.gpus && p.nodes == seg.nodes
            };
            let changed = k > 0 && !continues;
            let restart = if changed { restart_s } else { 0.0 };
            if changed && (restart > 0.0 || ef.is_some()) {
                out.restarts += 1;
                out.restart_gpu_seconds += restart.min(seg.end - seg.start) * seg.gpus as f64;
            }
            let (rate, interpolated) = placed_rate(c, seg.ty, curve, seg.gpus, &seg.nodes, w.penalty);
            out.interpolated_segments += interpolated as u64;
            out.gpu_seconds += (seg.end - seg.start) * seg.gpus as f64;
            if k == 0 {
                out.first_start[j] = seg.start;
            }
            let pauses: Vec<(f64, f64)> = match &ef {
                // Every round inside the segment charges the job (the first is its change).
                Some(ef) => {
                    let lo = rounds.partition_point(|&r| r < seg.start - 1e-6);
                    let hi = rounds.partition_point(|&r| r < seg.end - 1e-6);
                    let mut pauses: Vec<(f64, f64)> = (lo..hi)
                        .map(|r| {
                            let at = ChargeAt {
                                round: r as u64,
                                arriving: last_submit > rounds[r],
                                started: r == lo && (k == 0 || changed),
                                set_changed: set_changed[r],
                            };
                            (rounds[r], ef.charge(s.ef_charge, at, seg.gpus, &seg.nodes, &mut seen))
                        })
                        .collect();
                    // A start's deferred charge is paid at the job's next round while it
                    // holds the GPUs: one inside the segment, or the one that stops it.
                    let owed = seen.take_owed();
                    let stopped_there = k + 1 < segs.len();
                    let next = rounds
                        .get(lo + 1)
                        .filter(|&&r| r < seg.end - 1e-6 || (stopped_there && r <= seg.end + 1e-6));
                    if let Some(&next) = next
                        && owed > 0.0
                    {
                        pauses.insert(0, (seg.start, owed.min(next - seg.start)));
                    }
                    pauses
                }
                None if restart > 0.0 => vec![(seg.start, restart)],
                None => Vec::new(),
            };
            if ef.is_some() {
                let paused: f64 = pauses.iter().map(|p| p.1).sum();
                out.restart_gpu_seconds += paused.min(seg.end - seg.start) * seg.gpus as f64;
            }
            if finish.is_none() {
                let (ran, fin) = paused_progress(seg.start, seg.end, &pauses, rate, job.total - done, 1e-7 * job.total);
                finish = fin;
                done += ran;
            }
            // Only a job finishing may hand its GPUs back between rounds (a
            // policy that decides only at arrivals and wake-ups lets it).
            let finishes_here = k + 1 == segs.len()
                && finish.is_some_and(|f| (f - seg.end).abs() <= 1e-6_f64.max(1e-9 * seg.end.abs()));
            if in_rounds && !is_round(seg.end) && !finishes_here {
                bad(format!(
                    "{}: ends between decision rounds (rules `{}`)",
                    here(),
                    rules.name
                ));
            }
        }
        match finish {
            Some(f) => out.finish[j] = f,
            None => bad(format!(
                "job `{}` does not finish: {:.4}% of its {} {} done by the end of its last segment",
                job.id,
                100.0 * done / job.total,
                job.total,
                match job.unit {
                    crate::workload::WorkUnit::Iterations => "iterations",
                    crate::workload::WorkUnit::Seconds => "seconds of work",
                }
            )),
        }
    }
    // Capacity: at equal times, releases before acquisitions. Entries equal
    // in both add the same to a node's sum, so their order (not kept: a big
    // plan sorts millions) changes at most which job a problem names.
    usage.par_sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut used = vec![0i64; c.nodes.len()];
    for &(t, d, node, j) in &usage {
        let u = &mut used[node as usize];
        *u += d;
        if *u > c.nodes[node as usize].gpus as i64 {
            bad(format!(
                "node {} ({}) holds {} GPUs at t={t:.3} (job `{}` among them); it has {}",
                node, c.nodes[node as usize].name, u, w.jobs[j].id, c.nodes[node as usize].gpus
            ));
        }
    }
    if count > 0 {
        Err(VerifyError { count, problems })
    } else {
        Ok(out)
    }
}
