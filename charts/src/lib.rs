//! The charts tracecast writes beside its reports, as SVG: predicted
//! against measured times (log-log, one colour per series, the y = x line)
//! and the largest values of a ranking as bars. `train` draws its held-out
//! steps and its inputs' gains; `ops bench` its labels and operators.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

const SIZE: (u32, u32) = (760, 560);

#[derive(Debug, thiserror::Error)]
#[error("{}: cannot draw the chart: {reason}", path.display())]
pub struct ChartError {
    pub path: PathBuf,
    pub reason: String,
}

fn chart_err(path: &Path) -> impl Fn(String) -> ChartError + '_ {
    move |reason| ChartError {
        path: path.to_path_buf(),
        reason,
    }
}

/// One group of points, drawn in one colour and named in the legend.
pub struct Series<'a> {
    pub name: &'a str,
    /// (measured, predicted).
    pub points: &'a [(f64, f64)],
}

/// A log-log chart of predicted against measured values.
pub struct Scatter<'a> {
    pub title: &'a str,
    /// What the axes measure, with the unit: "step time (ms)".
    pub quantity: &'a str,
    pub series: &'a [Series<'a>],
}

/// Draws `chart` into `path`; points that are not both positive are left
/// out (a log scale has no place for them). A legend names the series
/// where there are several.
pub fn scatter(path: &Path, chart: &Scatter<'_>) -> Result<(), ChartError> {
    let err = chart_err(path);
    let positive = |&&(m, p): &&(f64, f64)| m > 0.0 && p > 0.0 && m.is_finite() && p.is_finite();
    let (lo, hi) = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().filter(positive))
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), &(m, p)| {
            (lo.min(m).min(p), hi.max(m).max(p))
        });
    let (lo, hi) = if hi > 0.0 { (lo / 1.5, hi * 1.5) } else { (0.1, 10.0) };
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
    let mut plot = ChartBuilder::on(&root)
        .caption(chart.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d((lo..hi).log_scale(), (lo..hi).log_scale())
        .map_err(|e| err(e.to_string()))?;
    plot.configure_mesh()
        .x_desc(format!("measured {}", chart.quantity))
        .y_desc(format!("predicted {}", chart.quantity))
        .draw()
        .map_err(|e| err(e.to_string()))?;
    plot.draw_series(LineSeries::new([(lo, lo), (hi, hi)], BLACK.mix(0.5)))
        .map_err(|e| err(e.to_string()))?;
    let several = chart.series.len() > 1;
    for (i, series) in chart.series.iter().enumerate() {
        let colour = if several {
            Palette99::pick(i).to_rgba()
        } else {
            BLUE.to_rgba()
        };
        let style = colour.mix(0.6).filled();
        let drawn = plot
            .draw_series(
                series
                    .points
                    .iter()
                    .filter(positive)
                    .map(|&(m, p)| Circle::new((m, p), 3, style)),
            )
            .map_err(|e| err(e.to_string()))?;
        if several {
            drawn
                .label(series.name)
                .legend(move |(x, y)| Circle::new((x, y), 4, style));
        }
    }
    if several {
        plot.configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(|e| err(e.to_string()))?;
    }
    root.present().map_err(|e| err(e.to_string()))
}

/// Horizontal bars of the `top` largest `values`, largest first, each
/// labelled with its name, as shares of the total (`x_desc` says of what).
pub fn ranked_shares(
    path: &Path,
    title: &str,
    x_desc: &str,
    names: &[String],
    values: &[f64],
    top: usize,
) -> Result<(), ChartError> {
    let err = chart_err(path);
    let mut ranked: Vec<(&str, f64)> = names.iter().map(String::as_str).zip(values.iter().copied()).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    ranked.truncate(top);
    let total: f64 = values.iter().sum::<f64>().max(f64::MIN_POSITIVE);
    let shares: Vec<(&str, f64)> = ranked.iter().map(|&(n, v)| (n, 100.0 * v / total)).collect();
    let max = shares.first().map_or(1.0, |s| s.1).max(1e-9);
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
    let n = shares.len().max(1);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(190)
        .build_cartesian_2d(0.0..max * 1.1, (0..n).into_segmented())
        .map_err(|e| err(e.to_string()))?;
    // Rank 0 (the largest) at the top: segment n - 1.
    let label = |segment: &SegmentValue<usize>| match segment {
        SegmentValue::CenterOf(y) if *y < n => shares.get(n - 1 - y).map_or(String::new(), |s| s.0.to_string()),
        _ => String::new(),
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&label)
        .x_desc(x_desc)
        .draw()
        .map_err(|e| err(e.to_string()))?;
    chart
        .draw_series(shares.iter().enumerate().map(|(i, &(_, v))| {
            let y = n - 1 - i;
            Rectangle::new(
                [(0.0, SegmentValue::Exact(y)), (v, SegmentValue::Exact(y + 1))],
                BLUE.mix(0.6).filled(),
            )
        }))
        .map_err(|e| err(e.to_string()))?;
    root.present().map_err(|e| err(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scatter_draws_its_positive_points_and_names_several_series() {
        let dir = tempfile::tempdir().unwrap();
        let one = dir.path().join("one.svg");
        let points = [(1.0, 1.2), (10.0, 9.0), (0.0, 1.0), (2.0, f64::NAN)];
        scatter(
            &one,
            &Scatter {
                title: "pred vs measured",
                quantity: "step time (ms)",
                series: &[Series {
                    name: "steps",
                    points: &points,
                }],
            },
        )
        .unwrap();
        let text = std::fs::read_to_string(&one).unwrap();
        assert!(text.starts_with("<svg") && text.contains("measured step time (ms)"));
        assert_eq!(text.matches("<circle").count(), 2, "only the positive points");
        assert!(!text.contains("steps"), "one series needs no legend");

        let two = dir.path().join("two.svg");
        scatter(
            &two,
            &Scatter {
                title: "labels",
                quantity: "latency (ms)",
                series: &[
                    Series {
                        name: "Tesla_T4",
                        points: &[(1.0, 1.1)],
                    },
                    Series {
                        name: "NVIDIA_H100",
                        points: &[(2.0, 2.5), (3.0, 2.0)],
                    },
                ],
            },
        )
        .unwrap();
        let text = std::fs::read_to_string(&two).unwrap();
        assert!(
            text.contains("Tesla_T4") && text.contains("NVIDIA_H100"),
            "a legend: {text}"
        );
        // Three points and one legend mark per series.
        assert_eq!(text.matches("<circle").count(), 5);
    }

    #[test]
    fn ranked_shares_label_each_bar_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("i.svg");
        ranked_shares(
            &path,
            "importance",
            "share of total gain (%)",
            &["a".into(), "b_input".into()],
            &[1.0, 3.0],
            10,
        )
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text.matches(">\nb_input\n<").count(),
            1,
            "each input labelled once: {text}"
        );
        assert_eq!(text.matches(">\na\n<").count(), 1, "each input labelled once");
    }
}
