//! GPU spec sheets in NeuSight's `device_configs/*.json` format, read as
//! hardware profiles so that a GPU tracecast has never seen can be priced
//! from its datasheet figures alone.
//!
//! ```json
//! {"Device": "Tesla T4", "Dev_Mem": 15, "Mem_Bw": 320, "Num_Sm": 40,
//!  "Core_Per_SM": 64, "Freq": 1590, "SingleFLOPs": 8141, "L2Cache": 4}
//! ```
//! Units: `Dev_Mem` GB, `Mem_Bw` GB/s, `Freq` MHz (NeuSight's README says GHz,
//! its files hold MHz; a value under 10 is taken as GHz), `SingleFLOPs`
//! GFLOP/s FP32 (AMD sheets: `SingleFLOPsVEC` vector and `SingleFLOPsMM`
//! matrix-core FP32), `L2Cache` MB.

use std::path::Path;

use serde::Deserialize;

use super::{Compute, FORMAT_VERSION, HardwareError, HardwareProfile, Interconnect, Memory, Sourced, Vendor};

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct SpecSheet {
    device: String,
    #[serde(rename = "Dev_Mem")]
    dev_mem: Option<f64>,
    #[serde(rename = "Mem_Bw")]
    mem_bw: f64,
    #[serde(rename = "Num_Sm")]
    num_sm: Option<f64>,
    #[serde(rename = "Core_Per_SM")]
    core_per_sm: Option<u32>,
    freq: Option<f64>,
    /// FP32 vector rate; AMD sheets split it into vector and matrix rates.
    /// Derived from `Num_Sm`, `Core_Per_SM` and `Freq` where a sheet leaves
    /// it out.
    #[serde(rename = "SingleFLOPs", alias = "SingleFLOPsVEC")]
    single_flops: Option<f64>,
    #[serde(rename = "SingleFLOPsMM")]
    single_flops_matrix: Option<f64>,
    #[serde(rename = "L2Cache")]
    l2_cache: Option<f64>,
}

/// Whether `text` looks like a JSON spec sheet rather than a TOML profile.
pub fn is_spec_sheet(text: &str) -> bool {
    text.trim_start().starts_with('{')
}

impl HardwareProfile {
    /// A profile from a NeuSight-format spec sheet; `path` names the file in
    /// errors and in every figure's source.
    pub fn from_spec_sheet_json(text: &str, path: &Path) -> Result<HardwareProfile, HardwareError> {
        let sheet: SpecSheet = serde_json::from_str(text).map_err(|e| HardwareError::Invalid {
            path: path.to_path_buf(),
            field: "spec sheet".into(),
            reason: e.to_string(),
        })?;
        let source = |field: &str| format!("spec sheet {}, field {field}", path.display());
        let lower = sheet.device.to_lowercase();
        let vendor = if ["amd", "instinct", "radeon"].iter().any(|w| lower.contains(w)) {
            Vendor::Amd
        } else {
            Vendor::Nvidia
        };
        let mut notes = vec![format!("Read from the spec sheet {}", path.display())];
        if let Some(cores) = sheet.core_per_sm {
            notes.push(format!("{cores} FP32 cores per SM (spec sheet Core_Per_SM)"));
        }
        let freq_mhz = sheet.freq.map(|f| if f < 10.0 { f * 1000.0 } else { f });
        // A fused multiply-add a core a cycle: GFLOP/s from MHz.
        let derived = match (sheet.num_sm, sheet.core_per_sm, freq_mhz) {
            (Some(sms), Some(cores), Some(mhz)) => Some(sms * f64::from(cores) * 2.0 * mhz / 1e3),
            _ => None,
        };
        let peak_fp32_tflops = match (sheet.single_flops, derived) {
            (Some(gflops), _) => Sourced::new(gflops / 1e3, source("SingleFLOPs")),
            (None, Some(gflops)) => Sourced::new(
                gflops / 1e3,
                format!(
                    "spec sheet {}, fields Num_Sm x Core_Per_SM x 2 x Freq (no SingleFLOPs)",
                    path.display()
                ),
            ),
            (None, None) => {
                return Err(HardwareError::Invalid {
                    path: path.to_path_buf(),
                    field: "SingleFLOPs".into(),
                    reason: "missing, and Num_Sm, Core_Per_SM and Freq are not all there to derive it from".into(),
                });
            }
        };
        let profile = HardwareProfile {
            format_version: FORMAT_VERSION,
            name: sheet.device.trim().to_string(),
            aliases: Vec::new(),
            vendor,
            architecture: "unknown (from a spec sheet)".into(),
            compute_capability: None,
            form_factor: None,
            devices_per_package: None,
            compute: Compute {
                sm_count: sheet.num_sm.map(|n| sm_count(n, path)).transpose()?,
                boost_clock_mhz: freq_mhz.map(|f| Sourced::new(f, source("Freq"))),
                peak_fp32_tflops: Some(peak_fp32_tflops),
                peak_fp32_matrix_tflops: sheet
                    .single_flops_matrix
                    .map(|f| Sourced::new(f / 1e3, source("SingleFLOPsMM"))),
                ..Compute::default()
            },
            memory: Memory {
                size_gb: sheet.dev_mem.map(|m| Sourced::new(m, source("Dev_Mem"))),
                bandwidth_gbs: Some(Sourced::new(sheet.mem_bw, source("Mem_Bw"))),
                bus_width_bits: None,
                l2_mib: sheet.l2_cache.map(|l| Sourced::new(l, source("L2Cache"))),
            },
            interconnect: Interconnect::default(),
            measured: None,
            notes,
        };
        profile.validated(path)
    }
}

