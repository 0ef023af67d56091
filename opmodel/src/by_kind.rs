//! Where an end-to-end prediction's time goes: predicted against measured
//! time per operator kind and pass, for a graph whose nodes carry the
//! latencies NeuSight measured on the label's own GPU. An ML team reads it
//! to see which kinds of work a GPU's error comes from.

use std::collections::BTreeMap;

use crate::graph::ModelGraph;
use crate::work::{OpKind, Pass};

/// Kinds and passes under this share of the measured time are left out of
/// the reports' tables (a GPU and mode's in `report.md`, an ETS file's in
/// `ets_by_kind::report`); the CSV files keep them.
pub(crate) const LEAST_KIND_SHARE: f64 = 0.02;

/// One kind and pass of a graph: its work-launching nodes (counted once per
/// run of a repeated layer), their predicted and their measured time.
#[derive(Clone, Debug, PartialEq)]
pub struct KindTimes {
    pub kind: OpKind,
    pub pass: Pass,
    pub nodes: f64,
    pub predicted_ms: f64,
    pub measured_ms: f64,
}

/// Predicted and measured time per (kind, pass) of `graph`, `predicted_us`
/// being the op model's times of `graph.works(training)` in that order.
/// `None` where a node that launches work has no measured latency for a
/// pass it runs (a graph built from a configuration, or a node NeuSight did
/// not time).
pub fn by_kind(graph: &ModelGraph, training: bool, predicted_us: &[f64]) -> Option<Vec<KindTimes>> {
    let mut sums: BTreeMap<(u8, u8), KindTimes> = BTreeMap::new();
    let mut predicted = predicted_us.iter();
    for (node, times) in graph.nodes.iter().filter(|(n, _)| n.work.kind != OpKind::NoWork) {
        let mut add = |pass: Pass, measured_ms: Option<f64>| -> Option<()> {
            let predicted_us = *predicted.next()?;
            let entry = sums.entry((node.work.kind as u8, pass as u8)).or_insert(KindTimes {
                kind: node.work.kind,
                pass,
                nodes: 0.0,
                predicted_ms: 0.0,
                measured_ms: 0.0,
            });
            entry.nodes += times;
            entry.predicted_ms += predicted_us / 1e3 * times;
            entry.measured_ms += measured_ms? * times;
            Some(())
        };
        add(Pass::Forward, node.fw_ms)?;
        if training && node.has_backward {
            add(Pass::Backward, node.bw_ms)?;
        }
    }
    // Every prediction was matched to a node: the works came from this graph.
    predicted.next().is_none().then(|| sums.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Node;
    use crate::work::OpWork;

    fn node(kind: OpKind, fw_ms: Option<f64>, bw_ms: Option<f64>) -> Node {
        let mut n = Node::call(
            "call_function",
            "add",
            vec![vec![4.0, 4.0], vec![4.0, 4.0]],
            vec![4.0, 4.0],
            true,
        );
        n.work = OpWork { kind, ..n.work };
        n.fw_ms = fw_ms;
        n.bw_ms = bw_ms;
        n.has_backward = bw_ms.is_some();
        n
    }

    #[test]
    fn sums_each_kind_and_pass_over_repeated_layers() {
        let graph = ModelGraph {
            nodes: vec![
                (node(OpKind::Gemm, Some(2.0), Some(4.0)), 3.0),
                (node(OpKind::NoWork, Some(0.01), None), 3.0),
                (node(OpKind::Softmax, Some(1.0), None), 1.0),
                (node(OpKind::Gemm, Some(1.0), Some(1.0)), 1.0),
            ],
        };
        let works = graph.works(true);
        assert_eq!(works.len(), 5, "two GEMMs with backward, a softmax without");
        let predicted_us = [1000.0, 5000.0, 500.0, 2000.0, 2000.0];
        let kinds = by_kind(&graph, true, &predicted_us).unwrap();
        let find = |kind, pass| kinds.iter().find(|k| k.kind == kind && k.pass == pass).unwrap().clone();
        let fw = find(OpKind::Gemm, Pass::Forward);
        assert_eq!(
            (fw.nodes, fw.predicted_ms, fw.measured_ms),
            (4.0, 1.0 * 3.0 + 2.0, 2.0 * 3.0 + 1.0)
        );
        let bw = find(OpKind::Gemm, Pass::Backward);
        assert_eq!(
            (bw.nodes, bw.predicted_ms, bw.measured_ms),
            (4.0, 5.0 * 3.0 + 2.0, 4.0 * 3.0 + 1.0)
        );
        let softmax = find(OpKind::Softmax, Pass::Forward);
        assert_eq!((softmax.predicted_ms, softmax.measured_ms), (0.5, 1.0));
        assert_eq!(kinds.len(), 3, "work-free nodes are left out");
        // Inference reads forward latencies only.
        assert_eq!(by_kind(&graph, false, &[1000.0, 2000.0, 2000.0]).unwrap().len(), 2);
    }

    #[test]
    fn a_graph_without_measured_latencies_or_with_other_works_has_none() {
        let untimed = ModelGraph {
            nodes: vec![(node(OpKind::Gemm, None, None), 1.0)],
        };
        assert_eq!(by_kind(&untimed, false, &[1.0]), None);
        let timed = ModelGraph {
            nodes: vec![(node(OpKind::Gemm, Some(1.0), None), 1.0)],
        };
        assert_eq!(by_kind(&timed, false, &[1.0, 2.0]), None, "more predictions than works");
        assert_eq!(by_kind(&timed, false, &[]), None, "fewer predictions than works");
    }
}
