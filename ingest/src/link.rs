//! Linking inside one trace (the catalog's "Linking" column):
//! op -> parent op by nesting on a thread; launch -> op by `External id`
//! where that is a containing op's own id, else by nesting; kernel/memcpy ->
//! launch by correlation; everything -> step by time.

use rustc_hash::FxHashMap;

use crate::model::*;

pub fn link(trace: &mut Trace) {
    nest_ops_and_launches(trace);
    trace.steps = find_steps(&trace.ops);
    assign_steps(trace);
    link_gpu_activity(trace);
    step_kernel_stats(trace);
}

fn is_step_span(op: &Op) -> bool {
    op.name.starts_with("ProfilerStep#")
}

/// One sweep over ops and launches in start order with a stack of open ops
/// per thread. Ops come first at equal starts: an op that starts with a
/// launch contains it.
fn nest_ops_and_launches(trace: &mut Trace) {
    let Trace { ops, launches, .. } = trace;
    let mut stacks: FxHashMap<(Option<i64>, Option<i64>), Vec<usize>> = FxHashMap::default();
    let (mut oi, mut li) = (0, 0);
    while oi < ops.len() || li < launches.len() {
        let take_op = li >= launches.len() || (oi < ops.len() && ops[oi].start_ns <= launches[li].start_ns);
        if take_op {
            let op = &ops[oi];
            let (start, key) = (op.start_ns, (op.pid, op.tid));
            let stack = stacks.entry(key).or_default();
            stack.retain(|&p| ops[p].start_ns + ops[p].dur_ns > start);
            let parent = stack.last().copied();
            let depth = stack.len() as i32;
            let op = &mut ops[oi];
            op.parent = parent;
            op.depth = depth;
            stack.push(oi);
            oi += 1;
        } else {
            let launch = &launches[li];
            let stack = stacks.entry((launch.pid, launch.tid)).or_default();
            stack.retain(|&p| ops[p].start_ns + ops[p].dur_ns > launch.start_ns);
            let by_external_id = launch
                .external_id
                .and_then(|ext| stack.iter().rev().find(|&&p| ops[p].external_id == Some(ext)));
            let (op, how) = match by_external_id {
                Some(&p) => (Some(p), Some(OpLink::ExternalId)),
                None => match stack.iter().rev().find(|&&p| !is_step_span(&ops[p])) {
                    Some(&p) => (Some(p), Some(OpLink::Nesting)),
                    None => (None, None),
                },
            };
            let launch = &mut launches[li];
            launch.op = op;
            launch.op_link = how;
            li += 1;
        }
    }
}

/// Steps from `ProfilerStep#N`; else PARAM benchmark iteration annotations;
/// else the spans between consecutive `Optimizer.step#` annotations.
fn find_steps(ops: &[Op]) -> Vec<Step> {
    let span = |op: &Op, number, source| Step {
        name: op.name.clone(),
        number,
        source,
        start_ns: op.start_ns,
        end_ns: op.start_ns + op.dur_ns,
        kernel_count: 0,
        kernel_time_ns: 0,
        gpu_busy_ns: 0,
        gpu_start_ns: None,
        gpu_end_ns: None,
    };
    let mut steps: Vec<Step> = Vec::new();
    for op in ops.iter().filter(|o| is_step_span(o)) {
        // A step recorded twice (some ROCm traces) is one step.
        if steps.iter().any(|s| s.name == op.name) {
            continue;
        }
        let number = op.name["ProfilerStep#".len()..].parse().ok();
        steps.push(span(op, number, StepSource::ProfilerStep));
    }
    if steps.is_empty() {
        steps = ops
            .iter()
            .filter(|o| o.name.starts_with("[param|") && (o.name.contains("|warmup|") || o.name.contains("|measure|")))
            .map(|o| span(o, None, StepSource::ParamAnnotation))
            .collect();
    }
    if steps.is_empty() {
        let mut optimizer_ends: Vec<(i64, &Op)> = ops
            .iter()
            .filter(|o| o.name.starts_with("Optimizer.step#"))
            .map(|o| (o.start_ns + o.dur_ns, o))
            .collect();
        optimizer_ends.sort_by_key(|(end, _)| *end);
        for (i, pair) in optimizer_ends.windows(2).enumerate() {
            let (start, _) = pair[0];
            let (end, op) = pair[1];
            let mut step = span(op, Some(i as i64 + 1), StepSource::OptimizerStep);
            step.start_ns = start;
            step.end_ns = end;
            steps.push(step);
        }
    }
    steps.sort_by_key(|s| s.start_ns);
    steps
}

