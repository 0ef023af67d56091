//! Behaviour of the planner, the baselines and verify on small hand-built workloads.

use tracecast_plan::cluster::{Cluster, NodeGroup};
use tracecast_plan::jobs::Job;
use tracecast_plan::perturb::{ErrorDist, perturb};
use tracecast_plan::planner::{Objective, PlannerConfig};
use tracecast_plan::rules::{EfCharge, Rules};
use tracecast_plan::throughput::{Point, ThroughputTable};
use tracecast_plan::verify::verify;
use tracecast_plan::workload::{Penalty, Workload, price};
use tracecast_plan::{RunResult, run_policy};

fn cluster(groups: &[(&str, u32, u32)]) -> Cluster {
    let groups = groups
        .iter()
        .map(|&(t, nodes, gpn)| NodeGroup {
            name: t.to_lowercase(),
            gpu_type: t.into(),
            nodes,
            gpus_per_node: gpn,
            nodes_per_switch: None,
        })
        .collect();
    Cluster::from_groups("test", groups).unwrap()
}

/// (job type, GPU type, (count, iterations/s) points).
type Rows<'a> = [(&'a str, &'a str, &'a [(u32, f64)])];

fn table(rows: &Rows<'_>) -> ThroughputTable {
    let mut t = ThroughputTable::default();
    for (model, gpu, pts) in rows {
        for &(n, v) in *pts {
            t.insert(
                model,
                gpu,
                64,
                Point {
                    gpus: n,
                    nodes: None,
                    iters_per_s: v,
                },
            );
        }
    }
    t
}

fn job(id: &str, submit: f64, model: &str, iters: f64, gpus: u32, elastic: bool) -> Job {
    Job {
        id: id.into(),
        submit,
        job_type: Some(model.into()),
        batch_size: Some(64),
        iterations: Some(iters),
        duration: None,
        gpus,
        deadline: None,
        priority: 0,
        elastic: Some(elastic),
        gpu_type: None,
    }
}

/// An elastic one-GPU job of `model` with a deadline.
fn with_deadline(id: &str, submit: f64, model: &str, iters: f64, deadline: f64) -> Job {
    Job {
        deadline: Some(deadline),
        ..job(id, submit, model, iters, 1, true)
    }
}

const CURVE: &[(u32, f64)] = &[(1, 10.0), (2, 19.0), (4, 36.0), (8, 60.0), (16, 80.0)];

fn run(w: &Workload, policy: &str, cfg: &PlannerConfig) -> RunResult {
    run_policy(w, policy, cfg).unwrap_or_else(|e| panic!("{policy}: {e}"))
}

/// `jobs` of model `m` (`CURVE`) on one node of `gpus` A100s.
fn on_one_node(jobs: &[Job], gpus: u32, rules: &Rules) -> Workload {
    price(
        jobs,
        &cluster(&[("A100", 1, gpus)]),
        &table(&[("m", "A100", CURVE)]),
        Penalty::default(),
        rules,
    )
    .unwrap()
}

#[test]
fn a_lone_elastic_job_grows_to_its_fastest_count() {
    let w = price(
        &[job("a", 0.0, "m", 80_000.0, 1, true)],
        &cluster(&[("A100", 2, 8)]),
        &table(&[("m", "A100", CURVE)]),
        Penalty::default(),
        &Rules::default(),
    )
    .unwrap();
    let r = run(&w, "plan-jct", &PlannerConfig::default());
    let segs = &r.schedule.segments[0];
    assert_eq!(segs.len(), 1);
    assert_eq!(segs[0].gpus, 16);
    assert!((r.replay.finish[0] - 1000.0).abs() < 1e-6, "{}", r.replay.finish[0]);
    // With scaling off it keeps its one GPU.
    let r = run(
        &w,
        "plan-jct",
        &PlannerConfig {
            elastic: false,
            ..Default::default()
        },
    );
    assert_eq!(r.schedule.segments[0][0].gpus, 1);
    assert!((r.replay.finish[0] - 8000.0).abs() < 1e-6);
}

/// An elastic job alone on 16 GPUs, then a rigid 8-GPU job arriving at 100 s.
fn elastic_job_then_rigid_arrival() -> Workload {
    let jobs = [
        job("a", 0.0, "m", 800_000.0, 1, true),
        job("b", 100.0, "m", 8_000.0, 8, false),
    ];
    price(
        &jobs,
        &cluster(&[("A100", 2, 8)]),
        &table(&[("m", "A100", CURVE)]),
        Penalty::default(),
        &Rules::default(),
    )
    .unwrap()
}

