//! The discrete-event engine. Events are arrivals, completions and wake-ups a
//! policy asks for; at each, the policy names the jobs whose GPU type and
//! count change, and the engine places them,
//! charges restarts and records segments. Progress always follows the *true*
//! throughputs; policies decide on their belief (`PJob::belief`).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use crate::error::{PlanError, Result};
use crate::jobset::JobSet;
use crate::placement::{Placement, Placer, placed_rate};
use crate::rules::{Admission, ChargeAt, EfCharge, EfOverhead, Overhead, SeenSets};
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

    /// No progress for `o` seconds from `now` (on top of a pause still running).
    fn pause(&mut self, now: f64, o: f64) {
        self.rem_at_mark = self.remaining(now);
        self.progress_from = self.progress_from.max(now) + o;
    }

    /// When the work is done at the current rate.
    fn finish_time(&self) -> f64 {
        self.progress_from + self.rem_at_mark / self.rate
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
    /// Jobs submitted since the last event (also in `active`).
    pub arrived: &'a [usize],
    /// Jobs that finished since the policy last decided (none of them active).
    pub finished: &'a [usize],
    /// Jobs holding GPUs.
    pub running: &'a [usize],
}

/// A policy's decision at an event: (job, its new allocation) for each job
/// whose allocation changes (`None` = it stops and waits).
pub type Changes = Vec<(usize, Option<Alloc>)>;

pub trait Policy: Send {
    fn name(&self) -> String;
    /// Push every active job whose allocation changes now; jobs not named keep
    /// what they hold. Per GPU type the allocations after the changes must fit
    /// the cluster. A policy that keeps its own record of which jobs run and
    /// wait answers from the event's arrivals and completions, without
    /// looking at every waiting job (planning a long queue stays fast).
    fn decide(&mut self, ctx: &Ctx<'_>, changes: &mut Changes);
    /// An extra event time the policy needs (a queue threshold, a starvation bound).
    fn wakeup(&self, _ctx: &Ctx<'_>) -> Option<f64> {
        None
    }
    /// Jobs the last `decide` rejected (never to run; only under rules that
    /// allow rejection, and only jobs with a deadline that never held GPUs).
    fn take_rejected(&mut self) -> Vec<usize> {
        Vec::new()
    }
    /// Whether a completion alone is a decision round. A policy that says no
    /// decides (and is charged a round) only at arrivals and its wake-ups; a
    /// finished job's GPUs stay idle until then.
    fn decides_at_completions(&self) -> bool {
        true
    }
    /// Whether rounds keep to a grid of the rules' gap from the first one
    /// (ElasticFlow's Themis ticks every slot, idle or not): what comes
    /// between two ticks waits for the next. Otherwise a round after a
    /// quiet spell comes at its event.
    fn rounds_on_grid(&self) -> bool {
        false
    }
    /// How ElasticFlow's overhead is charged to this policy under its rules
    /// (ElasticFlow's simulator charges some of its baselines apart).
    fn ef_charge(&self) -> EfCharge {
        EfCharge::Remembered
    }
}

#[derive(Clone, Copy)]
pub struct EngineOpts<'a> {
    /// Seconds without progress after each start but the first.
    pub restart_s: f64,
    /// Called now and then with (jobs done or rejected, jobs).
    pub progress: &'a (dyn Fn(u64, u64) + Sync),
}

/// Events between two progress reports.
const PROGRESS_EVERY: u64 = 1024;

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

