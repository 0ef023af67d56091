//! The hardware profile: its fields, reading and writing it, and the
//! figures derived from it.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::spec_sheet::is_spec_sheet;
use super::{FORMAT_VERSION, HardwareError};

/// One GPU model (or one probed device).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwareProfile {
    pub format_version: u32,
    /// Human-readable model name, e.g. "NVIDIA A100 SXM4 80GB".
    pub name: String,
    /// Other names the same model goes by, above all the exact strings that
    /// `deviceProperties[].name` reports in Kineto traces
    /// (e.g. "NVIDIA A100-SXM4-80GB", "AMD Radeon Graphics").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    pub vendor: Vendor,
    /// Architecture name as the vendor uses it ("Ampere", "Hopper", "CDNA 3").
    pub architecture: String,
    /// `major.minor` as the runtime reports it (CUDA compute capability; for
    /// AMD, the HIP `major.minor` that Kineto records, e.g. 9.4 for gfx942).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<String>,
    /// "SXM5", "PCIe", "OAM", ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form_factor: Option<String>,
    /// How many devices the driver exposes per package. The MI250 shows up as
    /// two devices (one per GCD); its package figures below are then divided
    /// by this to get what one traced device has. Absent means 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devices_per_package: Option<u32>,
    pub compute: Compute,
    pub memory: Memory,
    #[serde(default, skip_serializing_if = "Interconnect::is_empty")]
    pub interconnect: Interconnect,
    /// Figures measured on a live device by `tracecast probe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<Measured>,
    /// Caveats: which figures could not be sourced, why an alias is mapped here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Vendor {
    Nvidia,
    Amd,
}

impl fmt::Display for Vendor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Vendor::Nvidia => "nvidia",
            Vendor::Amd => "amd",
        })
    }
}

/// A figure and where it came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sourced<T> {
    pub value: T,
    /// Document name and URL, or the API call that produced the value.
    pub source: String,
}

impl<T> Sourced<T> {
    pub fn new(value: T, source: impl Into<String>) -> Self {
        Sourced {
            value,
            source: source.into(),
        }
    }
}

/// Compute figures. Peak rates are dense (no structured sparsity), in
/// TFLOP/s (10^12 floating-point operations per second, an FMA counting 2).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compute {
    /// NVIDIA streaming multiprocessors; AMD compute units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_count: Option<Sourced<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_clock_mhz: Option<Sourced<f64>>,
    /// Boost / peak engine clock, the one peak rates are computed at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boost_clock_mhz: Option<Sourced<f64>>,
    /// Non-tensor (vector) FP32.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_fp32_tflops: Option<Sourced<f64>>,
    /// FP32 on matrix cores (AMD CDNA's MFMA); absent where FP32 matrix
    /// products run on the vector units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_fp32_matrix_tflops: Option<Sourced<f64>>,
    /// TF32 on tensor cores (NVIDIA Ampere and later; AMD CDNA 3 "TF32").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_tf32_tflops: Option<Sourced<f64>>,
    /// FP16 on tensor / matrix cores with FP32 accumulate where the vendor
    /// distinguishes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_fp16_tflops: Option<Sourced<f64>>,
    /// BF16 on tensor / matrix cores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_bf16_tflops: Option<Sourced<f64>>,
    /// Non-tensor (vector) FP64: from half the FP32 rate (HPC parts) down
    /// to 1/64 of it (GeForce and workstation Ampere and Ada).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_fp64_tflops: Option<Sourced<f64>>,
}

/// Memory figures. Sizes and bandwidths are as vendors state them: decimal
/// GB and GB/s (10^9); caches in MiB.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_gb: Option<Sourced<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_gbs: Option<Sourced<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus_width_bits: Option<Sourced<u32>>,
    /// Last-level on-die cache that all SMs share (NVIDIA L2; AMD L2, not the
    /// MI300 Infinity Cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_mib: Option<Sourced<f64>>,
}

/// GPU-to-GPU and host links, per GPU, bidirectional aggregate GB/s as the
/// vendors quote them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interconnect {
    /// "NVLink 4", "Infinity Fabric (xGMI)", ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_link: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_link_gbs: Option<Sourced<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_gen: Option<Sourced<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_gbs: Option<Sourced<f64>>,
}

impl Interconnect {
    pub fn is_empty(&self) -> bool {
        *self == Interconnect::default()
    }
}

/// What `tracecast probe` measured on one device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measured {
    /// Tool and version that measured, e.g. "tracecast-probe 0.1.0".
    pub tool: String,
    /// When, in seconds since the Unix epoch.
    pub probed_at_unix_s: u64,
    /// CUDA driver version as `cuDriverGetVersion` reports it (12080 = 12.8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_version: Option<i32>,
    /// Whether the shortened (`--quick`) benchmarks ran.
    #[serde(default)]
    pub quick: bool,
    /// Device-to-device copy bandwidth, GB/s, bytes read plus bytes written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d2d_copy_gbs: Option<Measurement>,
    /// FP32 FMA throughput of a register-resident NVRTC kernel, TFLOP/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp32_fma_tflops: Option<Measurement>,
    /// BF16 GEMM rate through cuBLAS (`cublasGemmEx`), TFLOP/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bf16_matmul_tflops: Option<Measurement>,
    /// Benchmarks that did not run, with the reason (e.g. cuBLAS not found).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
}

