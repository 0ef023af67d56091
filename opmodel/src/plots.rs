//! Predicted against measured, as SVG charts beside `ops bench`'s CSVs:
//! one chart per set whose measurements the evaluation directory kept, so
//! that a GPU or an operator kind off the diagonal shows at a glance.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tracecast_charts::{Scatter, Series, scatter};

use crate::OpModelError;
use crate::scored::Scored;

/// The most points a series draws (each is a few hundred bytes of SVG).
const MOST_POINTS_PER_SERIES: usize = 2000;

/// What one chart draws: a set of `Scored` rows, coloured by GPU or by group.
struct Chart {
    set: &'static str,
    file: &'static str,
    title: &'static str,
    quantity: &'static str,
    by_gpu: bool,
}

const CHARTS: [Chart; 3] = [
    Chart {
        set: "perop",
        file: "neusight_perop.svg",
        title: "NeuSight per-op test rows, by op kind",
        quantity: "latency (ms)",
        by_gpu: false,
    },
    Chart {
        set: "e2e",
        file: "neusight_e2e.svg",
        title: "NeuSight end-to-end labels, by GPU",
        quantity: "latency (ms)",
        by_gpu: true,
    },
    Chart {
        set: "ets",
        file: "ets.svg",
        title: "ETS labels (forward + backward), by GPU folder",
        quantity: "time (ms)",
        by_gpu: true,
    },
];

/// Writes into `out` a chart for every set of `scored` with at least one
/// measurement, `setting` (how the predictions were made, e.g. "each GPU
/// held out of training") after each title; returns the files written.
pub(crate) fn write(out: &Path, scored: &[Scored], setting: &str) -> Result<Vec<PathBuf>, OpModelError> {
    let mut files = Vec::new();
    for chart in &CHARTS {
        let mut groups: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
        for s in scored.iter().filter(|s| s.set == chart.set) {
            if let Some(measured) = s.measured_ms {
                let key = if chart.by_gpu { &s.gpu } else { &s.group };
                groups.entry(key).or_default().push((measured, s.predicted_ms));
            }
        }
        if groups.is_empty() {
            continue;
        }
        // A series of many points keeps every k-th, so that the SVG stays
        // light enough for a browser; the legend says so.
        let thinned: Vec<(String, Vec<(f64, f64)>)> = groups
            .into_iter()
            .map(|(name, points)| {
                let every = points.len().div_ceil(MOST_POINTS_PER_SERIES);
                if every <= 1 {
                    return (name.to_string(), points);
                }
                let kept: Vec<(f64, f64)> = points.iter().copied().step_by(every).collect();
                (format!("{name} (1 in {every} of {})", points.len()), kept)
            })
            .collect();
        let series: Vec<Series<'_>> = thinned.iter().map(|(name, points)| Series { name, points }).collect();
        let path = out.join(chart.file);
        let title = if setting.is_empty() {
            chart.title.to_string()
        } else {
            format!("{} ({setting})", chart.title)
        };
        scatter(
            &path,
            &Scatter {
                title: &title,
                quantity: chart.quantity,
                series: &series,
            },
        )?;
        files.push(path);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(set: &'static str, gpu: &str, group: &str, measured_ms: Option<f64>) -> Scored {
        Scored {
            set,
            gpu: gpu.into(),
            group: group.into(),
            option: String::new(),
            predicted_ms: 1.0,
            measured_ms,
            what: String::new(),
        }
    }

    #[test]
    fn a_chart_per_set_with_measurements_coloured_as_the_set_says() {
        let dir = tempfile::tempdir().unwrap();
        let scored = [
            row("perop", "Tesla_T4", "bmm", Some(1.1)),
            row("perop", "Tesla_P4", "softmax", Some(0.9)),
            row("e2e", "Tesla_T4", "train bert_large", Some(2.0)),
            row("e2e", "Tesla_T4", "inf bert_large", Some(3.0)),
            row("ets", "T4CPUALL", "alexnet", None),
        ];
        let files = write(dir.path(), &scored, "each GPU held out").unwrap();
        let names: Vec<_> = files.iter().map(|f| f.file_name().unwrap().to_str().unwrap()).collect();
        assert_eq!(
            names,
            ["neusight_perop.svg", "neusight_e2e.svg"],
            "no ETS chart: nothing measured"
        );
        let perop = std::fs::read_to_string(&files[0]).unwrap();
        assert!(perop.contains("bmm") && perop.contains("softmax"), "series by op kind");
        assert!(
            perop.contains("by op kind (each GPU held out)"),
            "the setting in the title"
        );
        let e2e = std::fs::read_to_string(&files[1]).unwrap();
        assert_eq!(e2e.matches("<circle").count(), 2, "one GPU: two points, no legend");
    }

    #[test]
    fn a_large_series_keeps_every_kth_point_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let n = 2 * MOST_POINTS_PER_SERIES + 1;
        let mut scored: Vec<Scored> = (0..n).map(|_| row("perop", "Tesla_T4", "bmm", Some(1.0))).collect();
        scored.push(row("perop", "Tesla_T4", "softmax", Some(1.0)));
        let files = write(dir.path(), &scored, "").unwrap();
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(
            svg.contains(&format!("bmm (1 in 3 of {n})")),
            "the legend says how many"
        );
        // Every third bmm row, the softmax point, and one legend mark each.
        assert_eq!(svg.matches("<circle").count(), n.div_ceil(3) + 1 + 2);
    }
}
