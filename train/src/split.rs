//! Evaluation folds over whole traces: a trace's windows are all in a fold's
//! test set or all in its training set, never split; and the ranks of one
//! run (one `job_id`) stay together, as near-copies of each other.

use std::collections::BTreeMap;

use crate::TrainError;
use crate::config::{SplitConfig, SplitKind};
use crate::dataset::TraceInfo;

/// One fold: the traces it tests, trained on all the others.
#[derive(Clone, Debug, PartialEq)]
pub struct Fold {
    /// The held-out group (`model=resnet`, `gpu=...`, `fold 2/5`).
    pub name: String,
    /// The group's key under a by-* split (what `holdout` names); None for random folds.
    pub group: Option<String>,
    pub test: Vec<usize>,
}

/// The run a trace belongs to: its job, else the trace alone.
fn run_of(trace: &TraceInfo) -> String {
    trace.job_id.clone().unwrap_or_else(|| trace.trace_id.clone())
}

/// The group a trace belongs to under `kind`; None when it has none (it then only trains).
pub fn group_of(kind: SplitKind, trace: &TraceInfo) -> Option<String> {
    match kind {
        SplitKind::Random => Some(run_of(trace)),
        // A run without a model name is its own model: it shares nothing with the others we know of.
        SplitKind::ByModel => Some(
            trace
                .label
                .model
                .clone()
                .unwrap_or_else(|| format!("unlabelled {}", run_of(trace))),
        ),
        SplitKind::ByBatch => trace.label.batch_size.map(|b| b.to_string()),
        SplitKind::ByGpu => Some(
            trace
                .priced_gpu
                .clone()
                .or_else(|| trace.recorded_gpu.clone())
                .unwrap_or_else(|| "unknown GPU".into()),
        ),
    }
}

pub fn folds(config: &SplitConfig, traces: &[TraceInfo]) -> Result<Vec<Fold>, TrainError> {
    if traces.len() < 2 {
        return Err(TrainError::Split(format!(
            "{} trace(s) with windows: evaluation needs at least 2 (one to train on, one to test)",
            traces.len()
        )));
    }
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, t) in traces.iter().enumerate() {
        if let Some(g) = group_of(config.kind, t) {
            groups.entry(g).or_default().push(i);
        }
    }
    let mut folds = match config.kind {
        SplitKind::Random => random_folds(&groups.into_values().collect::<Vec<_>>(), config.folds, config.seed),
        _ => groups
            .iter()
            .map(|(name, test)| Fold {
                name: format!("{}={name}", config.kind.name().trim_start_matches("by-")),
                group: Some(name.clone()),
                test: test.clone(),
            })
            .collect(),
    };
    if config.kind == SplitKind::ByBatch && folds.is_empty() {
        return Err(TrainError::Split(
            "by-batch needs batch sizes, and no trace has one: give them in a labels file (--labels; trace_id,model,batch_size)"
                .into(),
        ));
    }
    if !config.holdout.is_empty() {
        let known: Vec<&String> = folds.iter().filter_map(|f| f.group.as_ref()).collect();
        for h in &config.holdout {
            if config.kind == SplitKind::Random || !known.contains(&h) {
                return Err(TrainError::Split(match config.kind {
                    SplitKind::Random => "holdout names groups of by-model, by-batch or by-gpu, not of random".into(),
                    _ => format!(
                        "holdout `{h}` is not a {} group; the groups are {known:?}",
                        config.kind.name()
                    ),
                }));
            }
        }
        folds.retain(|f| f.group.as_ref().is_some_and(|g| config.holdout.contains(g)));
    }
    // A fold that would leave nothing to train on teaches nothing.
    folds.retain(|f| f.test.len() < traces.len());
    if folds.is_empty() {
        return Err(TrainError::Split(format!(
            "{}: every trace falls in one group, so no fold leaves training data",
            config.kind.name()
        )));
    }
    Ok(folds)
}

