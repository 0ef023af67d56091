//! Prediction errors: the planner's belief is the true throughput with a
//! relative error drawn per job, GPU type and GPU count, the way a predictor
//! errs on each configuration it is asked about. A drawn error `e` makes the
//! predicted duration `(1 + e)` times the true one (throughput / (1 + e)).

use std::sync::Arc;

use crate::workload::Workload;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ErrorDist {
    /// e ~ Normal(0, sigma).
    Normal(f64),
    /// e ~ Uniform(-a, a).
    Uniform(f64),
    /// 1 + e ~ LogNormal(0, sigma).
    LogNormal(f64),
}

impl ErrorDist {
    /// `normal:0.05`, `uniform:0.05` or `lognormal:0.05`.
    pub fn parse(s: &str) -> Result<ErrorDist, String> {
        let (kind, v) = s
            .split_once(':')
            .ok_or_else(|| format!("`{s}`: expected KIND:SIZE, e.g. normal:0.05"))?;
        let v: f64 = v.parse().map_err(|_| format!("`{v}` is not a number"))?;
        if !(0.0..1.0).contains(&v) {
            return Err(format!("error size {v} must be in [0, 1)"));
        }
        match kind {
            "normal" => Ok(ErrorDist::Normal(v)),
            "uniform" => Ok(ErrorDist::Uniform(v)),
            "lognormal" => Ok(ErrorDist::LogNormal(v)),
            _ => Err(format!("`{kind}`: expected normal, uniform or lognormal")),
        }
    }

    /// Duration multiplier `1 + e` from two independent uniforms in (0, 1).
    fn draw(self, u1: f64, u2: f64) -> f64 {
        let gauss = || (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        let m = match self {
            ErrorDist::Normal(s) => 1.0 + s * gauss(),
            ErrorDist::Uniform(a) => 1.0 + a * (2.0 * u1 - 1.0),
            ErrorDist::LogNormal(s) => (s * gauss()).exp(),
        };
        // A predictor never claims a job takes no time.
        m.max(0.05)
    }
}

impl std::fmt::Display for ErrorDist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ErrorDist::Normal(s) => write!(f, "normal:{s}"),
            ErrorDist::Uniform(s) => write!(f, "uniform:{s}"),
            ErrorDist::LogNormal(s) => write!(f, "lognormal:{s}"),
        }
    }
}

/// SplitMix64: a tiny, well-mixed hash, so each (seed, job, type, count) has its own draw without RNG state.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn unit(z: u64) -> f64 {
    ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// The workload with its belief perturbed (the truth is untouched).
pub fn perturb(w: &Workload, dist: ErrorDist, seed: u64) -> Workload {
    w.with_belief(|i, job| {
        job.truth
            .iter()
            .enumerate()
            .map(|(t, c)| {
                c.as_ref().map(|c| {
                    Arc::new(c.scaled(|n| {
                        let h = mix(seed ^ mix(i as u64 ^ mix(((t as u64) << 32) | n as u64)));
                        1.0 / dist.draw(unit(h), unit(mix(h)))
                    }))
                })
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_draws_have_the_asked_spread() {
        let d = ErrorDist::parse("normal:0.05").unwrap();
        let xs: Vec<f64> = (0..20_000u64)
            .map(|i| {
                let h = mix(i);
                d.draw(unit(h), unit(mix(h))) - 1.0
            })
            .collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64).sqrt();
        assert!(mean.abs() < 0.002, "{mean}");
        assert!((sd - 0.05).abs() < 0.002, "{sd}");
        assert!(ErrorDist::parse("gauss:0.1").is_err());
    }
}
