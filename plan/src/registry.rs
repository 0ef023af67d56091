//! Every policy by name, the planner's and the baselines': the one place that
//! knows both `crate::planner` and `crate::policies` (the planner uses the
//! policies' GPU-type choice, so the policies cannot name the planner).

use crate::planner::{Objective, Planner, PlannerConfig};
use crate::policies::{DlasGpu, Edf, EdfElastic, Fifo, Gandiva, Ordered, SjfOracle, Themis, Tiresias};
use crate::simulator::Policy;

/// The baselines reported beside the planner (`plan --compare`).
pub const BASELINES: [&str; 7] = [
    "fifo",
    "sjf-oracle",
    "tiresias",
    "edf",
    "edf-elastic",
    "dlas-gpu",
    "fixed",
];
/// Baselines run only when named, being slow where thousands of jobs queue
/// (the busy 82k-job load, `bench/plan/gen_busy.sh`, then `tracecast
/// simulate --policy NAME`). Themis solves a program over every active job
/// each round (every event, and every 60 s while a job waits): 60 s on 512
/// GPUs, more than 5 minutes on 128. Gandiva walks every node set's jobs each
/// round, and its rotations make 12 M segments on 1024 GPUs to write and
/// verify: 33 s on 1024 GPUs, 47 s on 512.
pub const BY_NAME_ONLY: [&str; 2] = ["themis", "gandiva"];
/// What `simulate --policy all` runs: the planner's three objectives, then the baselines.
pub const ALL: [&str; 10] = with_objectives(BASELINES);
/// Every policy name `by_name` knows.
pub const POLICIES: [&str; 12] = {
    let mut out = [""; 12];
    let mut i = 0;
    while i < ALL.len() {
        out[i] = ALL[i];
        i += 1;
    }
    while i < out.len() {
        out[i] = BY_NAME_ONLY[i - ALL.len()];
        i += 1;
    }
    out
};

const fn with_objectives(baselines: [&'static str; 7]) -> [&'static str; 10] {
    let mut out = ["plan-jct", "plan-makespan", "plan-deadline", "", "", "", "", "", "", ""];
    let mut i = 0;
    while i < baselines.len() {
        out[3 + i] = baselines[i];
        i += 1;
    }
    out
}

/// A policy by name; planner policies take `cfg` (its objective is overridden by the name).
pub fn by_name(name: &str, cfg: &PlannerConfig) -> Option<Box<dyn Policy>> {
    let planner = |objective, elastic| {
        Box::new(Planner::new(PlannerConfig {
            objective,
            elastic,
            ..cfg.clone()
        })) as Box<dyn Policy>
    };
    Some(match name {
        "plan-jct" => planner(Objective::Jct, cfg.elastic),
        "plan-makespan" => planner(Objective::Makespan, cfg.elastic),
        "plan-deadline" => planner(Objective::Deadline, cfg.elastic),
        // Named apart from `plan-jct` run with `elastic: false` (`plan-jct-fixed`).
        "fixed" => Box::new(Planner::named(
            PlannerConfig {
                objective: Objective::Jct,
                elastic: false,
                ..cfg.clone()
            },
            "fixed",
        )),
        "fifo" => Box::new(Ordered::new(Fifo)),
        "sjf-oracle" => Box::new(Ordered::new(SjfOracle)),
        "tiresias" => Box::new(Ordered::new(Tiresias::default())),
        "edf" => Box::new(Ordered::new(Edf)),
        "edf-elastic" => Box::new(Ordered::new(EdfElastic)),
        "dlas-gpu" => Box::new(DlasGpu::default()),
        "themis" => Box::new(Themis::default()),
        "gandiva" => Box::new(Gandiva::default()),
        _ => return None,
    })
}