/// The step whose span holds `t`: the last step starting at or before it.
fn step_at(steps: &[Step], t: i64) -> Option<usize> {
    let i = steps.partition_point(|s| s.start_ns <= t).checked_sub(1)?;
    (t < steps[i].end_ns).then_some(i)
}

fn assign_steps(trace: &mut Trace) {
    let steps = &trace.steps;
    for op in &mut trace.ops {
        op.step = step_at(steps, op.start_ns);
    }
    for launch in &mut trace.launches {
        launch.step = step_at(steps, launch.start_ns);
    }
}

fn link_gpu_activity(trace: &mut Trace) {
    let by_correlation: FxHashMap<i64, usize> = trace
        .launches
        .iter()
        .enumerate()
        .filter_map(|(i, l)| Some((l.correlation?, i)))
        .collect();
    let launches = &trace.launches;
    let steps = &trace.steps;
    // Correlation ids grow with each launch. A kernel whose id is below every
    // recorded launch's was launched before recording began (in the
    // profiler's warm-up, by the step before the first one traced): it ran
    // inside the first step's span but is not that step's work.
    let first_launch = launches.iter().filter_map(|l| l.correlation).min();
    let launched_before_recording =
        |correlation: Option<i64>| matches!((correlation, first_launch), (Some(c), Some(f)) if c < f);
    let resolve = |correlation: Option<i64>, start_ns: i64| {
        let launch = correlation.and_then(|c| by_correlation.get(&c).copied());
        let (op, step) = match launch {
            Some(l) => (launches[l].op, launches[l].step),
            None if launched_before_recording(correlation) => (None, None),
            None => (None, step_at(steps, start_ns)),
        };
        (launch, op, step)
    };
    for k in &mut trace.kernels {
        (k.launch, k.op, k.step) = resolve(k.correlation, k.start_ns);
    }
    for m in &mut trace.memcpys {
        (m.launch, m.op, m.step) = resolve(m.correlation, m.start_ns);
    }
}

fn step_kernel_stats(trace: &mut Trace) {
    let mut per_step: Vec<Vec<(i64, i64)>> = vec![Vec::new(); trace.steps.len()];
    for k in &trace.kernels {
        if let Some(s) = k.step {
            per_step[s].push((k.start_ns, k.start_ns + k.dur_ns));
        }
    }
    for (step, intervals) in trace.steps.iter_mut().zip(per_step) {
        step.kernel_count = intervals.len() as i64;
        step.kernel_time_ns = intervals.iter().map(|(s, e)| e - s).sum();
        step.gpu_start_ns = intervals.iter().map(|(s, _)| *s).min();
        step.gpu_end_ns = intervals.iter().map(|(_, e)| *e).max();
        step.gpu_busy_ns = union_length(intervals);
    }
}

/// Total length covered by a set of intervals (kernels on several streams overlap).
pub fn union_length(mut intervals: Vec<(i64, i64)>) -> i64 {
    intervals.sort_unstable();
    let mut total = 0;
    let mut current: Option<(i64, i64)> = None;
    for (s, e) in intervals {
        match current {
            Some((cs, ce)) if s <= ce => current = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                current = Some((s, e));
            }
            None => current = Some((s, e)),
        }
    }
    total + current.map_or(0, |(s, e)| e - s)
}

#[cfg(test)]
mod tests {
    use super::union_length;

    #[test]
    fn union_of_overlapping_intervals() {
        assert_eq!(union_length(vec![(0, 10), (5, 15), (20, 25)]), 20);
        assert_eq!(union_length(vec![]), 0);
        assert_eq!(union_length(vec![(3, 4), (0, 10)]), 10);
    }
}
