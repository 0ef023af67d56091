//! What the planner reads of every running job at every event and that
//! stays fixed for a workload, kept together per job. Read from the jobs'
//! own records (a 160-byte record, its curves behind two pointers, for jobs
//! scattered across the workload), these loads were most of the planning
//! time on the 100k-job problem (bench/plan/RESULTS.md).

use std::sync::Arc;

use crate::policies::runs_on_its_only_type;
use crate::throughput::Curve;
use crate::workload::PJob;

#[derive(Clone, Debug)]
pub(super) struct JobConsts {
    /// Believed iterations/s at the requested count on its best type.
    pub req_rate: f64,
    pub priority: i64,
    /// GPUs requested.
    pub req: u32,
    /// The fewest GPUs it starts with.
    pub base: u32,
    pub elastic: bool,
    /// With one GPU type: whether its base count can run there
    /// (`policies::pick_type`'s answer, given room). `None` with several.
    pub base_on_only_type: Option<bool>,
    /// With one GPU type: the believed curve there (`None` inside: it
    /// cannot run there). `None` with several.
    only_type_curve: Option<Option<Arc<Curve>>>,
}

impl JobConsts {
    /// `job`'s constants; `scale` says whether the planner changes GPU counts.
    pub(super) fn of(job: &PJob, scale: bool) -> JobConsts {
        let base = if job.elastic && scale {
            job.first_count()
        } else {
            job.req
        };
        JobConsts {
            req_rate: job.belief_rate(job.best_type(job.req), job.req),
            priority: job.priority,
            req: job.req,
            base,
            elastic: job.elastic,
            base_on_only_type: runs_on_its_only_type(job, base),
            only_type_curve: match job.belief.as_slice() {
                [c] => Some(c.clone()),
                _ => None,
            },
        }
    }

    /// `job`'s believed curve on GPU type `t` (these constants' job).
    pub(super) fn belief<'a>(&'a self, job: &'a PJob, t: u16) -> Option<&'a Curve> {
        match &self.only_type_curve {
            Some(c) => c.as_deref(),
            None => job.belief[t as usize].as_deref(),
        }
    }
}
