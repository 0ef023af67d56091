//! What the planner reads of every running job at every event and that
//! stays fixed for a workload, kept together per job. Read from the jobs'
//! own records (a 160-byte record, its curves behind two pointers, for jobs
//! scattered across the workload), these loads were a large share of the
//! planning time on the 100k-job problem (bench/plan/RESULTS.md).

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
            Some(c) => {
                debug_assert_eq!(t, 0, "a job with one GPU type runs on type 0");
                c.as_deref()
            }
            None => job.belief[t as usize].as_deref(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policies::pick_type;
    use crate::workload::WorkUnit;

    fn job(truth: Vec<Option<Arc<Curve>>>, req: u32, elastic: bool) -> PJob {
        PJob {
            id: "j".into(),
            submit: 0.0,
            deadline: None,
            priority: 3,
            total: 100.0,
            unit: WorkUnit::Iterations,
            req,
            asked: req,
            elastic,
            job_type: None,
            batch_size: None,
            belief: truth.clone(),
            truth,
        }
    }

    #[test]
    fn constants_answer_as_the_job_record_does() {
        let curve = |pts: Vec<(u32, f64)>| Some(Arc::new(Curve::new(pts, Vec::new(), false).unwrap()));
        let measured_only = |pts: Vec<(u32, f64)>| {
            let c = Curve::new(pts, Vec::new(), false).unwrap();
            Some(Arc::new(c.restricted(u32::MAX, true).unwrap()))
        };
        let jobs = [
            job(vec![curve(vec![(1, 1.0), (4, 3.5)])], 4, true),
            job(vec![curve(vec![(1, 1.0), (4, 3.5)])], 4, false),
            // Only measured counts allowed, and the base (2) is not one of them.
            job(vec![measured_only(vec![(1, 1.0), (4, 3.5)])], 2, false),
            job(vec![None], 2, true),
            job(vec![curve(vec![(1, 1.0)]), curve(vec![(1, 2.0), (2, 3.0)])], 2, true),
        ];
        for (k, j) in jobs.iter().enumerate() {
            for scale in [true, false] {
                let c = JobConsts::of(j, scale);
                let base = if j.elastic && scale { j.first_count() } else { j.req };
                assert_eq!(c.base, base, "job {k}");
                assert_eq!((c.req, c.priority, c.elastic), (j.req, j.priority, j.elastic));
                for free in [0, base, 64] {
                    let room = vec![free; j.belief.len()];
                    if let Some(runs) = c.base_on_only_type {
                        let picked = pick_type(j, None, base, &room, 0.3);
                        assert_eq!((runs && free >= base).then_some(0), picked, "job {k}, {free} free");
                    }
                }
                for t in 0..j.belief.len() {
                    let want = j.belief[t].as_deref().map(|c| c as *const Curve);
                    assert_eq!(
                        c.belief(j, t as u16).map(|c| c as *const Curve),
                        want,
                        "job {k}, type {t}"
                    );
                }
            }
        }
        assert_eq!(JobConsts::of(&jobs[4], true).base_on_only_type, None);
        assert_eq!(JobConsts::of(&jobs[2], false).base_on_only_type, Some(false));
    }
}