pub fn run(w: &Workload, policy: &mut dyn Policy, opts: EngineOpts<'_>) -> Result<Schedule> {
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
    let mut arrived: Vec<usize> = Vec::new();
    let mut finished: Vec<usize> = Vec::new();
    let mut changes: Changes = Vec::new();
    let mut starts: Vec<(usize, Alloc)> = Vec::new();
    // GPUs held per type, and the jobs holding them.
    let mut used = vec![0u64; w.cluster.gpu_types.len()];
    let mut running = JobSet::new(n);
    // The event at which each job last changed (a job changes once per event).
    let mut changed_at = vec![0u64; n];
    let (mut now, mut ai, mut wake) = (f64::NEG_INFINITY, 0usize, None::<f64>);
    let mut last_round = f64::NEG_INFINITY;
    let at_completions = policy.decides_at_completions();
    let on_grid = policy.rounds_on_grid();
    let ef_charge = policy.ef_charge();
    let mut events = 0u64;
    let gap = w.rules.round_gap_s;
    // The rounds matter only where the rules space them or charge per round.
    let keep_rounds = gap > 0.0 || w.rules.overhead == Overhead::ElasticFlow;
    let mut rounds: Vec<f64> = Vec::new();
    let mut rejected = vec![false; n];
    let ef = (w.rules.overhead == Overhead::ElasticFlow).then(|| EfOverhead::new(w.cluster.total_gpus()));
    let mut seen: Vec<SeenSets> = if ef.is_some() {
        vec![SeenSets::default(); n]
    } else {
        Vec::new()
    };
    let flat_restart = if ef.is_some() { 0.0 } else { opts.restart_s };

    loop {
        while let Some(Reverse((_, j, v))) = heap.peek() {
            if st[*j].version != *v || st[*j].done.is_some() {
                heap.pop();
            } else {
                break;
            }
        }
        // Rounds at least `round_gap_s` apart: what falls inside waits for the
        // next round. A completion that is no round is handled when it happens.
        let spaced = |t: f64| {
            if !last_round.is_finite() {
                t
            } else if on_grid && gap > 0.0 {
                last_round + gap * ((t - last_round) / gap).ceil().max(1.0)
            } else {
                t.max(last_round + gap)
            }
        };
        let next = [
            order.get(ai).map(|&j| spaced(w.jobs[j].submit)),
            heap.peek()
                .map(|r| if at_completions { spaced(r.0.0.0) } else { r.0.0.0 }),
            wake.filter(|&t| t > now).map(spaced),
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
        if events.is_multiple_of(PROGRESS_EVERY) {
            (opts.progress)((n - active.len() - (order.len() - ai)) as u64, n as u64);
        }

        // Completions due now (exactly: `now` is the earliest completion when one is next).
        let mut finished_now = false;
        while let Some(Reverse((At(tf), j, v))) = heap.peek() {
            if *tf > now {
                break;
            }
            let (tf, j, v) = (*tf, *j, *v);
            heap.pop();
            if st[j].version != v || st[j].done.is_some() {
                continue;
            }
            // The GPUs are handed back in this round (later than `tf` when rounds are spaced).
            if let Some((ty, g)) = st[j].alloc {
                used[ty as usize] -= u64::from(g);
            }
            running.remove(j);
            stop(&mut st[j], &mut segs[j], &mut placer, now);
            st[j].done = Some(tf);
            finished_now = true;
            finished.push(j);
            let p = pos[j];
            active.swap_remove(p);
            if p < active.len() {
                pos[active[p]] = p;
            }
        }
        arrived.clear();
        // Arrivals wait for a round (a completion between rounds is no round).
        let in_round = !last_round.is_finite() || now >= last_round + gap;
        while in_round && ai < n && w.jobs[order[ai]].submit <= now {
            pos[order[ai]] = active.len();
            active.push(order[ai]);
            arrived.push(order[ai]);
            ai += 1;
        }

        let wake_due = in_round && wake.is_some_and(|t| t <= now);
        if !at_completions && arrived.is_empty() && !wake_due {
            continue;
        }
        if ef.is_some() && ef_charge == EfCharge::DeferredStarts {
            pay_deferred(now, running.as_slice(), &mut st, &mut seen, &mut segs, &mut heap);
        }
        last_round = now;
        if keep_rounds {
            rounds.push(now);
        }
        changes.clear();
        policy.decide(
            &Ctx {
                now,
                w,
                st: &st,
                active: &active,
                arrived: &arrived,
                finished: &finished,
                running: running.as_slice(),
            },
            &mut changes,
        );
        finished.clear();
        check_changes(
            w,
            policy,
            &st,
            &active,
            &pos,
            &changes,
            &mut used,
            (&mut changed_at, events),
        )?;
        let rejected_now = policy.take_rejected();
        if !rejected_now.is_empty() {
            reject(
                w,
                policy,
                &rejected_now,
                &changes,
                &mut st,
                &mut active,
                &mut pos,
                &mut rejected,
            )?;
        }

        starts.clear();
        for &(j, target) in &changes {
            if st[j].alloc.is_some() {
                stop(&mut st[j], &mut segs[j], &mut placer, now);
                running.remove(j);
            }
            if let Some(a) = target {
                starts.push((j, a));
            }
        }
        // Big jobs first: they need the compact holes.
        starts.sort_by_key(|&(j, (_, g))| (Reverse(g), j));
        for &(j, (ty, g)) in &starts {
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
            let restart = if st[j].started { flat_restart } else { 0.0 };
            let s = &mut st[j];
            s.alloc = Some((ty, g));
            s.rate = rate;
            s.mark = now;
            s.progress_from = now + restart;
            s.started = true;
            s.version += 1;
            let fin = s.finish_time();
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
            running.insert(j);
        }
        if let Some(ef) = &ef {
            let round = rounds.len() as u64 - 1;
            let arriving = ai < n;
            let set_changed = finished_now || !changes.is_empty();
            let charge = |gpus: u32, p: &[(u32, u32)], mem: &mut SeenSets, started: bool| {
                let at = ChargeAt {
                    round,
                    arriving,
                    started,
                    set_changed,
                };
                ef.charge(ef_charge, at, gpus, p, mem)
            };
            charge_round(
                &charge,
                now,
                running.as_slice(),
                &mut st,
                &mut seen,
                &mut segs,
                &mut heap,
            );
        }
        wake = policy.wakeup(&Ctx {
            now,
            w,
            st: &st,
            active: &active,
            arrived: &arrived,
            finished: &finished,
            running: running.as_slice(),
        });
    }
    (opts.progress)(n as u64, n as u64);
    tracing::debug!(policy = %policy.name(), events, "simulated");
    Ok(Schedule {
        policy: policy.name(),
        restart_s: flat_restart,
        penalty: w.penalty,
        rules: w.rules.clone(),
        rounds,
        ef_charge,
        rejected,
        segments: segs,
    })
}

/// A job's overhead in a round from its GPU count, GPU set, memory of GPU
/// sets, and whether it starts a segment in the round.
type RoundCharge<'a> = dyn Fn(u32, &[(u32, u32)], &mut SeenSets, bool) -> f64 + 'a;

/// ElasticFlow's per-round overhead: every job holding GPUs pauses (a job that
/// changed in this round already starts its segment here).
fn charge_round(
    charge: &RoundCharge<'_>,
    now: f64,
    running: &[usize],
    st: &mut [JobState],
    seen: &mut [SeenSets],
    segs: &mut [Vec<Segment>],
    heap: &mut BinaryHeap<Reverse<(At, usize, u32)>>,
) {
    for &j in running {
        let s = &mut st[j];
        let Some((_, gpus)) = s.alloc else { continue };
        let started = segs[j].last().is_some_and(|g| g.start == now);
        let o = charge(gpus, &s.placement, &mut seen[j], started);
        s.pause(now, o);
        requeue(heap, j, s);
        if let Some(seg) = segs[j].last_mut().filter(|g| g.start == now) {
            seg.restart = o;
        }
    }
}

/// The job's finish moved: a new version of its completion event.
fn requeue(heap: &mut BinaryHeap<Reverse<(At, usize, u32)>>, j: usize, s: &mut JobState) {
    s.version += 1;
    heap.push(Reverse((At(s.finish_time()), j, s.version)));
}

/// ElasticFlow's Tiresias pays a start's overhead at the job's next round,
/// out of the time run since the start (at most all of it): the job's
/// progress is pushed back, as if paused when it started.
fn pay_deferred(
    now: f64,
    running: &[usize],
    st: &mut [JobState],
    seen: &mut [SeenSets],
    segs: &mut [Vec<Segment>],
    heap: &mut BinaryHeap<Reverse<(At, usize, u32)>>,
) {
    for &j in running {
        let owed = seen[j].take_owed();
        if owed <= 0.0 {
            continue;
        }
        let s = &mut st[j];
        let o = owed.min(now - s.mark);
        s.progress_from += o;
        requeue(heap, j, s);
        if let Some(seg) = segs[j].last_mut() {
            seg.restart = o;
        }
    }
}

/// Drop rejected jobs from the active set, after checking the policy may reject them.
#[allow(clippy::too_many_arguments)]
fn reject(
    w: &Workload,
    policy: &dyn Policy,
    jobs: &[usize],
    changes: &Changes,
    st: &mut [JobState],
    active: &mut Vec<usize>,
    pos: &mut [usize],
    rejected: &mut [bool],
) -> Result<()> {
    for &j in jobs {
        let job = &w.jobs[j];
        let why = if w.rules.admission != Admission::Reject {
            Some("the rules do not allow rejection (use --rules elasticflow)")
        } else if job.deadline.is_none() {
            Some("it has no deadline")
        } else if st[j].started || st[j].done.is_some() || active.get(pos[j]) != Some(&j) {
            Some("it is not a waiting job")
        } else if changes.iter().any(|&(c, t)| c == j && t.is_some()) {
            Some("it was given GPUs")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(PlanError::Inconsistent(format!(
                "policy `{}` rejected job `{}`, but {why}",
                policy.name(),
                job.id
            )));
        }
        let p = pos[j];
        rejected[j] = true;
        st[j].done = Some(f64::NAN);
        active.swap_remove(p);
        pos[j] = usize::MAX;
        if p < active.len() {
            pos[active[p]] = p;
        }
    }
    Ok(())
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

/// Check a policy's changes (active jobs, each once, no zero counts) and
/// that the GPUs held afterwards fit the cluster; `used` becomes that.
#[allow(clippy::too_many_arguments)]
fn check_changes(
    w: &Workload,
    policy: &dyn Policy,
    st: &[JobState],
    active: &[usize],
    pos: &[usize],
    changes: &Changes,
    used: &mut [u64],
    (seen_at, event): (&mut [u64], u64),
) -> Result<()> {
    let bad = |j: usize, why: &str| {
        PlanError::Inconsistent(format!("policy `{}` {why} job `{}`", policy.name(), w.jobs[j].id))
    };
    for &(j, target) in changes {
        if j >= w.jobs.len() {
            return Err(PlanError::Inconsistent(format!(
                "policy `{}` named job {j}; the workload has {}",
                policy.name(),
                w.jobs.len()
            )));
        }
        if active.get(pos[j]) != Some(&j) {
            return Err(bad(j, "changed the allocation of a finished or not yet submitted"));
        }
        if target.is_some_and(|(ty, _)| usize::from(ty) >= used.len()) {
            return Err(bad(j, "used a GPU type the cluster does not have for"));
        }
        if seen_at[j] == event {
            return Err(bad(j, "changed twice at one event the allocation of"));
        }
        seen_at[j] = event;
        if let Some((ty, g)) = st[j].alloc {
            used[ty as usize] -= u64::from(g);
        }
        if let Some((ty, g)) = target {
            if g == 0 {
                return Err(bad(j, "gave zero GPUs to"));
            }
            used[ty as usize] += u64::from(g);
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
