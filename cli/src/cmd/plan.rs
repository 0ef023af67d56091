use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use tracecast_plan::Inputs;
use tracecast_plan::perturb::ErrorDist;
use tracecast_plan::planner::{Objective, PlannerConfig};
use tracecast_plan::request::{Belief, PlanRequest, plan};
use tracecast_plan::rules::{Admission, Counts, Rules};
use tracecast_plan::workload::Penalty;

/// Plan a cluster schedule: job order, elastic GPU counts over time, placement.
///
/// Reads three inputs, each in any accepted format (see schemas/FORMATS.md):
///   --jobs        tracecast plan_jobs CSV/Parquet, ElasticFlow trace CSV,
///                 raw ITP CSV (rigid), Philly/Helios job log
///   --cluster     tracecast cluster TOML (node groups, several GPU types)
///                 or an ElasticFlow cluster_specs CSV (GPUs of --gpu-type)
///   --throughput  tracecast plan_throughput CSV/Parquet, an ElasticFlow
///                 throughput folder (<model>.csv; or one folder per GPU
///                 type), or Gavel's throughput JSON; repeat to merge
///
/// Writes into --out: schedule.json (per job, segments of [start, end) with
/// GPU type, count and nodes), schedule.csv (one row per segment), jobs.csv
/// (each job's outcome), metrics.json, gantt.svg and utilization.svg, and
/// prints a summary. Every
/// schedule is verified (GPU capacity, no self-overlap, all work done)
/// before it is written.
///
/// Objectives: jct (shortest predicted remaining GPU-time first with a
/// starvation bound), deadline (admission control + earliest deadline first
/// with the fewest GPUs that meet each deadline), makespan (longest first).
/// Elastic jobs' GPU counts follow marginal throughput per GPU on their
/// scaling curves; rigid jobs keep their requested count.
///
/// Examples:
///   tracecast plan --jobs fixtures/plan/jobs.csv --cluster fixtures/plan/cluster.toml \
///       --throughput fixtures/plan/throughput.csv --objective jct --out demo-out/plan --compare
///   tracecast plan --jobs ../shared/cluster/elasticflow-itp/cluster10.csv \
///       --cluster ../shared/cluster/cluster_specs/n4g8.csv \
///       --throughput ../shared/cluster/throughputs/A100 --out /tmp/c10 --error normal:0.05
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct PlanArgs {
    #[command(flatten)]
    pub inputs: InputArgs,
    /// What to optimise.
    #[arg(long, value_enum, default_value_t = ObjectiveArg::Jct)]
    pub objective: ObjectiveArg,
    /// Output directory (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    #[command(flatten)]
    pub planner: PlannerArgs,
    /// Also run the baselines (fifo, sjf-oracle, tiresias, edf; edf-elastic
    /// and dlas-gpu as ElasticFlow implements them; fixed) and print the
    /// comparison table (also written to DIR/comparison.md). ElasticFlow's
    /// themis and gandiva run with `tracecast simulate --policy NAME`.
    #[arg(long)]
    pub compare: bool,
    /// Plan with predictions that err: perturb the planner's throughputs by a
    /// relative error per job, GPU type and count (normal:SIGMA,
    /// uniform:HALFWIDTH or lognormal:SIGMA), execute on the truth, and report
    /// average JCT against the plan made with true throughputs. The schedule
    /// written is the one planned with errors (first seed).
    #[arg(long, value_name = "DIST")]
    pub error: Option<String>,
    /// Seeds for --error (the loss is averaged over them).
    #[arg(long, default_value_t = 5)]
    pub error_seeds: u64,
    /// Plan with this throughput table as the belief (e.g. `tracecast predict`
    /// output) while --throughput stays the truth; reports the loss as --error does.
    #[arg(long, value_name = "P")]
    pub belief_throughput: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ObjectiveArg {
    Jct,
    Makespan,
    Deadline,
}

/// The three inputs, shared by `plan`, `simulate` and `verify`.
#[derive(Args)]
pub struct InputArgs {
    /// Job file (CSV or Parquet; format recognised by its columns).
    #[arg(long, value_name = "F")]
    pub jobs: PathBuf,
    /// Cluster spec: .toml (tracecast) or .csv (ElasticFlow cluster_specs).
    #[arg(long, value_name = "F")]
    pub cluster: PathBuf,
    /// Throughput source(s): file or folder; repeat to merge (e.g. A100 and T4 folders).
    #[arg(long, value_name = "P", required = true)]
    pub throughput: Vec<PathBuf>,
    /// GPU type of an ElasticFlow cluster CSV [default: the throughput table's only type, else A100].
    #[arg(long)]
    pub gpu_type: Option<String>,
    /// Throughput factor for a job spread over more nodes than its count needs
    /// (used unless the table gives a figure for that many nodes).
    #[arg(long, default_value_t = 0.9)]
    pub node_penalty: f64,
    /// Further factor for a job spread over more switches than needed.
    #[arg(long, default_value_t = 0.9)]
    pub switch_penalty: f64,
    /// The rules to plan, simulate and verify under. `simple`: any GPU count
    /// (interpolated between measured ones), --restart-s per change, every job
    /// runs, placement penalties. `elasticflow`: ElasticFlow's simulator's
    /// rules: only measured counts, at most the batch size and 64 (the
    /// planner keeps to ElasticFlow's own per-model caps);
    /// decisions in rounds at least 60 s apart; ElasticFlow's overhead formula
    /// every round instead of --restart-s; deadline jobs that admission control
    /// refuses never run and count as missed; no placement penalty.
    #[arg(long, value_enum, default_value_t = RulesArg::Simple)]
    pub rules: RulesArg,
    /// Override the rule set's GPU counts: `measured` allows only counts the
    /// throughput table measured, `interpolated` any count (the rules' name
    /// then says so, e.g. `simple+counts=measured`).
    #[arg(long, value_enum)]
    pub counts: Option<CountsArg>,
    /// Override the rule set's admission: `reject` lets the deadline planner
    /// refuse jobs (they never run and count as missed), `best-effort` runs them.
    #[arg(long, value_enum)]
    pub admission: Option<AdmissionArg>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum CountsArg {
    Measured,
    Interpolated,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum AdmissionArg {
    Reject,
    BestEffort,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum RulesArg {
    Simple,
    Elasticflow,
}

impl RulesArg {
    pub fn rules(self) -> Rules {
        match self {
            RulesArg::Simple => Rules::default(),
            RulesArg::Elasticflow => Rules::elasticflow(),
        }
    }
}

/// Knobs of the planner (defaults in brackets are what the benchmarks use).
// The planner-only options stay `None` when not given, so that `simulate
// --schedule`, which runs no planner, can warn about exactly those it ignores.
#[derive(Args)]
pub struct PlannerArgs {
    /// Seconds a job makes no progress after its GPU count, type or nodes change
    /// (checkpoint-restart cost; `simulate --schedule` replays with it too;
    /// `--rules elasticflow` charges ElasticFlow's formula instead).
    #[arg(long, default_value_t = 30.0)]
    pub restart_s: f64,
    /// A job that has waited this many seconds is served before all others [default: 86400]...
    #[arg(long)]
    pub starvation_s: Option<f64>,
    /// ...or, if longer, this many times its predicted run time at its requested
    /// count, so that on an overloaded cluster, where every job waits past the
    /// fixed bound, long jobs do not all go ahead of short ones [default: 10 for
    /// --objective jct, 0 for deadline].
    #[arg(long)]
    pub starvation_factor: Option<f64>,
    /// Jobs past the starvation bound go first on at most this share of the GPUs
    /// (and after all other jobs on the rest), so that an overloaded cluster,
    /// where every job is past the bound, is not planned first-come first-served.
    #[arg(long, default_value_t = 0.5)]
    pub starved_share: f64,
    /// Least marginal efficiency (extra one-GPU-equivalents per extra GPU) worth
    /// giving a GPU for [default: 0.1; 0 for --objective deadline under --rules elasticflow].
    #[arg(long)]
    pub min_gain: Option<f64>,
    /// Keep every job at its requested GPU count (no elastic scaling).
    #[arg(long)]
    pub no_elastic: bool,
}

impl InputArgs {
    /// The rule set, with any rule overridden.
    fn rules(&self) -> Rules {
        let mut rules = self.rules.rules();
        if let Some(c) = self.counts {
            rules = rules.with_counts(match c {
                CountsArg::Measured => Counts::Measured,
                CountsArg::Interpolated => Counts::Interpolated,
            });
        }
        if let Some(a) = self.admission {
            rules = rules.with_admission(match a {
                AdmissionArg::Reject => Admission::Reject,
                AdmissionArg::BestEffort => Admission::BestEffort,
            });
        }
        rules
    }

    pub fn load(&self) -> anyhow::Result<Inputs> {
        for (name, v) in [
            ("--node-penalty", self.node_penalty),
            ("--switch-penalty", self.switch_penalty),
        ] {
            if !(v > 0.0 && v <= 1.0) {
                bail!("{name} must be in (0, 1], not {v}");
            }
        }
        let penalty = Penalty {
            node: self.node_penalty,
            switch: self.switch_penalty,
        };
        let inputs = tracecast_plan::load(
            &self.jobs,
            &self.cluster,
            &self.throughput,
            self.gpu_type.as_deref(),
            penalty,
            &self.rules(),
        )?;
        if !inputs.skipped.is_empty() {
            tracing::warn!(
                "skipped {} job rows (first: {})",
                inputs.skipped.len(),
                inputs.skipped[0]
            );
        }
        Ok(inputs)
    }
}

impl PlannerArgs {
    pub fn config(&self, objective: Objective) -> anyhow::Result<PlannerConfig> {
        let d = PlannerConfig::default();
        let starvation_s = self.starvation_s.unwrap_or(d.starvation_s);
        let min_gain = self.min_gain;
        if !(self.restart_s >= 0.0
            && starvation_s > 0.0
            && self.starvation_factor.is_none_or(|f| f >= 0.0)
            && self.starved_share > 0.0
            && self.starved_share <= 1.0
            && min_gain.is_none_or(|g| g >= 0.0))
        {
            bail!(
                "--restart-s, --starvation-factor and --min-gain must be >= 0, --starvation-s > 0 \
                 and --starved-share in (0, 1]"
            );
        }
        Ok(PlannerConfig {
            objective,
            elastic: !self.no_elastic,
            starvation_s,
            starvation_factor: self.starvation_factor,
            starved_share: self.starved_share,
            restart_s: self.restart_s,
            min_gain,
            ..d
        })
    }
}

pub fn describe_inputs(args: &InputArgs, inputs: &Inputs) -> String {
    let w = &inputs.workload;
    let elastic = w.jobs.iter().filter(|j| j.elastic).count();
    let deadlines = w.jobs.iter().filter(|j| j.deadline.is_some()).count();
    format!(
        "jobs:       {} ({} format: {} elastic, {} rigid, {} with deadlines) from {}\n\
         cluster:    {} from {}\n\
         throughput: {} figures, job types {}, GPU types {} from {}\n\
         rules:      {}",
        w.jobs.len(),
        inputs.job_format.name(),
        elastic,
        w.jobs.len() - elastic,
        deadlines,
        args.jobs.display(),
        w.cluster.describe(),
        args.cluster.display(),
        inputs.table.len(),
        inputs.table.job_types().join(","),
        inputs.table.gpu_type_names.join(","),
        inputs.table.sources.join(" + "),
        w.rules.name,
    )
}

pub fn run(args: PlanArgs, ui: &crate::progress::Ui) -> anyhow::Result<ExitCode> {
    let objective = match args.objective {
        ObjectiveArg::Jct => Objective::Jct,
        ObjectiveArg::Makespan => Objective::Makespan,
        ObjectiveArg::Deadline => Objective::Deadline,
    };
    let cfg = args.planner.config(objective)?;
    let inputs = args.inputs.load()?;
    println!("{}", describe_inputs(&args.inputs, &inputs));
    let belief = match (&args.error, &args.belief_throughput) {
        (Some(_), Some(_)) => bail!("--error and --belief-throughput are exclusive"),
        (Some(text), None) => Belief::Error {
            dist: ErrorDist::parse(text).map_err(|e| anyhow::anyhow!("--error: {e}"))?,
            seeds: args.error_seeds,
        },
        (None, Some(path)) => Belief::Table(path.clone()),
        (None, None) => Belief::Truth,
    };
    let outcome = plan(&PlanRequest {
        workload: &inputs.workload,
        objective,
        config: &cfg,
        belief,
        compare: args.compare,
        out: &args.out,
        progress: &ui.late_bar("planning (jobs done)"),
        baselines_progress: &ui.late_bar("baselines (jobs done, all runs)"),
    })
    .with_context(|| format!("plan-{}", objective.name()))?;
    if outcome.belief_fallbacks > 0
        && let Some(path) = &args.belief_throughput
    {
        tracing::warn!(
            "{} job x GPU-type pairs are not in {}; they use the true throughput",
            outcome.belief_fallbacks,
            path.display()
        );
    }
    let m = &outcome.planned.metrics;
    println!(
        "\n{}{}: planned in {:.3}s, schedule verified",
        outcome.policy,
        outcome.belief.as_ref().map_or(String::new(), |b| format!(" ({b})")),
        m.planning_s.unwrap_or(0.0)
    );
    println!(
        "  avg JCT {:.2}h  median {:.2}h  p99 {:.2}h  makespan {:.1}h  GPU utilization {:.1}%  avg queueing {:.2}h",
        m.avg_jct_s / 3600.0,
        m.median_jct_s / 3600.0,
        m.p99_jct_s / 3600.0,
        m.makespan_s / 3600.0,
        m.gpu_utilization * 100.0,
        m.avg_queueing_delay_s / 3600.0
    );
    if let Some(r) = m.deadline_hit_rate {
        println!(
            "  deadlines met: {:.1}% of {} jobs with one ({} rejected by admission control, counted as missed; JCTs cover the jobs that ran)",
            r * 100.0,
            m.deadline_jobs,
            m.rejected
        );
    }
    if m.unmeasured_gpu_share > 0.0 {
        println!(
            "  {:.1}% of the GPU-time at counts the throughput table did not measure (interpolated)",
            m.unmeasured_gpu_share * 100.0
        );
    }
    println!(
        "  {} segments, {} restarts, {} segments on interpolated throughput (listed in schedule.json `interpolated`)",
        m.segments, m.restarts, m.interpolated_segments
    );
    if let (Some(label), Some(truth)) = (&outcome.belief, outcome.truth_avg_jct_s) {
        println!(
            "\nplanning with predictions ({label}): avg JCT {:.3}h vs {:.3}h with true throughputs: {:+.2}%",
            m.avg_jct_s / 3600.0,
            truth / 3600.0,
            (m.avg_jct_s / truth - 1.0) * 100.0
        );
        if let (Some(planned), Some(truth)) = (m.deadline_hit_rate, outcome.truth_deadline_hit_rate) {
            println!(
                "  deadlines met {:.1}% vs {:.1}% with true throughputs: {:+.1} points",
                planned * 100.0,
                truth * 100.0,
                (planned - truth) * 100.0
            );
        }
    }
    if let Some(e) = &outcome.error_experiment {
        println!(
            "  over {} seeds: mean {:+.2}%, worst {:+.2}%",
            e.predicted_avg_jct_s.len(),
            e.mean_loss * 100.0,
            e.max_loss * 100.0
        );
    }
    if let Some(table) = &outcome.comparison {
        println!("\n{table}");
    }
    println!("\nwrote {}", joined(&outcome.files));
    Ok(ExitCode::SUCCESS)
}

/// Paths as one comma-separated line.
pub fn joined(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
