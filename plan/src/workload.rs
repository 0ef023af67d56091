//! Pricing: jobs + cluster + throughput table -> the workload the engine runs,
//! each job with its work and a scaling curve per GPU type of the cluster.

use std::sync::Arc;

use crate::cluster::Cluster;
use crate::error::{PlanError, Result};
use crate::jobs::Job;
use crate::rules::{Counts, Rules};
use crate::throughput::{Curve, CurveCache, ThroughputTable};

/// What a job's work is counted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkUnit {
    Iterations,
    /// Jobs known only by run time: seconds of work at the requested count.
    Seconds,
}

#[derive(Clone, Debug)]
pub struct PJob {
    pub id: String,
    pub submit: f64,
    pub deadline: Option<f64>,
    pub priority: i64,
    /// Work to do, in `unit`s.
    pub total: f64,
    pub unit: WorkUnit,
    /// GPUs requested (capped at what the cluster can give the job).
    pub req: u32,
    /// GPUs the job file asks for, before any cap.
    pub asked: u32,
    pub elastic: bool,
    pub job_type: Option<String>,
    pub batch_size: Option<u32>,
    /// True scaling curve per cluster GPU type (`None`: cannot run there).
    pub truth: Vec<Option<Arc<Curve>>>,
    /// What the planner believes (the truth, or a prediction of it).
    pub belief: Vec<Option<Arc<Curve>>>,
}

impl PJob {
    /// The fastest type for `n` GPUs by the belief.
    pub fn best_type(&self, n: u32) -> u16 {
        let mut best = (0u16, -1.0);
        for (t, c) in self.belief.iter().enumerate() {
            if let Some(c) = c {
                let r = c.r(n);
                if r > best.1 {
                    best = (t as u16, r);
                }
            }
        }
        best.0
    }

    /// The smallest count the job may run at (1 unless only measured counts are allowed).
    pub fn first_count(&self) -> u32 {
        self.belief.iter().flatten().map(|c| c.first_count()).min().unwrap_or(1)
    }

    pub fn belief_rate(&self, ty: u16, n: u32) -> f64 {
        self.belief[ty as usize].as_ref().map_or(0.0, |c| c.r(n))
    }

    pub fn true_rate(&self, ty: u16, n: u32) -> f64 {
        self.truth[ty as usize].as_ref().map_or(0.0, |c| c.r(n))
    }
}

/// Throughput penalties for placements that span more nodes / switches than
/// the count needs, used when the table has no cross-node figure.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Penalty {
    /// Factor when a job spans more nodes than the fewest that could hold its GPUs.
    pub node: f64,
    /// Further factor when it spans more switches than the fewest that could hold those nodes.
    pub switch: f64,
}

impl Default for Penalty {
    fn default() -> Self {
        Penalty { node: 0.9, switch: 0.9 }
    }
}

#[derive(Clone, Debug)]
pub struct Workload {
    pub jobs: Vec<PJob>,
    pub cluster: Cluster,
    pub penalty: Penalty,
    pub rules: Rules,
}

impl Workload {
    /// Replace the planner's belief (prediction experiments); the truth stays.
    pub fn with_belief(&self, belief: impl Fn(usize, &PJob) -> Vec<Option<Arc<Curve>>>) -> Workload {
        let mut w = self.clone();
        for (i, j) in w.jobs.iter_mut().enumerate() {
            j.belief = belief(i, &self.jobs[i]);
        }
        w
    }
}

