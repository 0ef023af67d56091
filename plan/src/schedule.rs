//! Schedules: in memory (per job, segments of held GPUs) and as files
//! (`schedule.json`, versioned in `schemas::plan`; `schedule.csv`, one row per
//! segment as `schemas::plan::SCHEDULE_SEGMENTS`).

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};
use tracecast_schemas::plan::{SCHEDULE_FORMAT, SCHEDULE_SEGMENTS, SCHEDULE_VERSION};

use crate::error::{PlanError, Result};
use crate::placement::Placement;
use crate::rules::{EfCharge, Rules};
use crate::workload::{Penalty, WorkUnit, Workload};

#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    pub start: f64,
    pub end: f64,
    pub ty: u16,
    pub gpus: u32,
    pub nodes: Placement,
    /// Seconds without progress at the start (a restart after a change).
    pub restart: f64,
    /// Iterations/s the producer used.
    pub rate: f64,
    pub interpolated: bool,
}

/// A schedule for a workload: `segments[i]` belongs to `workload.jobs[i]`.
#[derive(Clone, Debug)]
pub struct Schedule {
    pub policy: String,
    pub restart_s: f64,
    pub penalty: Penalty,
    /// The rules it was made under.
    pub rules: Rules,
    /// Times of the decision rounds, when the rules space them or charge per round (else empty).
    pub rounds: Vec<f64>,
    /// How ElasticFlow's overhead was charged (under rules that charge it).
    pub ef_charge: EfCharge,
    /// Per job: rejected by admission control (never runs).
    pub rejected: Vec<bool>,
    pub segments: Vec<Vec<Segment>>,
}

fn is_remembered(c: &EfCharge) -> bool {
    *c == EfCharge::Remembered
}

#[derive(Serialize, Deserialize)]
pub struct ScheduleFile {
    pub format: String,
    pub version: u32,
    pub policy: String,
    pub restart_s: f64,
    pub penalty: Penalty,
    /// Version 2: the rules, the decision rounds and rejected jobs.
    #[serde(default)]
    pub rules: Rules,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<f64>,
    /// Version 3: how ElasticFlow's overhead was charged (absent: `remembered`).
    #[serde(default, skip_serializing_if = "is_remembered")]
    pub ef_charge: EfCharge,
    pub cluster: ClusterOut,
    pub jobs: Vec<JobOut>,
    /// Configurations whose throughput was interpolated, with the segments using them.
    pub interpolated: Vec<InterpOut>,
}

#[derive(Serialize, Deserialize)]
pub struct ClusterOut {
    pub name: String,
    pub gpu_types: Vec<String>,
    pub nodes: Vec<NodeOut>,
}

#[derive(Serialize, Deserialize)]
pub struct NodeOut {
    pub id: u32,
    pub name: String,
    pub gpu_type: String,
    pub gpus: u32,
    pub switch: u32,
}

#[derive(Serialize, Deserialize)]
pub struct JobOut {
    pub id: String,
    pub submit_s: f64,
    pub work: f64,
    /// `iterations`, or `seconds` for jobs known only by run time.
    pub work_unit: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_s: Option<f64>,
    /// Rejected by admission control: no segments, a missed deadline.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rejected: bool,
    pub segments: Vec<SegOut>,
}

#[derive(Serialize, Deserialize)]
pub struct SegOut {
    pub start_s: f64,
    pub end_s: f64,
    pub gpu_type: String,
    pub gpus: u32,
    pub nodes: Vec<NodeShare>,
    pub restart_s: f64,
    pub iters_per_s: f64,
    pub interpolated: bool,
}

#[derive(Serialize, Deserialize)]
pub struct NodeShare {
    pub node: u32,
    pub gpus: u32,
}

#[derive(Serialize, Deserialize)]
pub struct InterpOut {
    pub job_type: String,
    pub gpu_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<u32>,
    pub gpus: u32,
    pub segments: u64,
}

