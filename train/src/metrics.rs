//! Error measures over (predicted, measured) pairs, in the report's units.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Errors {
    pub count: usize,
    /// Mean relative error: mean |pred - true| / true.
    pub mre: f64,
    pub mae_ms: f64,
    pub rmse_ms: f64,
}

/// Errors over pairs of (predicted ns, measured ns); pairs whose measured
/// value is not positive are skipped. None when no pair is left.
pub fn errors(pairs: impl IntoIterator<Item = (f64, f64)>) -> Option<Errors> {
    let (mut n, mut rel, mut abs, mut sq) = (0usize, 0.0, 0.0, 0.0);
    for (pred, truth) in pairs {
        if truth.is_nan() || truth <= 0.0 || !pred.is_finite() {
            continue;
        }
        let diff_ms = (pred - truth) / 1e6;
        n += 1;
        rel += (pred - truth).abs() / truth;
        abs += diff_ms.abs();
        sq += diff_ms * diff_ms;
    }
    (n > 0).then(|| Errors {
        count: n,
        mre: rel / n as f64,
        mae_ms: abs / n as f64,
        rmse_ms: (sq / n as f64).sqrt(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        let e = errors([(110e6, 100e6), (90e6, 100e6), (5.0, 0.0)]).unwrap();
        assert_eq!(e.count, 2, "the zero measurement is skipped");
        assert!((e.mre - 0.1).abs() < 1e-12);
        assert!((e.mae_ms - 10.0).abs() < 1e-9);
        assert!((e.rmse_ms - 10.0).abs() < 1e-9);
        assert!(errors([(1.0, 0.0)]).is_none());
    }
}