#[test]
fn an_arrival_shrinks_the_grown_job_and_the_restart_is_charged() {
    let w = elastic_job_then_rigid_arrival();
    let cfg = PlannerConfig {
        restart_s: 30.0,
        ..Default::default()
    };
    let r = run(&w, "plan-jct", &cfg);
    let a = &r.schedule.segments[0];
    assert_eq!(a[0].gpus, 16);
    assert_eq!((a[1].start, a[1].gpus, a[1].restart), (100.0, 8, 30.0));
    // b is rigid: its requested 8 GPUs, at once.
    assert_eq!(r.schedule.segments[1][0].gpus, 8);
    assert_eq!(r.schedule.segments[1][0].start, 100.0);
    // After b finishes, a grows back (a change worth far more than a restart).
    assert_eq!(a.last().unwrap().gpus, 16);
    assert!(r.metrics.restarts >= 2);
    // Verify's own replay agrees with the engine on a's completion.
    let done: f64 = 100.0 * 80.0 + (a[1].end - a[1].start - 30.0) * 60.0 + (a[2].end - a[2].start - 30.0) * 80.0;
    assert!((done - 800_000.0).abs() < 1e-3, "{done}");
}

#[test]
fn shortest_remaining_work_goes_first_and_fifo_keeps_arrival_order() {
    let jobs = [
        job("long", 0.0, "m", 600_000.0, 16, false),
        job("short", 1.0, "m", 8_000.0, 16, false),
    ];
    let w = price(
        &jobs,
        &cluster(&[("A100", 2, 8)]),
        &table(&[("m", "A100", CURVE)]),
        Penalty::default(),
        &Rules::default(),
    )
    .unwrap();
    let plan = run(&w, "plan-jct", &PlannerConfig::default());
    let fifo = run(&w, "fifo", &PlannerConfig::default());
    // The planner preempts the long job for the 75x shorter one; FIFO makes it wait.
    assert!(plan.replay.finish[1] < plan.replay.finish[0]);
    assert!(fifo.replay.finish[1] > fifo.replay.finish[0]);
    assert!(plan.metrics.avg_jct_s < fifo.metrics.avg_jct_s);
}

#[test]
fn slower_gpu_types_are_used_only_where_the_ratio_allows() {
    // "good" loses half its speed on T4, "bad" 90%.
    let t = table(&[
        ("good", "A100", &[(8, 100.0)]),
        ("good", "T4", &[(8, 50.0)]),
        ("bad", "A100", &[(8, 100.0)]),
        ("bad", "T4", &[(8, 10.0)]),
    ]);
    let c = cluster(&[("A100", 1, 8), ("T4", 1, 8)]);
    // The short job is planned first and takes the A100s; then the other must choose.
    for (other, expect_t4) in [("good", true), ("bad", false)] {
        let jobs = [
            job("first", 0.0, "good", 1_000.0, 8, false),
            job("second", 0.0, other, 100_000.0, 8, false),
        ];
        let w = price(&jobs, &c, &t, Penalty::default(), &Rules::default()).unwrap();
        let r = run(&w, "plan-jct", &PlannerConfig::default());
        let ty = r.schedule.segments[1][0].ty;
        assert_eq!(w.cluster.gpu_types[ty as usize] == "T4", expect_t4, "{other}");
    }
}

#[test]
fn deadline_planning_admits_what_fits_and_meets_more_deadlines_than_edf() {
    let mut jobs = Vec::new();
    // Ten jobs whose deadlines need 4-8 GPUs each on a 16-GPU cluster.
    for i in 0..10 {
        let mut j = job(&format!("d{i}"), i as f64 * 10.0, "m", 36_000.0, 1, true);
        j.deadline = Some(i as f64 * 10.0 + 1_000.0 + 100.0 * i as f64);
        jobs.push(j);
    }
    let w = price(
        &jobs,
        &cluster(&[("A100", 2, 8)]),
        &table(&[("m", "A100", CURVE)]),
        Penalty::default(),
        &Rules::default(),
    )
    .unwrap();
    let plan = run(
        &w,
        "plan-deadline",
        &PlannerConfig {
            objective: Objective::Deadline,
            ..Default::default()
        },
    );
    let edf = run(&w, "edf", &PlannerConfig::default());
    let hit = |r: &RunResult| r.metrics.deadline_hit_rate.unwrap();
    assert!(hit(&plan) > hit(&edf), "plan {} edf {}", hit(&plan), hit(&edf));
    assert!(hit(&plan) >= 0.3);
}

