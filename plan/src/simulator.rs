//! The discrete-event engine. Events are arrivals, completions and wake-ups a
//! policy asks for; at each, the policy says which GPU type and count every
//! active job should hold, and the engine places the jobs that changed,
//! charges restarts and records segments. Progress always follows the *true*
//! throughputs; policies decide on their belief (`PJob::belief`).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use crate::error::{PlanError, Result};
use crate::placement::{Placement, Placer, placed_rate};
use crate::schedule::{Schedule, Segment};
use crate::workload::Workload;

/// A GPU type and count.
pub type Alloc = (u16, u32);

#[derive(Clone, Debug)]
pub struct JobState {
    pub done: Option<f64>,
    pub alloc: Option<Alloc>,
    pub placement: Placement,
    /// True iterations/s of the current allocation.
    pub rate: f64,
    /// When the current allocation (or the last stop) began.
    pub mark: f64,
    rem_at_mark: f64,
    /// Progress resumes here (mark + restart).
    progress_from: f64,
    attained_at_mark: f64,
    pub started: bool,
    /// When the job last lost its GPUs (or its submit time).
    pub waiting_since: f64,
    version: u32,
}

impl JobState {
    /// Work left at time `t` (true).
    pub fn remaining(&self, t: f64) -> f64 {
        if self.alloc.is_none() {
            return self.rem_at_mark;
        }
        (self.rem_at_mark - self.rate * (t - self.progress_from).max(0.0)).max(0.0)
    }

    /// GPU-seconds held so far.
    pub fn attained(&self, t: f64) -> f64 {
        self.attained_at_mark + self.alloc.map_or(0.0, |a| a.1 as f64 * (t - self.mark))
    }
}

/// What a policy sees at an event.
pub struct Ctx<'a> {
    pub now: f64,
    pub w: &'a Workload,
    pub st: &'a [JobState],
    /// Jobs submitted and not finished.
    pub active: &'a [usize],
}

pub trait Policy: Send {
    fn name(&self) -> String;
    /// Fill `out[k]` with the allocation of job `ctx.active[k]` (`None` = wait).
    /// Per GPU type the counts must fit the cluster.
    fn allocate(&mut self, ctx: &Ctx<'_>, out: &mut [Option<Alloc>]);
    /// An extra event time the policy needs (a queue threshold, a starvation bound).
    fn wakeup(&self, _ctx: &Ctx<'_>) -> Option<f64> {
        None
    }
}

#[derive(Clone, Copy, Debug)]
pub struct EngineOpts {
    /// Seconds without progress after each start but the first.
    pub restart_s: f64,
}

/// A time ordered totally, for the completion heap.
#[derive(PartialEq)]
struct At(f64);
impl Eq for At {}
impl PartialOrd for At {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for At {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0)
    }
}