/// Runs (groups of traces) dealt round-robin into `k` folds after a seeded shuffle.
fn random_folds(runs: &[Vec<usize>], k: usize, seed: u64) -> Vec<Fold> {
    let n = runs.len();
    let k = k.min(n).max(2);
    let mut order: Vec<usize> = (0..n).collect();
    let mut state = seed ^ 0x9E37_79B9_7F4A_7C15;
    for i in (1..n).rev() {
        // splitmix64: a fixed, dependency-free shuffle, the same on every platform.
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        order.swap(i, (z % (i as u64 + 1)) as usize);
    }
    (0..k)
        .map(|f| {
            let mut test: Vec<usize> = order
                .iter()
                .skip(f)
                .step_by(k)
                .flat_map(|&r| runs[r].iter().copied())
                .collect();
            test.sort_unstable();
            Fold {
                name: format!("fold {}/{k}", f + 1),
                group: None,
                test,
            }
        })
        .filter(|f| !f.test.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::TraceLabel;

    fn trace(id: &str, model: Option<&str>, batch: Option<u32>, gpu: &str) -> TraceInfo {
        TraceInfo::for_tests(
            id,
            gpu,
            TraceLabel {
                model: model.map(str::to_string),
                batch_size: batch,
            },
        )
    }

    #[test]
    fn random_folds_cover_every_trace_once() {
        let traces: Vec<_> = (0..7).map(|i| trace(&format!("t{i}"), None, None, "A100")).collect();
        let config = SplitConfig::default();
        let folds = folds(&config, &traces).unwrap();
        assert_eq!(folds.len(), 5);
        let mut all: Vec<usize> = folds.iter().flat_map(|f| f.test.clone()).collect();
        all.sort();
        assert_eq!(all, (0..7).collect::<Vec<_>>());
        assert_eq!(
            folds,
            super::folds(&config, &traces).unwrap(),
            "seeded: the same folds every time"
        );
    }

    #[test]
    fn group_splits_hold_out_whole_groups() {
        let traces = vec![
            trace("a", Some("resnet"), Some(32), "A100"),
            trace("b", Some("resnet"), Some(64), "V100"),
            trace("c", Some("bert"), Some(32), "A100"),
            trace("d", None, None, "V100"),
        ];
        let by_model = SplitConfig {
            kind: SplitKind::ByModel,
            ..SplitConfig::default()
        };
        let f = folds(&by_model, &traces).unwrap();
        let resnet = f.iter().find(|f| f.name == "model=resnet").unwrap();
        assert_eq!(resnet.test, vec![0, 1]);
        assert_eq!(f.len(), 3, "bert, resnet and the unlabelled trace on its own");
        let by_batch = SplitConfig {
            kind: SplitKind::ByBatch,
            holdout: vec!["64".into()],
            ..SplitConfig::default()
        };
        assert_eq!(
            folds(&by_batch, &traces).unwrap(),
            vec![Fold {
                name: "batch=64".into(),
                group: Some("64".into()),
                test: vec![1]
            }]
        );
        let by_gpu = SplitConfig {
            kind: SplitKind::ByGpu,
            holdout: vec!["H100".into()],
            ..SplitConfig::default()
        };
        assert!(
            folds(&by_gpu, &traces)
                .unwrap_err()
                .to_string()
                .contains("not a by-gpu group")
        );
    }

    #[test]
    fn ranks_of_one_run_stay_together() {
        let mut traces: Vec<_> = (0..6).map(|i| trace(&format!("t{i}"), None, None, "A100")).collect();
        for (i, t) in traces.iter_mut().enumerate() {
            t.job_id = Some(format!("job{}", i / 2)); // three 2-rank runs
        }
        for f in folds(&SplitConfig::default(), &traces).unwrap() {
            for &t in &f.test {
                assert!(
                    f.test.contains(&(t ^ 1)),
                    "rank {t} tested without its sibling in {f:?}"
                );
            }
        }
    }

    #[test]
    fn by_batch_without_batch_sizes_says_how_to_get_them() {
        let traces = vec![trace("a", None, None, "A100"), trace("b", None, None, "A100")];
        let config = SplitConfig {
            kind: SplitKind::ByBatch,
            ..SplitConfig::default()
        };
        assert!(folds(&config, &traces).unwrap_err().to_string().contains("labels file"));
    }
}