#[test]
fn a_belief_without_error_plans_exactly_like_the_truth() {
    let jobs: Vec<Job> = (0..30)
        .map(|i| {
            job(
                &format!("j{i}"),
                i as f64 * 50.0,
                "m",
                5_000.0 * (1 + i % 7) as f64,
                1 + i % 4,
                i % 3 != 0,
            )
        })
        .collect();
    let w = price(
        &jobs,
        &cluster(&[("A100", 2, 8)]),
        &table(&[("m", "A100", CURVE)]),
        Penalty::default(),
        &Rules::default(),
    )
    .unwrap();
    let cfg = PlannerConfig::default();
    let truth = run(&w, "plan-jct", &cfg);
    let same = run(&perturb(&w, ErrorDist::Normal(0.0), 7), "plan-jct", &cfg);
    assert_eq!(truth.metrics.avg_jct_s, same.metrics.avg_jct_s);
    // With a large error the plan differs but stays valid (run_policy verifies).
    let noisy = run(&perturb(&w, ErrorDist::Normal(0.5), 7), "plan-jct", &cfg);
    assert_ne!(truth.schedule.segments, noisy.schedule.segments);
}

#[test]
fn verify_rejects_a_rigid_job_whose_count_changes() {
    let w = price(
        &[job("r", 0.0, "m", 8_000.0, 8, false)],
        &cluster(&[("A100", 2, 8)]),
        &table(&[("m", "A100", CURVE)]),
        Penalty::default(),
        &Rules::default(),
    )
    .unwrap();
    let mut s = run(&w, "fifo", &PlannerConfig::default()).schedule;
    s.segments[0][0].gpus = 4;
    s.segments[0][0].nodes = vec![(0, 4)];
    let e = verify(&s, &w, 30.0).unwrap_err().to_string();
    assert!(e.contains("rigid job holds 4 GPUs, not its 8"), "{e}");
}

#[test]
fn verify_replays_with_the_workloads_restart_cost_not_the_schedules() {
    let w = elastic_job_then_rigid_arrival();
    let mut s = run(&w, "plan-jct", &PlannerConfig::default()).schedule;
    assert!(verify(&s, &w, 30.0).is_ok());
    // Cut 1000 s (80,000 iterations) off a's last segment, which follows a
    // restart: a negative restart_s would credit the missing work back.
    s.restart_s = -10_000.0;
    s.segments[0].last_mut().unwrap().end -= 1_000.0;
    let e = verify(&s, &w, 30.0).unwrap_err().to_string();
    assert!(
        e.contains("restart_s is -10000 s, not the workload's restart cost of 30 s"),
        "{e}"
    );
    assert!(e.contains("job `a` does not finish"), "{e}");
    // Zero skips the restarts: rejected as well.
    s.restart_s = 0.0;
    let e = verify(&s, &w, 30.0).unwrap_err().to_string();
    assert!(e.contains("restart_s is 0 s"), "{e}");
}

#[test]
fn policy_names_stay_unique_without_elastic_scaling() {
    let w = on_one_node(&[job("a", 0.0, "m", 8_000.0, 1, true)], 8, &Rules::default());
    let cfg = PlannerConfig {
        elastic: false,
        ..Default::default()
    };
    let names: Vec<String> = tracecast_plan::registry::POLICIES
        .iter()
        .map(|p| run(&w, p, &cfg).metrics.policy)
        .collect();
    let unique: std::collections::BTreeSet<&String> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    assert!(names.iter().any(|n| n == "plan-jct-fixed"), "{names:?}");
    assert!(names.iter().any(|n| n == "fixed"), "{names:?}");
}

