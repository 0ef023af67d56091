//! The report's charts, as SVG: predicted against measured step time, and
//! the inputs the model leans on most.

use std::path::Path;

use plotters::prelude::*;

use crate::TrainError;

const SIZE: (u32, u32) = (760, 560);

fn chart_err(path: &Path) -> impl Fn(String) -> TrainError + '_ {
    move |reason| TrainError::Chart {
        path: path.to_path_buf(),
        reason,
    }
}

/// Log-log scatter of (measured ms, predicted ms) with the y = x line.
pub fn scatter(path: &Path, title: &str, points: &[(f64, f64)]) -> Result<(), TrainError> {
    let err = chart_err(path);
    let finite: Vec<(f64, f64)> = points.iter().copied().filter(|(m, p)| *m > 0.0 && *p > 0.0).collect();
    let (lo, hi) = finite.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &(m, p)| {
        (lo.min(m).min(p), hi.max(m).max(p))
    });
    let (lo, hi) = if finite.is_empty() {
        (0.1, 10.0)
    } else {
        (lo / 1.5, hi * 1.5)
    };
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d((lo..hi).log_scale(), (lo..hi).log_scale())
        .map_err(|e| err(e.to_string()))?;
    chart
        .configure_mesh()
        .x_desc("measured step time (ms)")
        .y_desc("predicted step time (ms)")
        .draw()
        .map_err(|e| err(e.to_string()))?;
    chart
        .draw_series(LineSeries::new([(lo, lo), (hi, hi)], BLACK.mix(0.5)))
        .map_err(|e| err(e.to_string()))?;
    chart
        .draw_series(
            finite
                .iter()
                .map(|&(m, p)| Circle::new((m, p), 3, BLUE.mix(0.6).filled())),
        )
        .map_err(|e| err(e.to_string()))?;
    root.present().map_err(|e| err(e.to_string()))
}

/// Horizontal bars of the `top` largest importances, largest first.
pub fn importance(path: &Path, title: &str, names: &[String], gains: &[f64], top: usize) -> Result<(), TrainError> {
    let err = chart_err(path);
    let mut ranked: Vec<(&str, f64)> = names.iter().map(String::as_str).zip(gains.iter().copied()).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    ranked.truncate(top);
    let total: f64 = gains.iter().sum::<f64>().max(f64::MIN_POSITIVE);
    let shares: Vec<(&str, f64)> = ranked.iter().map(|&(n, g)| (n, 100.0 * g / total)).collect();
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
        .x_desc("share of total gain (%)")
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
    fn charts_are_svg_with_their_labels() {
        let dir = tempfile::tempdir().unwrap();
        let s = dir.path().join("s.svg");
        scatter(&s, "pred vs measured", &[(1.0, 1.2), (10.0, 9.0), (0.0, 1.0)]).unwrap();
        let text = std::fs::read_to_string(&s).unwrap();
        assert!(text.starts_with("<svg") && text.contains("measured step time"));
        assert_eq!(text.matches("<circle").count(), 2, "the non-positive point is left out");
        let i = dir.path().join("i.svg");
        importance(&i, "importance", &["a".into(), "b_input".into()], &[1.0, 3.0], 10).unwrap();
        let text = std::fs::read_to_string(&i).unwrap();
        assert_eq!(
            text.matches(">\nb_input\n<").count(),
            1,
            "each input labelled once: {text}"
        );
        assert_eq!(text.matches(">\na\n<").count(), 1, "each input labelled once");
    }
}