/// A repeated measurement: the median is the figure; min and max show spread.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measurement {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub repeats: u32,
    /// What exactly was run (sizes, launch shape).
    pub method: String,
}

impl Measurement {
    /// Summarise repeated samples; `None` when there are none or any is not
    /// a positive finite number (a broken timer must not become a figure).
    pub fn from_samples(samples: &[f64], method: impl Into<String>) -> Option<Measurement> {
        if samples.is_empty() || samples.iter().any(|s| !s.is_finite() || *s <= 0.0) {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Some(Measurement {
            median,
            min: sorted[0],
            max: sorted[n - 1],
            repeats: n as u32,
            method: method.into(),
        })
    }
}

impl HardwareProfile {
    /// Read and validate one profile: a TOML profile, or a JSON spec sheet
    /// in NeuSight's format (told apart by content).
    pub fn load(path: impl AsRef<Path>) -> Result<HardwareProfile, HardwareError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| HardwareError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        if is_spec_sheet(&text) {
            return Self::from_spec_sheet_json(&text, path);
        }
        Self::from_toml_str(&text, path)
    }

    /// Parse and validate TOML text; `path` is only used in error messages.
    pub fn from_toml_str(text: &str, path: &Path) -> Result<HardwareProfile, HardwareError> {
        // Check the version before the full parse, so a future file with new
        // required fields says "unsupported version" rather than "missing field".
        if let Ok(table) = text.parse::<toml::Table>()
            && let Some(v) = table.get("format_version").and_then(|v| v.as_integer())
            && v != i64::from(FORMAT_VERSION)
        {
            return Err(HardwareError::Version {
                path: path.to_path_buf(),
                found: u32::try_from(v).unwrap_or(u32::MAX),
                supported: FORMAT_VERSION,
            });
        }
        let profile: HardwareProfile = toml::from_str(text).map_err(|e| HardwareError::Parse {
            path: path.to_path_buf(),
            source: Box::new(e),
        })?;
        profile.validated(path)
    }

    /// The profile once [`validate`](Self::validate) passes; `path` names
    /// the file it came from in the error.
    pub(super) fn validated(self, path: &Path) -> Result<HardwareProfile, HardwareError> {
        self.validate().map_err(|e| HardwareError::Invalid {
            path: path.to_path_buf(),
            field: e.field,
            reason: e.reason,
        })?;
        Ok(self)
    }

    /// The profile as TOML text (validated first, so nothing invalid is written).
    pub fn to_toml_string(&self) -> Result<String, HardwareError> {
        self.validate().map_err(|e| HardwareError::Invalid {
            path: PathBuf::from(format!("<profile {}>", self.name)),
            field: e.field,
            reason: e.reason,
        })?;
        toml::to_string_pretty(self).map_err(|source| HardwareError::Serialize {
            name: self.name.clone(),
            source,
        })
    }

    /// Validate and write to `path`.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), HardwareError> {
        let path = path.as_ref();
        let text = self.to_toml_string().map_err(|e| match e {
            HardwareError::Invalid { field, reason, .. } => HardwareError::Invalid {
                path: path.to_path_buf(),
                field,
                reason,
            },
            other => other,
        })?;
        std::fs::write(path, text).map_err(|source| HardwareError::Write {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Every name this profile answers to: its name, then its aliases.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.name.as_str()).chain(self.aliases.iter().map(String::as_str))
    }

    /// Compute capability as (major, minor), when present.
    pub fn compute_capability_pair(&self) -> Option<(u32, u32)> {
        self.compute_capability.as_deref().and_then(parse_compute_capability)
    }

    /// Peak dense FP32 in FLOP/s.
    pub fn peak_fp32_flops(&self) -> Option<f64> {
        self.compute.peak_fp32_tflops.as_ref().map(|s| s.value * 1e12)
    }

    /// Peak dense BF16 in FLOP/s.
    pub fn peak_bf16_flops(&self) -> Option<f64> {
        self.compute.peak_bf16_tflops.as_ref().map(|s| s.value * 1e12)
    }

    /// Peak dense FP64 (non-tensor) in FLOP/s.
    pub fn peak_fp64_flops(&self) -> Option<f64> {
        self.compute.peak_fp64_tflops.as_ref().map(|s| s.value * 1e12)
    }

    /// Memory bandwidth in bytes/s.
    pub fn memory_bandwidth_bytes_per_s(&self) -> Option<f64> {
        self.memory.bandwidth_gbs.as_ref().map(|s| s.value * 1e9)
    }

    /// L2 size in bytes.
    pub fn l2_bytes(&self) -> Option<f64> {
        self.memory.l2_mib.as_ref().map(|s| s.value * 1024.0 * 1024.0)
    }
}

pub(super) fn parse_compute_capability(cc: &str) -> Option<(u32, u32)> {
    let (major, minor) = cc.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}