#[test]
fn every_policy_finishes_a_mixed_workload_with_valid_schedules() {
    let t = table(&[("m", "A100", CURVE), ("m", "T4", &[(1, 3.0), (2, 5.5), (4, 10.0)])]);
    let c = cluster(&[("A100", 2, 8), ("T4", 2, 4)]);
    let mut jobs: Vec<Job> = (0..60)
        .map(|i| {
            job(
                &format!("j{i}"),
                (i * 37 % 500) as f64 * 7.0,
                "m",
                2_000.0 * (1 + i % 11) as f64,
                [1, 2, 4, 8, 16][i % 5],
                i % 4 != 0,
            )
        })
        .collect();
    for (i, j) in jobs.iter_mut().enumerate().filter(|(i, _)| i % 5 == 0) {
        j.deadline = Some(j.submit + 600.0 * (1 + i % 4) as f64);
    }
    let w = price(&jobs, &c, &t, Penalty::default(), &Rules::default()).unwrap();
    // No job can finish sooner than its work at its fastest true rate on any type and count.
    let min_run: Vec<f64> = w
        .jobs
        .iter()
        .map(|j| {
            let fastest = (0..w.cluster.gpu_types.len())
                .flat_map(|t| (1..=w.cluster.capacity[t]).map(move |n| j.true_rate(t as u16, n)))
                .fold(0.0f64, f64::max);
            j.total / fastest
        })
        .collect();
    for p in tracecast_plan::registry::POLICIES {
        let r = run(&w, p, &PlannerConfig::default());
        let finished = r.replay.finish.iter().filter(|f| f.is_finite()).count();
        assert_eq!(finished, w.jobs.len(), "{p}");
        for ((pj, &f), &min) in w.jobs.iter().zip(&r.replay.finish).zip(&min_run) {
            assert!(
                f - pj.submit >= min * (1.0 - 1e-9),
                "{p}: job `{}` took {} s, less than its {min} s at the fastest rate",
                pj.id,
                f - pj.submit
            );
        }
        assert!(
            r.metrics.gpu_utilization > 0.0 && r.metrics.gpu_utilization <= 1.0,
            "{p}"
        );
    }
}

/// Deadline jobs on 8 GPUs under ElasticFlow's rules: counts 1, 2, 4, 8 only.
fn elasticflow_workload() -> Workload {
    let jobs = [
        // 30,000 iterations in 1,000 s: needs 4 GPUs (36/s) all along.
        with_deadline("a", 0.0, "m", 30_000.0, 1_000.0),
        with_deadline("b", 0.0, "m", 30_000.0, 1_000.0),
        // A third like them cannot fit beside a and b: rejected.
        with_deadline("c", 0.0, "m", 30_000.0, 1_000.0),
        // Loose: admitted, runs on what is left.
        with_deadline("d", 10.0, "m", 5_000.0, 100_000.0),
    ];
    price(
        &jobs,
        &cluster(&[("A100", 1, 8)]),
        &table(&[("m", "A100", &[(1, 10.0), (2, 19.0), (4, 36.0), (8, 60.0), (3, 27.0)])]),
        Penalty::default(),
        &Rules::elasticflow(),
    )
    .unwrap()
}

#[test]
fn elasticflow_rules_reject_measured_counts_rounds_and_overheads() {
    let w = elasticflow_workload();
    // The 3-GPU figure is a measurement too; the rules cap `m` at its batch size (64).
    let cfg = PlannerConfig {
        objective: Objective::Deadline,
        ..Default::default()
    };
    let r = run(&w, "plan-deadline", &cfg);
    assert_eq!(r.replay.rejected, vec![false, false, true, false]);
    assert!(r.schedule.segments[2].is_empty());
    assert_eq!(r.metrics.rejected, 1);
    assert_eq!(r.metrics.deadline_hit_rate, Some(0.75));
    assert_eq!(r.metrics.unmeasured_gpu_share, 0.0);
    // Rounds are at least 60 s apart: d's arrival at 10 s waits for the round at 60 s.
    assert!(r.schedule.rounds.windows(2).all(|p| p[1] - p[0] >= 60.0 - 1e-9));
    assert_eq!(r.schedule.rounds[..2], [0.0, 60.0]);
    // Every round charges the jobs holding GPUs: a's first round 2 + 2 (log2 4 + 1) s.
    assert_eq!(r.schedule.segments[0][0].restart, 8.0);
    // JCTs cover the jobs that ran.
    let ran: Vec<f64> = [0, 1, 3]
        .iter()
        .map(|&j| r.replay.finish[j] - w.jobs[j].submit)
        .collect();
    assert!((r.metrics.avg_jct_s - ran.iter().sum::<f64>() / 3.0).abs() < 1e-6);

    // The verifier recomputes the overheads: a segment stretched to a 5-GPU count fails.
    let mut s = r.schedule.clone();
    s.segments[0][0].gpus = 5;
    s.segments[0][0].nodes = vec![(0, 5)];
    let e = verify(&s, &w, 0.0).unwrap_err().to_string();
    assert!(e.contains("5 GPUs is not a count the throughput table measured"), "{e}");
    // A change between rounds fails.
    let mut s = r.schedule.clone();
    s.segments[3][0].start = 30.0;
    let e = verify(&s, &w, 0.0).unwrap_err().to_string();
    assert!(e.contains("between decision rounds"), "{e}");
    // Rejection is not allowed under tracecast's own rules.
    let simple = Workload {
        rules: Rules::default(),
        ..w.clone()
    };
    let mut s = r.schedule.clone();
    s.rules = Rules::default();
    s.rounds.clear();
    let e = verify(&s, &simple, 0.0).unwrap_err().to_string();
    assert!(e.contains("rules `simple` do not allow"), "{e}");
}