pub fn run(w: &Workload, policy: &mut dyn Policy, opts: EngineOpts) -> Result<Schedule> {
    let n = w.jobs.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| w.jobs[a].submit.total_cmp(&w.jobs[b].submit).then(a.cmp(&b)));
    let mut st: Vec<JobState> = w
        .jobs
        .iter()
        .map(|j| JobState {
            done: None,
            alloc: None,
            placement: Vec::new(),
            rate: 0.0,
            mark: j.submit,
            rem_at_mark: j.total,
            progress_from: j.submit,
            attained_at_mark: 0.0,
            started: false,
            waiting_since: j.submit,
            version: 0,
        })
        .collect();
    let mut segs: Vec<Vec<Segment>> = vec![Vec::new(); n];
    let mut active: Vec<usize> = Vec::new();
    let mut pos: Vec<usize> = vec![usize::MAX; n];
    let mut heap: BinaryHeap<Reverse<(At, usize, u32)>> = BinaryHeap::new();
    let mut placer = Placer::new(&w.cluster);
    let mut targets: Vec<Option<Alloc>> = Vec::new();
    let mut changed: Vec<(usize, Alloc)> = Vec::new();
    let (mut now, mut ai, mut wake) = (f64::NEG_INFINITY, 0usize, None::<f64>);
    let mut events = 0u64;

    loop {
        while let Some(Reverse((_, j, v))) = heap.peek() {
            if st[*j].version != *v || st[*j].done.is_some() {
                heap.pop();
            } else {
                break;
            }
        }
        let next = [
            order.get(ai).map(|&j| w.jobs[j].submit),
            heap.peek().map(|r| r.0.0.0),
            wake.filter(|&t| t > now),
        ]
        .into_iter()
        .flatten()
        .min_by(f64::total_cmp);
        let Some(t) = next else {
            if !active.is_empty() {
                return Err(PlanError::Inconsistent(format!(
                    "policy `{}` left {} job(s) waiting on an idle cluster at t={now:.0}s (first: `{}`); does a job need more GPUs of one type than the cluster has?",
                    policy.name(),
                    active.len(),
                    w.jobs[active[0]].id
                )));
            }
            break;
        };
        now = now.max(t);
        events += 1;

        // Completions due now (exactly: `now` is the earliest completion when one is next).
        while let Some(Reverse((At(tf), j, v))) = heap.peek() {
            if *tf > now {
                break;
            }
            let (tf, j, v) = (*tf, *j, *v);
            heap.pop();
            if st[j].version != v || st[j].done.is_some() {
                continue;
            }
            stop(&mut st[j], &mut segs[j], &mut placer, tf);
            st[j].done = Some(tf);
            let p = pos[j];
            active.swap_remove(p);
            if p < active.len() {
                pos[active[p]] = p;
            }
        }
        while ai < n && w.jobs[order[ai]].submit <= now {
            pos[order[ai]] = active.len();
            active.push(order[ai]);
            ai += 1;
        }

        targets.clear();
        targets.resize(active.len(), None);
        policy.allocate(
            &Ctx {
                now,
                w,
                st: &st,
                active: &active,
            },
            &mut targets,
        );
        check_capacity(w, policy, &active, &targets)?;

        changed.clear();
        for (k, &j) in active.iter().enumerate() {
            if targets[k] != st[j].alloc {
                if st[j].alloc.is_some() {
                    stop(&mut st[j], &mut segs[j], &mut placer, now);
                }
                if let Some(a) = targets[k] {
                    changed.push((j, a));
                }
            }
        }
        // Big jobs first: they need the compact holes.
        changed.sort_by_key(|&(j, (_, g))| (Reverse(g), j));
        for &(j, (ty, g)) in &changed {
            let job = &w.jobs[j];
            let curve = job.truth[ty as usize].as_ref().ok_or_else(|| {
                PlanError::Inconsistent(format!(
                    "policy `{}` put job `{}` on GPU type {}, which it cannot use",
                    policy.name(),
                    job.id,
                    w.cluster.gpu_types[ty as usize]
                ))
            })?;
            let placement = placer.place(ty, g).expect("capacity was checked");
            let (rate, interpolated) = placed_rate(&w.cluster, ty, curve, g, &placement, w.penalty);
            let restart = if st[j].started { opts.restart_s } else { 0.0 };
            let s = &mut st[j];
            s.alloc = Some((ty, g));
            s.rate = rate;
            s.mark = now;
            s.progress_from = now + restart;
            s.started = true;
            s.version += 1;
            let fin = now + restart + s.rem_at_mark / rate;
            heap.push(Reverse((At(fin), j, s.version)));
            segs[j].push(Segment {
                start: now,
                end: fin,
                ty,
                gpus: g,
                nodes: placement.clone(),
                restart,
                rate,
                interpolated,
            });
            s.placement = placement;
        }
        wake = policy.wakeup(&Ctx {
            now,
            w,
            st: &st,
            active: &active,
        });
    }
    tracing::debug!(policy = %policy.name(), events, "simulated");
    Ok(Schedule {
        policy: policy.name(),
        restart_s: opts.restart_s,
        penalty: w.penalty,
        segments: segs,
    })
}

/// Close the job's open segment at `now` and free its GPUs.
fn stop(s: &mut JobState, segs: &mut Vec<Segment>, placer: &mut Placer, now: f64) {
    s.rem_at_mark = s.remaining(now);
    s.attained_at_mark = s.attained(now);
    placer.release(&s.placement);
    s.placement.clear();
    s.alloc = None;
    s.rate = 0.0;
    s.mark = now;
    s.waiting_since = now;
    s.version += 1;
    if let Some(last) = segs.last_mut() {
        last.end = now;
        if last.end - last.start <= 0.0 {
            segs.pop();
            s.started = !segs.is_empty();
        }
    }
}

fn check_capacity(w: &Workload, policy: &dyn Policy, active: &[usize], targets: &[Option<Alloc>]) -> Result<()> {
    let mut used = vec![0u64; w.cluster.gpu_types.len()];
    for (k, t) in targets.iter().enumerate() {
        if let Some((ty, g)) = *t {
            if g == 0 {
                return Err(PlanError::Inconsistent(format!(
                    "policy `{}` gave job `{}` zero GPUs",
                    policy.name(),
                    w.jobs[active[k]].id
                )));
            }
            used[ty as usize] += g as u64;
        }
    }
    for (t, &u) in used.iter().enumerate() {
        if u > w.cluster.capacity[t] as u64 {
            return Err(PlanError::Inconsistent(format!(
                "policy `{}` asked for {u} {} GPUs; the cluster has {}",
                policy.name(),
                w.cluster.gpu_types[t],
                w.cluster.capacity[t]
            )));
        }
    }
    Ok(())
}