impl Schedule {
    pub fn to_file(&self, w: &Workload) -> ScheduleFile {
        let c = &w.cluster;
        let mut interp: HashMap<(String, u16, Option<u32>, u32), u64> = HashMap::new();
        let jobs = w
            .jobs
            .iter()
            .zip(&self.segments)
            .zip(&self.rejected)
            .map(|((j, segs), &rejected)| JobOut {
                id: j.id.clone(),
                submit_s: j.submit,
                work: j.total,
                work_unit: match j.unit {
                    WorkUnit::Iterations => "iterations".into(),
                    WorkUnit::Seconds => "seconds".into(),
                },
                deadline_s: j.deadline,
                rejected,
                segments: segs
                    .iter()
                    .map(|s| {
                        if s.interpolated {
                            let key = (j.job_type.clone().unwrap_or_default(), s.ty, j.batch_size, s.gpus);
                            *interp.entry(key).or_default() += 1;
                        }
                        SegOut {
                            start_s: s.start,
                            end_s: s.end,
                            gpu_type: c.gpu_types[s.ty as usize].clone(),
                            gpus: s.gpus,
                            nodes: s.nodes.iter().map(|&(node, gpus)| NodeShare { node, gpus }).collect(),
                            restart_s: s.restart,
                            iters_per_s: s.rate,
                            interpolated: s.interpolated,
                        }
                    })
                    .collect(),
            })
            .collect();
        let mut interpolated: Vec<InterpOut> = interp
            .into_iter()
            .map(|((job_type, ty, batch_size, gpus), segments)| InterpOut {
                job_type,
                gpu_type: c.gpu_types[ty as usize].clone(),
                batch_size,
                gpus,
                segments,
            })
            .collect();
        interpolated.sort_by(|a, b| {
            (&a.job_type, &a.gpu_type, a.batch_size, a.gpus).cmp(&(&b.job_type, &b.gpu_type, b.batch_size, b.gpus))
        });
        ScheduleFile {
            format: SCHEDULE_FORMAT.into(),
            version: SCHEDULE_VERSION,
            policy: self.policy.clone(),
            restart_s: self.restart_s,
            penalty: self.penalty,
            rules: self.rules.clone(),
            rounds: self.rounds.clone(),
            ef_charge: self.ef_charge,
            cluster: ClusterOut {
                name: c.name.clone(),
                gpu_types: c.gpu_types.clone(),
                nodes: c
                    .nodes
                    .iter()
                    .map(|n| NodeOut {
                        id: n.id,
                        name: n.name.clone(),
                        gpu_type: c.gpu_types[n.gpu_type as usize].clone(),
                        gpus: n.gpus,
                        switch: n.switch,
                    })
                    .collect(),
            },
            jobs,
            interpolated,
        }
    }

    /// Read a schedule file against a workload: every job of the workload must
    /// appear (segments may be empty), GPU types must exist in the cluster.
    pub fn from_file(f: ScheduleFile, w: &Workload, path: &Path) -> Result<Schedule> {
        let bad = |reason: String| PlanError::file(path, reason);
        if f.format != SCHEDULE_FORMAT {
            return Err(bad(format!("format `{}` is not `{SCHEDULE_FORMAT}`", f.format)));
        }
        // Version 1 is version 2 without rules (tracecast's own), rounds or
        // rejections; version 2 is version 3 without `ef_charge`; version 3
        // charged `dlas-gpu` as `at_starts_and_flushes`, which version 4
        // replaced with `deferred_starts` (such a file fails to parse).
        if !(1..=SCHEDULE_VERSION).contains(&f.version) {
            return Err(bad(format!(
                "schedule version {}; this tracecast reads version {SCHEDULE_VERSION}",
                f.version
            )));
        }
        let index: HashMap<&str, usize> = w.jobs.iter().enumerate().map(|(i, j)| (j.id.as_str(), i)).collect();
        let mut segments = vec![Vec::new(); w.jobs.len()];
        let mut rejected = vec![false; w.jobs.len()];
        let mut seen = vec![false; w.jobs.len()];
        for job in f.jobs {
            let &i = index
                .get(job.id.as_str())
                .ok_or_else(|| bad(format!("job `{}` is not in the job file", job.id)))?;
            if std::mem::replace(&mut seen[i], true) {
                return Err(bad(format!("job `{}` appears twice", job.id)));
            }
            rejected[i] = job.rejected;
            for s in job.segments {
                let ty = w.cluster.type_index(&s.gpu_type).ok_or_else(|| {
                    bad(format!(
                        "job `{}`: GPU type `{}` is not in the cluster",
                        job.id, s.gpu_type
                    ))
                })?;
                segments[i].push(Segment {
                    start: s.start_s,
                    end: s.end_s,
                    ty,
                    gpus: s.gpus,
                    nodes: s.nodes.iter().map(|n| (n.node, n.gpus)).collect(),
                    restart: s.restart_s,
                    rate: s.iters_per_s,
                    interpolated: s.interpolated,
                });
            }
        }
        if let Some(i) = seen.iter().position(|s| !s) {
            return Err(bad(format!(
                "job `{}` of the job file is missing from the schedule",
                w.jobs[i].id
            )));
        }
        Ok(Schedule {
            policy: f.policy,
            restart_s: f.restart_s,
            penalty: f.penalty,
            rules: f.rules,
            rounds: f.rounds,
            ef_charge: f.ef_charge,
            rejected,
            segments,
        })
    }
}