#[test]
fn elasticflows_edf_gives_the_earliest_deadline_its_largest_count() {
    let w = elasticflow_workload();
    let r = run(&w, "edf-elastic", &PlannerConfig::default());
    // a, b and c share a deadline (ties go by job order): a takes all 8 GPUs first.
    assert_eq!(r.schedule.segments[0][0].gpus, 8);
    assert_eq!(r.schedule.segments[0][0].start, 0.0);
    assert!(r.schedule.segments[1][0].start > 0.0);
    assert_eq!(r.metrics.rejected, 0);
    assert_eq!(
        run(&w, "dlas-gpu", &PlannerConfig::default()).metrics.policy,
        "dlas-gpu"
    );
}

#[test]
fn progress_ends_at_every_job_done() {
    let w = elasticflow_workload();
    let last = std::sync::Mutex::new((0, 0));
    let cfg = PlannerConfig {
        objective: Objective::Deadline,
        ..Default::default()
    };
    tracecast_plan::run_policy_reporting(&w, "plan-deadline", &cfg, &|done, total| {
        *last.lock().unwrap() = (done, total)
    })
    .unwrap();
    // The rejected job counts as done: nothing is left to plan.
    assert_eq!(*last.lock().unwrap(), (4, 4));
}

/// One GPU; a 500 s job at 0 and a 60 s job every 50 s from 0 to 950 s: by
/// shortest work first the long job waits for every short one.
fn long_job_among_short_ones() -> Workload {
    let mut jobs = vec![job("long", 0.0, "m", 5_000.0, 1, false)];
    jobs.extend((0..20).map(|k| job(&format!("s{k}"), 50.0 * f64::from(k), "m", 600.0, 1, false)));
    price(
        &jobs,
        &cluster(&[("A100", 1, 1)]),
        &table(&[("m", "A100", &[(1, 10.0)])]),
        Penalty::default(),
        &Rules::default(),
    )
    .unwrap()
}

#[test]
fn a_job_waiting_past_the_starvation_bound_goes_first() {
    let w = long_job_among_short_ones();
    let cfg = |starvation_s, factor| PlannerConfig {
        starvation_s,
        starvation_factor: Some(factor),
        restart_s: 0.0,
        ..Default::default()
    };
    let patient = run(&w, "plan-jct", &cfg(1e9, 0.0));
    assert!(patient.schedule.segments[0][0].start >= 1200.0);
    // With a 330 s bound the long job is promoted at 330 s (a wake-up: no job
    // arrives or ends then) and takes the GPU from the short job started at 300 s.
    let bounded = run(&w, "plan-jct", &cfg(330.0, 0.0));
    let long = &bounded.schedule.segments[0];
    assert_eq!(long[0].start, 330.0);
    assert_eq!(long.len(), 1, "a promoted job keeps its GPU: {long:?}");
    let preempted = bounded.schedule.segments.iter().filter(|s| s.len() > 1).count();
    assert_eq!(preempted, 1);
    assert!(bounded.replay.finish.iter().all(|f| f.is_finite()));
    // A bound relative to the job's length: 2 x 500 s, so 1000 s.
    let relative = run(&w, "plan-jct", &cfg(330.0, 2.0));
    assert_eq!(relative.schedule.segments[0][0].start, 1000.0);
    // The default for `jct` is 10 x its run time: 5000 s, after every short job.
    let default = run(
        &w,
        "plan-jct",
        &PlannerConfig {
            starvation_s: 330.0,
            restart_s: 0.0,
            ..Default::default()
        },
    );
    assert!(default.schedule.segments[0][0].start >= 1200.0);
}