/// `Num_Sm` must be a whole positive number (`108` or `108.0`).
fn sm_count(n: f64, path: &Path) -> Result<Sourced<u32>, HardwareError> {
    if n >= 1.0 && n.fract() == 0.0 && n <= f64::from(u32::MAX) {
        Ok(Sourced::new(
            n as u32,
            format!("spec sheet {}, field Num_Sm", path.display()),
        ))
    } else {
        Err(HardwareError::Invalid {
            path: path.to_path_buf(),
            field: "Num_Sm".into(),
            reason: format!("{n} is not a whole number of SMs"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_neusight_sheet_with_mhz_clock() {
        let text = r#"{"Device":"Tesla T4","Dev_Mem":15,"Mem_Bw":320,"Num_Sm":40,
            "Core_Per_SM":64,"Freq":1590,"SingleFLOPs":8141,"L2Cache":4}"#;
        assert!(is_spec_sheet(text));
        let p = HardwareProfile::from_spec_sheet_json(text, Path::new("Tesla_T4.json")).unwrap();
        assert_eq!(p.name, "Tesla T4");
        assert_eq!(p.vendor, Vendor::Nvidia);
        assert_eq!(p.compute.sm_count.as_ref().unwrap().value, 40);
        assert_eq!(p.compute.boost_clock_mhz.as_ref().unwrap().value, 1590.0);
        assert!((p.peak_fp32_flops().unwrap() - 8.141e12).abs() < 1.0);
        assert!((p.memory_bandwidth_bytes_per_s().unwrap() - 3.2e11).abs() < 1.0);
        assert!(p.compute.sm_count.as_ref().unwrap().source.contains("Tesla_T4.json"));
    }

    #[test]
    fn ghz_clock_and_amd_vendor() {
        let text = r#"{"Device":"AMD Instinct MI100","Mem_Bw":1228,"Num_Sm":120,"Freq":1.502,"SingleFLOPsMM":46100,"SingleFLOPsVEC":23100}"#;
        let p = HardwareProfile::from_spec_sheet_json(text, Path::new("mi100.json")).unwrap();
        assert_eq!(p.vendor, Vendor::Amd);
        assert_eq!(p.compute.peak_fp32_tflops.as_ref().unwrap().value, 23.1);
        assert_eq!(p.compute.peak_fp32_matrix_tflops.as_ref().unwrap().value, 46.1);
        assert_eq!(p.compute.boost_clock_mhz.as_ref().unwrap().value, 1502.0);
    }

    #[test]
    fn refuses_missing_and_non_positive_figures() {
        let missing = r#"{"Device":"X","Num_Sm":10,"SingleFLOPs":100}"#;
        let err = HardwareProfile::from_spec_sheet_json(missing, Path::new("x.json")).unwrap_err();
        assert!(
            err.to_string().contains("x.json") && err.to_string().contains("Mem_Bw"),
            "{err}"
        );
        let zero = r#"{"Device":"X","Num_Sm":10,"SingleFLOPs":0,"Mem_Bw":100}"#;
        assert!(HardwareProfile::from_spec_sheet_json(zero, Path::new("x.json")).is_err());
        let half_sm = r#"{"Device":"X","Num_Sm":10.5,"SingleFLOPs":10,"Mem_Bw":100}"#;
        assert!(HardwareProfile::from_spec_sheet_json(half_sm, Path::new("x.json")).is_err());
        // Without SingleFLOPs the FP32 rate comes from the SMs, cores and
        // clock, and says so; without those too the sheet is refused.
        let derived = r#"{"Device":"X","Num_Sm":132,"Core_Per_SM":128,"Freq":1980,"Mem_Bw":3352}"#;
        let p = HardwareProfile::from_spec_sheet_json(derived, Path::new("x.json")).unwrap();
        let peak = p.compute.peak_fp32_tflops.as_ref().unwrap();
        assert!((peak.value - 66.90816).abs() < 1e-9, "{}", peak.value);
        assert!(peak.source.contains("Core_Per_SM"), "{}", peak.source);
        let underived = r#"{"Device":"X","Num_Sm":132,"Freq":1980,"Mem_Bw":3352}"#;
        let err = HardwareProfile::from_spec_sheet_json(underived, Path::new("x.json")).unwrap_err();
        assert!(err.to_string().contains("SingleFLOPs"), "{err}");
        // Without an SM count the sheet still reads (the op model handles it missing).
        let no_sm = r#"{"Device":"X","SingleFLOPs":10,"Mem_Bw":100}"#;
        let p = HardwareProfile::from_spec_sheet_json(no_sm, Path::new("x.json")).unwrap();
        assert!(p.compute.sm_count.is_none());
    }
}