pub fn write_json(path: &Path, f: &ScheduleFile) -> Result<()> {
    let file = std::fs::File::create(path).map_err(|e| PlanError::io(path, e))?;
    let mut out = std::io::BufWriter::new(file);
    serde_json::to_writer(&mut out, f).map_err(|e| PlanError::file(path, e.to_string()))?;
    out.flush().map_err(|e| PlanError::io(path, e))
}

pub fn read_json(path: &Path) -> Result<ScheduleFile> {
    let text = std::fs::read_to_string(path).map_err(|e| PlanError::io(path, e))?;
    serde_json::from_str(&text).map_err(|e| PlanError::Line {
        path: path.into(),
        line: e.line() as u64,
        reason: format!("not a schedule: {e}"),
    })
}

pub fn write_csv(path: &Path, f: &ScheduleFile) -> Result<()> {
    use std::fmt::Write as _;
    let io = |e: csv::Error| PlanError::file(path, e.to_string());
    let mut wr = csv::Writer::from_path(path).map_err(io)?;
    wr.write_record(SCHEDULE_SEGMENTS.columns.iter().map(|c| c.name))
        .map_err(io)?;
    // Each field formatted into one reused buffer: a big plan has hundreds
    // of thousands of segments, and a String per field was most of the
    // time this took.
    let mut field = String::new();
    let mut put = |wr: &mut csv::Writer<std::fs::File>, value: &dyn std::fmt::Display| {
        field.clear();
        write!(field, "{value}").expect("formatting into a String does not fail");
        wr.write_field(&field)
    };
    for job in &f.jobs {
        for (k, s) in job.segments.iter().enumerate() {
            wr.write_field(&job.id).map_err(io)?;
            put(&mut wr, &k).map_err(io)?;
            put(&mut wr, &s.start_s).map_err(io)?;
            put(&mut wr, &s.end_s).map_err(io)?;
            wr.write_field(&s.gpu_type).map_err(io)?;
            put(&mut wr, &s.gpus).map_err(io)?;
            put(&mut wr, &NodeList(&s.nodes)).map_err(io)?;
            put(&mut wr, &s.restart_s).map_err(io)?;
            put(&mut wr, &s.iters_per_s).map_err(io)?;
            put(&mut wr, &s.interpolated).map_err(io)?;
            wr.write_record(None::<&[u8]>).map_err(io)?;
        }
    }
    wr.flush().map_err(|e| PlanError::io(path, e))
}

/// A segment's nodes as the CSV writes them: `node:gpus` joined by `;`.
struct NodeList<'a>(&'a [NodeShare]);

impl std::fmt::Display for NodeList<'_> {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, n) in self.0.iter().enumerate() {
            if i > 0 {
                out.write_str(";")?;
            }
            write!(out, "{}:{}", n.node, n.gpus)?;
        }
        Ok(())
    }
}