#[test]
fn promoted_jobs_take_at_most_their_share_of_the_gpus() {
    // Two GPUs; two 1000 s jobs at 1 s, and two 60 s jobs every 60 s until
    // 1140 s: the short ones alone keep both GPUs busy.
    let mut jobs = vec![
        job("long1", 1.0, "m", 10_000.0, 1, false),
        job("long2", 1.0, "m", 10_000.0, 1, false),
    ];
    jobs.extend((0..40).map(|k| job(&format!("s{k}"), 60.0 * f64::from(k / 2), "m", 600.0, 1, false)));
    let w = price(
        &jobs,
        &cluster(&[("A100", 1, 2)]),
        &table(&[("m", "A100", &[(1, 10.0)])]),
        Penalty::default(),
        &Rules::default(),
    )
    .unwrap();
    let cfg = |starved_share| PlannerConfig {
        starvation_s: 100.0,
        starvation_factor: Some(0.0),
        starved_share,
        restart_s: 0.0,
        ..Default::default()
    };
    let start = |r: &tracecast_plan::RunResult, j: usize| r.schedule.segments[j][0].start;
    // Uncapped, both long jobs go first once they have waited 100 s.
    let all = run(&w, "plan-jct", &cfg(1.0));
    assert_eq!((start(&all, 0), start(&all, 1)), (101.0, 101.0));
    // On half the GPUs one goes first; the other waits its turn behind the short jobs.
    let half = run(&w, "plan-jct", &cfg(0.5));
    assert_eq!(start(&half, 0), 101.0);
    assert!(start(&half, 1) >= 1101.0, "{}", start(&half, 1));
    assert!(half.metrics.avg_jct_s < all.metrics.avg_jct_s);
}

/// A policy that asks the engine for what it must refuse.
struct Unruly {
    changes: Vec<(usize, Option<(u16, u32)>)>,
}

impl tracecast_plan::simulator::Policy for Unruly {
    fn name(&self) -> String {
        "unruly".into()
    }

    fn decide(&mut self, ctx: &tracecast_plan::simulator::Ctx<'_>, changes: &mut tracecast_plan::simulator::Changes) {
        changes.extend(self.changes.iter().filter(|(j, _)| ctx.active.contains(j)));
    }
}