/// Price `jobs` on `cluster` from `table` under `rules` (which may cap each
/// job's count, allow only measured counts and switch placement penalties off).
pub fn price(
    jobs: &[Job],
    cluster: &Cluster,
    table: &ThroughputTable,
    penalty: Penalty,
    rules: &Rules,
) -> Result<Workload> {
    let mut cache = CurveCache::default();
    let penalty = if rules.placement_penalty {
        penalty
    } else {
        Penalty { node: 1.0, switch: 1.0 }
    };
    let mut rigid_cache: std::collections::HashMap<u32, Arc<Curve>> = Default::default();
    // Curves as the rules allow them, shared like the cache's (key: the cached curve and the cap).
    let mut restricted: std::collections::HashMap<(usize, u32), Option<Arc<Curve>>> = Default::default();
    let ntypes = cluster.gpu_types.len();
    let mut out = Vec::with_capacity(jobs.len());
    for job in jobs {
        let allowed: Vec<bool> = match &job.gpu_type {
            Some(t) => {
                let ti = cluster.type_index(t).ok_or_else(|| {
                    PlanError::Inconsistent(format!(
                        "job `{}` is pinned to GPU type `{t}`, which the cluster does not have (types: {})",
                        job.id,
                        cluster.gpu_types.join(", ")
                    ))
                })?;
                (0..ntypes).map(|i| i == ti as usize).collect()
            }
            None => vec![true; ntypes],
        };
        let rule_cap = rules.cap(job.job_type.as_deref(), job.batch_size);
        let planner_cap = rules.planner_cap(job.job_type.as_deref(), job.batch_size);
        let priced: Vec<Option<Arc<Curve>>> = (0..ntypes)
            .map(|t| {
                let jt = job.job_type.as_deref()?;
                let c = allowed[t]
                    .then(|| cache.get(table, jt, t as u16, &cluster.gpu_types[t], job.batch_size))
                    .flatten()?;
                restricted
                    .entry((Arc::as_ptr(&c) as usize, rule_cap))
                    .or_insert_with(|| restrict(&c, rule_cap, rules))
                    .clone()
            })
            .collect();
        let any_priced = priced.iter().any(Option::is_some);
        // Under measured-counts rules a job that names a model runs only on
        // measured figures: no falling back on its duration (ElasticFlow stops
        // on such a job too). Jobs known only by run time stay rigid.
        if !any_priced && job.job_type.is_some() && rules.counts == Counts::Measured {
            return Err(PlanError::Inconsistent(format!(
                "job `{}`: job type `{}` (batch size {}) has no figure in the throughput table for GPU type(s) {} at or below its cap of {} GPUs, which rules `{}` need (table prices: {})",
                job.id,
                job.job_type.as_deref().unwrap_or_default(),
                job.batch_size.map_or("-".into(), |b| b.to_string()),
                cluster.gpu_types.join(", "),
                if rule_cap == u32::MAX {
                    "any".to_string()
                } else {
                    rule_cap.to_string()
                },
                rules.name,
                table.job_types().join(", ")
            )));
        }
        let (truth, total, unit) = if any_priced {
            let total = match (job.iterations, job.duration) {
                (Some(it), _) if it > 0.0 => it,
                (_, Some(d)) => {
                    // Duration at the requested count on the first type that prices the job.
                    let c = priced.iter().flatten().next().unwrap();
                    d * c.r(job.gpus)
                }
                _ => unreachable!("readers require iterations or a duration"),
            };
            (priced, total, WorkUnit::Iterations)
        } else if let Some(d) = job.duration {
            let c = rigid_cache
                .entry(job.gpus)
                .or_insert_with(|| Arc::new(Curve::rigid(job.gpus)))
                .clone();
            (
                (0..ntypes).map(|t| allowed[t].then(|| c.clone())).collect(),
                d,
                WorkUnit::Seconds,
            )
        } else {
            return Err(PlanError::Inconsistent(format!(
                "job `{}`: job type `{}` (batch size {}) is not in the throughput table for GPU type(s) {} and the job has no duration to fall back on (table prices: {})",
                job.id,
                job.job_type.as_deref().unwrap_or("-"),
                job.batch_size.map_or("-".into(), |b| b.to_string()),
                cluster.gpu_types.join(", "),
                table.job_types().join(", ")
            )));
        };
        let elastic = unit == WorkUnit::Iterations && job.elastic.unwrap_or(true);
        let cap = (0..ntypes)
            .filter(|&t| truth[t].is_some())
            .map(|t| cluster.capacity[t])
            .max()
            .unwrap_or(0);
        if !elastic && job.gpus > cap {
            return Err(PlanError::Inconsistent(format!(
                "job `{}` is rigid and needs {} GPUs, but the most any GPU type it can use has is {cap} ({})",
                job.id,
                job.gpus,
                cluster.describe()
            )));
        }
        // The request, as a count the rules allow.
        let req = truth
            .iter()
            .flatten()
            .next()
            .map_or(job.gpus, |c| c.floor_count(job.gpus.min(cap).min(rule_cap)));
        out.push(PJob {
            id: job.id.clone(),
            submit: job.submit,
            deadline: job.deadline,
            priority: job.priority,
            total,
            unit,
            req,
            asked: job.gpus,
            elastic,
            job_type: job.job_type.clone(),
            batch_size: job.batch_size,
            // The planner decides within its own caps (tighter under ElasticFlow's rules).
            belief: truth
                .iter()
                .map(|c| {
                    let c = c.as_ref()?;
                    if planner_cap >= rule_cap {
                        return Some(c.clone());
                    }
                    restricted
                        .entry((Arc::as_ptr(c) as usize, planner_cap))
                        .or_insert_with(|| restrict(c, planner_cap, rules))
                        .clone()
                })
                .collect(),
            truth,
        });
    }
    Ok(Workload {
        jobs: out,
        cluster: cluster.clone(),
        penalty,
        rules: rules.clone(),
    })
}

/// `c` as the rules allow it: counts above `cap` dropped, only measured counts when asked.
pub fn restrict(c: &Arc<Curve>, cap: u32, rules: &Rules) -> Option<Arc<Curve>> {
    let discrete = rules.counts == Counts::Measured;
    if cap == u32::MAX && !discrete {
        return Some(c.clone());
    }
    c.restricted(cap, discrete).map(Arc::new)
}