#[test]
fn the_engine_refuses_changes_that_break_the_cluster_or_repeat() {
    let w = long_job_among_short_ones();
    let engine = |changes: Vec<(usize, Option<(u16, u32)>)>| {
        let opts = tracecast_plan::simulator::EngineOpts {
            restart_s: 0.0,
            progress: &|_, _| {},
        };
        tracecast_plan::simulator::run(&w, &mut Unruly { changes }, opts)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let err = engine(vec![(0, Some((0, 2)))]);
    assert!(
        err.contains("policy `unruly` asked for 2 A100 GPUs; the cluster has 1"),
        "{err}"
    );
    let err = engine(vec![(0, Some((0, 1))), (0, None)]);
    assert!(
        err.contains("changed twice at one event the allocation of job `long`"),
        "{err}"
    );
    let err = engine(vec![(0, Some((0, 0)))]);
    assert!(err.contains("gave zero GPUs to job `long`"), "{err}");
    let err = engine(vec![(0, Some((3, 1)))]);
    assert!(
        err.contains("used a GPU type the cluster does not have for job `long`"),
        "{err}"
    );
}

#[test]
fn themis_shares_the_cluster_at_requested_counts() {
    // Two 4-GPU jobs on 4 GPUs: Themis time-shares them (each runs, stops
    // and runs again), always at the requested count, and both finish.
    let w = on_one_node(
        &[
            job("a", 0.0, "m", 40_000.0, 4, true),
            job("b", 0.0, "m", 40_000.0, 4, true),
        ],
        4,
        &Rules::default(),
    );
    let r = run(&w, "themis", &PlannerConfig::default());
    for segs in &r.schedule.segments {
        assert!(segs.iter().all(|s| s.gpus == 4), "{segs:?}");
    }
    assert!(
        r.schedule.segments.iter().all(|s| s.len() > 1),
        "both jobs are preempted at least once: {:?}",
        r.schedule.segments
    );
    assert!(r.replay.finish.iter().all(|f| f.is_finite()));
}

#[test]
fn gandiva_slices_time_in_node_sets_and_decides_only_at_arrivals() {
    // One 8-GPU node under ElasticFlow's rules. Nine 1-GPU jobs at 0 share one
    // node set (it takes new jobs while its load plus one is below 8, then
    // time-slices): eight run, job 8 waits. Job 0 finishes at 104 s (100 s of
    // work and the 4 s overhead of the round at 0), between rounds: its GPU
    // stays idle until the next arrival's round at 10,000 s.
    let mut jobs = vec![job("j0", 0.0, "m", 1_000.0, 1, false)];
    jobs.extend((1..8).map(|k| job(&format!("j{k}"), 0.0, "m", 150_000.0, 1, false)));
    jobs.push(job("j8", 0.0, "m", 1_000.0, 1, false));
    jobs.push(job("z", 10_000.0, "m", 1_000.0, 1, false));
    let w = on_one_node(&jobs, 8, &Rules::elasticflow());
    let r = run(&w, "gandiva", &PlannerConfig::default());
    let s = &r.schedule;
    assert_eq!(s.ef_charge, EfCharge::EveryRoundWhileArriving);
    assert!((s.segments[0][0].end - 104.0).abs() < 1e-6, "{:?}", s.segments[0]);
    assert_eq!(s.segments[8][0].start, 10_000.0);
    // After the last arrival ElasticFlow's Gandiva charges nothing: job 8 runs 100 s flat.
    assert!((s.segments[8][0].end - 10_100.0).abs() < 1e-6);
    // Then rounds come every 60 s from the last arrival: z starts at the first after 10,100 s.
    assert_eq!(s.segments[9][0].start, 10_120.0);
    assert!(s.segments.iter().all(|segs| segs.iter().all(|g| g.gpus == 1)));

    // The schedule file keeps the charge, and verify replays it: charged as
    // ElasticFlow charges its other schedulers, the long jobs do not finish.
    let file = s.to_file(&w);
    let back = tracecast_plan::schedule::Schedule::from_file(file, &w, std::path::Path::new("s.json")).unwrap();
    assert_eq!(back.ef_charge, EfCharge::EveryRoundWhileArriving);
    verify(&back, &w, 0.0).unwrap();
    let mut other = back.clone();
    other.ef_charge = EfCharge::Remembered;
    let e = verify(&other, &w, 0.0).unwrap_err().to_string();
    assert!(e.contains("does not finish"), "{e}");
}

#[test]
fn dlas_gpu_queues_jobs_in_lists_and_jumps_when_elasticflow_computes_it() {
    // Two 2-GPU jobs on one 2-GPU node, a at 0 and b at 1 s. ElasticFlow
    // computes the next threshold jump at every event as ceil((limit -
    // seconds run) / GPUs), seconds where GPU-seconds are meant: at b's
    // arrival, 1 + ceil(3,249 / 2) = 1,626 s, where a drops to queue 1; b runs
    // until its jump, 1,626 + 1,625 = 3,251 s, and joins queue 1 behind a,
    // which waited there: a runs again. a has run 1,626 s, so its next jump
    // is ceil((7,200 - 1,626) / 2) = 2,787 s later, at 6,038 s, though it
    // crosses 7,200 GPU-s well before. Then b, alone in queue 1, runs.
    // (Default rules: each restart costs 30 s, which the jumps do not see.)
    let w = on_one_node(
        &[
            job("a", 0.0, "m", 1_000_000.0, 2, false),
            job("b", 1.0, "m", 1_000_000.0, 2, false),
        ],
        2,
        &Rules::default(),
    );
    let segs = &run(&w, "dlas-gpu", &PlannerConfig::default()).schedule.segments;
    let near = |a: f64, b: f64| (a - b).abs() < 1e-6;
    assert!(near(segs[0][0].end, 1_626.0), "{segs:?}");
    assert!(
        near(segs[1][0].start, 1_626.0) && near(segs[1][0].end, 3_251.0),
        "{segs:?}"
    );
    assert!(
        near(segs[0][1].start, 3_251.0) && near(segs[0][1].end, 6_038.0),
        "{segs:?}"
    );
    assert!(near(segs[1][1].start, 6_038.0), "{segs:?}");
    // tracecast's own Tiresias moves a on when it crosses (thresholds of 1 and 10 GPU-hours).
    let segs = &run(&w, "tiresias", &PlannerConfig::default()).schedule.segments;
    assert!(near(segs[0][0].end, 1_800.0), "{segs:?}");
}

#[test]
fn dlas_gpu_pays_a_starts_overhead_at_the_jobs_next_round() {
    // ElasticFlow's Tiresias charges a start's overhead (4 s for one GPU)
    // when the next round updates the job: a job that finishes first pays
    // nothing.
    let alone = [job("a", 0.0, "m", 1_000.0, 1, false)];
    let with_arrival = [alone[0].clone(), job("z", 30.0, "m", 1_000.0, 1, false)];
    let run_on = |jobs: &[Job]| {
        let w = on_one_node(jobs, 8, &Rules::elasticflow());
        let r = run(&w, "dlas-gpu", &PlannerConfig::default());
        assert_eq!(r.schedule.ef_charge, EfCharge::DeferredStarts);
        verify(&r.schedule, &w, 0.0).unwrap();
        r
    };
    let r = run_on(&alone);
    assert!((r.replay.finish[0] - 100.0).abs() < 1e-6, "{:?}", r.replay.finish);
    // z's arrival waits for the round at 60 s, where a pays its 4 s; its GPU
    // goes back at the first round after it finishes (104 s), 60 s on.
    let r = run_on(&with_arrival);
    assert!((r.replay.finish[0] - 104.0).abs() < 1e-6, "{:?}", r.replay.finish);
    assert_eq!(r.schedule.segments[1][0].start, 60.0);
    assert!(
        (r.schedule.segments[0][0].end - 120.0).abs() < 1e-6,
        "{:?}",
        r.schedule.segments[0]
    );
}

#[test]
fn themis_under_elasticflows_rules_keeps_its_rounds_on_a_60_s_grid() {
    // ElasticFlow's Themis ticks every 60 s from its first event, idle or
    // not: b, submitted at 1,000 s to an idle cluster, starts at the tick
    // of 1,020 s.
    let w = on_one_node(
        &[
            job("a", 0.0, "m", 1_000.0, 1, false),
            job("b", 1_000.0, "m", 1_000.0, 1, false),
        ],
        8,
        &Rules::elasticflow(),
    );
    let r = run(&w, "themis", &PlannerConfig::default());
    assert_eq!(r.schedule.segments[1][0].start, 1_020.0, "{:?}", r.schedule.segments);
    assert!(
        r.schedule.rounds.iter().all(|t| t % 60.0 == 0.0),
        "{:?}",
        r.schedule.rounds
    );
    verify(&r.schedule, &w, 0.0).unwrap();
}

#[test]
fn dlas_gpu_rejects_a_job_asking_for_more_gpus_than_the_cluster_has() {
    // ElasticFlow's Tiresias runs jobs at their requested counts: one asking
    // for 16 GPUs of an 8-GPU cluster waits forever there. Under its rules
    // tracecast rejects it on arrival (a missed deadline, no JCT), and the
    // other job runs as if it were not there.
    let mut big = job("big", 0.0, "m", 1_000.0, 16, true);
    big.deadline = Some(10_000.0);
    let w = on_one_node(&[big, job("a", 10.0, "m", 1_000.0, 1, false)], 8, &Rules::elasticflow());
    let r = run(&w, "dlas-gpu", &PlannerConfig::default());
    assert_eq!(r.schedule.rejected, vec![true, false]);
    assert!(r.schedule.segments[0].is_empty());
    assert_eq!(r.schedule.segments[1][0].start, 60.0, "{:?}", r.schedule.segments);
    verify(&r.schedule, &w, 0.0).unwrap();
}

/// An admitted job that can no longer make its deadline is due again later
/// and keeps its place by that: a stream of later admissions does not starve
/// it. Job `late` is planned on a belief twice its true speed, so it misses
/// its deadline; a newcomer every 250 s needs 4 of the 8 GPUs for 500 s.
#[test]
fn a_late_admitted_job_is_not_starved_by_later_admissions() {
    let mut jobs = vec![with_deadline("late", 0.0, "m", 100_000.0, 2_000.0)];
    for k in 0..40 {
        let at = 60.0 + 250.0 * f64::from(k);
        jobs.push(with_deadline(&format!("n{k}"), at, "n", 18_000.0, at + 700.0));
    }
    let points = &[(1, 10.0), (2, 19.0), (4, 36.0), (8, 60.0)];
    let w = price(
        &jobs,
        &cluster(&[("A100", 1, 8)]),
        &table(&[("m", "A100", points), ("n", "A100", points)]),
        Penalty::default(),
        &Rules::elasticflow(),
    )
    .unwrap();
    let optimistic = w.with_belief(|i, j| {
        if i == 0 {
            j.truth
                .iter()
                .map(|c| c.as_ref().map(|c| std::sync::Arc::new(c.scaled(|_| 2.0))))
                .collect()
        } else {
            j.truth.clone()
        }
    });
    let cfg = PlannerConfig {
        objective: Objective::Deadline,
        ..Default::default()
    };
    let r = run(&optimistic, "plan-deadline", &cfg);
    assert!(!r.replay.rejected[0]);
    let finish = r.replay.finish[0];
    assert!(
        finish > 2_000.0,
        "it cannot make its deadline at its true speed: {finish}"
    );
    // 1,667 s of work at 8 GPUs: done long before the newcomers stop (10,060 s),
    // where it ran best effort behind them before.
    assert!(finish < 6_000.0, "starved until {finish}");
}
