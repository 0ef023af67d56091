//! Hardware profiles: one TOML file per GPU model (`fixtures/hardware/*.toml`),
//! written by hand from vendor datasheets or by `tracecast probe` from a live
//! device. The predictor reads them to price a trace on another GPU; the
//! planner reads them to name GPU types.
//!
//! Every figure is a [`Sourced`] value: the number and where it came from
//! (a datasheet's name and URL, or the driver call that reported it), so a
//! reader can check it and a figure nobody could source is simply absent.
//! The format is documented in `schemas/FORMATS.md` ("Hardware profile").

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

mod builtin;
mod lookup;
mod spec_sheet;

pub use builtin::builtin_catalog;
pub use lookup::{GpuLookupError, lookup_gpu};
pub use spec_sheet::is_spec_sheet;

/// Version of the hardware-profile file format. Bump it when a field is
/// removed or changes meaning; adding an optional field does not.
pub const FORMAT_VERSION: u32 = 1;

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

/// Errors reading, validating or writing hardware profiles. Each names the
/// file it concerns.
#[derive(Debug, thiserror::Error)]
pub enum HardwareError {
    #[error("{}: cannot read: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: cannot write: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    #[error("{}: not a valid hardware profile: {source}", path.display())]
    Parse {
        path: PathBuf,
        source: Box<toml::de::Error>,
    },
    #[error("{}: format_version {found} is not supported (this build reads {supported})", path.display())]
    Version { path: PathBuf, found: u32, supported: u32 },
    #[error("{}: field `{field}`: {reason}", path.display())]
    Invalid {
        path: PathBuf,
        field: String,
        reason: String,
    },
    #[error("cannot serialize hardware profile `{name}`: {source}")]
    Serialize { name: String, source: toml::ser::Error },
    #[error("{}: GPU name `{key}` is also claimed by {}", path.display(), other.display())]
    DuplicateName { path: PathBuf, other: PathBuf, key: String },
    #[error("{}: no hardware profiles (*.toml) or spec sheets (*.json) found", path.display())]
    EmptyCatalog { path: PathBuf },
}

/// A validation failure before it is tied to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub reason: String,
}

impl FieldError {
    fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            reason: reason.into(),
        }
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
    fn validated(self, path: &Path) -> Result<HardwareProfile, HardwareError> {
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

    /// Check everything serde cannot: version, non-empty names and sources,
    /// positive finite figures, consistent clocks and measurements.
    pub fn validate(&self) -> Result<(), FieldError> {
        if self.format_version != FORMAT_VERSION {
            return Err(FieldError::new(
                "format_version",
                format!("is {}, expected {FORMAT_VERSION}", self.format_version),
            ));
        }
        if self.name.trim().is_empty() {
            return Err(FieldError::new("name", "is empty"));
        }
        if self.architecture.trim().is_empty() {
            return Err(FieldError::new("architecture", "is empty"));
        }
        let mut seen: HashMap<String, &str> = HashMap::new();
        seen.insert(normalize_gpu_name(&self.name), &self.name);
        for (i, alias) in self.aliases.iter().enumerate() {
            let field = format!("aliases[{i}]");
            if alias.trim().is_empty() {
                return Err(FieldError::new(field, "is empty"));
            }
            if let Some(prev) = seen.insert(normalize_gpu_name(alias), alias) {
                return Err(FieldError::new(field, format!("`{alias}` repeats `{prev}`")));
            }
        }
        if let Some(cc) = &self.compute_capability
            && parse_compute_capability(cc).is_none()
        {
            return Err(FieldError::new(
                "compute_capability",
                format!("`{cc}` is not `major.minor`"),
            ));
        }
        if self.devices_per_package == Some(0) {
            return Err(FieldError::new("devices_per_package", "must be at least 1"));
        }

        let c = &self.compute;
        check_int("compute.sm_count", &c.sm_count)?;
        check_float("compute.base_clock_mhz", &c.base_clock_mhz)?;
        check_float("compute.boost_clock_mhz", &c.boost_clock_mhz)?;
        check_float("compute.peak_fp32_tflops", &c.peak_fp32_tflops)?;
        check_float("compute.peak_fp32_matrix_tflops", &c.peak_fp32_matrix_tflops)?;
        check_float("compute.peak_tf32_tflops", &c.peak_tf32_tflops)?;
        check_float("compute.peak_fp16_tflops", &c.peak_fp16_tflops)?;
        check_float("compute.peak_bf16_tflops", &c.peak_bf16_tflops)?;
        if let (Some(base), Some(boost)) = (&c.base_clock_mhz, &c.boost_clock_mhz)
            && base.value > boost.value
        {
            return Err(FieldError::new(
                "compute.base_clock_mhz",
                format!("{} MHz is above the boost clock {} MHz", base.value, boost.value),
            ));
        }
        let m = &self.memory;
        check_float("memory.size_gb", &m.size_gb)?;
        check_float("memory.bandwidth_gbs", &m.bandwidth_gbs)?;
        check_int("memory.bus_width_bits", &m.bus_width_bits)?;
        check_float("memory.l2_mib", &m.l2_mib)?;
        let ic = &self.interconnect;
        if let Some(link) = &ic.gpu_link
            && link.trim().is_empty()
        {
            return Err(FieldError::new("interconnect.gpu_link", "is empty"));
        }
        check_float("interconnect.gpu_link_gbs", &ic.gpu_link_gbs)?;
        check_int("interconnect.pcie_gen", &ic.pcie_gen)?;
        check_float("interconnect.pcie_gbs", &ic.pcie_gbs)?;

        if let Some(meas) = &self.measured {
            if meas.tool.trim().is_empty() {
                return Err(FieldError::new("measured.tool", "is empty"));
            }
            for (field, m) in [
                ("measured.d2d_copy_gbs", &meas.d2d_copy_gbs),
                ("measured.fp32_fma_tflops", &meas.fp32_fma_tflops),
                ("measured.bf16_matmul_tflops", &meas.bf16_matmul_tflops),
            ] {
                if let Some(m) = m {
                    check_measurement(field, m)?;
                }
            }
        }
        for (i, note) in self.notes.iter().enumerate() {
            if note.trim().is_empty() {
                return Err(FieldError::new(format!("notes[{i}]"), "is empty"));
            }
        }
        Ok(())
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

    /// Memory bandwidth in bytes/s.
    pub fn memory_bandwidth_bytes_per_s(&self) -> Option<f64> {
        self.memory.bandwidth_gbs.as_ref().map(|s| s.value * 1e9)
    }

    /// L2 size in bytes.
    pub fn l2_bytes(&self) -> Option<f64> {
        self.memory.l2_mib.as_ref().map(|s| s.value * 1024.0 * 1024.0)
    }
}

fn check_float(field: &str, v: &Option<Sourced<f64>>) -> Result<(), FieldError> {
    if let Some(s) = v {
        if !s.value.is_finite() || s.value <= 0.0 {
            return Err(FieldError::new(
                format!("{field}.value"),
                format!("{} is not a positive number", s.value),
            ));
        }
        check_source(field, &s.source)?;
    }
    Ok(())
}

fn check_int(field: &str, v: &Option<Sourced<u32>>) -> Result<(), FieldError> {
    if let Some(s) = v {
        if s.value == 0 {
            return Err(FieldError::new(format!("{field}.value"), "is 0"));
        }
        check_source(field, &s.source)?;
    }
    Ok(())
}

fn check_source(field: &str, source: &str) -> Result<(), FieldError> {
    if source.trim().is_empty() {
        return Err(FieldError::new(
            format!("{field}.source"),
            "is empty: every figure needs its source",
        ));
    }
    Ok(())
}

fn check_measurement(field: &str, m: &Measurement) -> Result<(), FieldError> {
    for (name, v) in [("median", m.median), ("min", m.min), ("max", m.max)] {
        if !v.is_finite() || v <= 0.0 {
            return Err(FieldError::new(
                format!("{field}.{name}"),
                format!("{v} is not a positive number"),
            ));
        }
    }
    if !(m.min <= m.median && m.median <= m.max) {
        return Err(FieldError::new(
            field,
            format!("min {} <= median {} <= max {} does not hold", m.min, m.median, m.max),
        ));
    }
    if m.repeats == 0 {
        return Err(FieldError::new(format!("{field}.repeats"), "is 0"));
    }
    if m.method.trim().is_empty() {
        return Err(FieldError::new(format!("{field}.method"), "is empty"));
    }
    Ok(())
}

fn parse_compute_capability(cc: &str) -> Option<(u32, u32)> {
    let (major, minor) = cc.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The key a GPU name is looked up by: lower case, single spaces, without a
/// leading "NVIDIA " (drivers and datasheets disagree on whether to add it).
pub fn normalize_gpu_name(name: &str) -> String {
    let lower = name.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    match lower.strip_prefix("nvidia ") {
        Some(rest) if !rest.is_empty() => rest.to_string(),
        _ => lower,
    }
}

/// All profiles in a directory, looked up by name, alias or file stem.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    entries: Vec<(PathBuf, HardwareProfile)>,
    index: HashMap<String, usize>,
}

impl Catalog {
    /// Load every `*.toml` profile and `*.json` spec sheet in `dir` (not
    /// recursive), in file-name order.
    /// Fails on the first invalid file, and when two files claim one name.
    pub fn load_dir(dir: impl AsRef<Path>) -> Result<Catalog, HardwareError> {
        let dir = dir.as_ref();
        let read_err = |source| HardwareError::Read {
            path: dir.to_path_buf(),
            source,
        };
        let mut paths = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(read_err)? {
            let path = entry.map_err(read_err)?.path();
            if path.extension().is_some_and(|e| e == "toml" || e == "json") && path.is_file() {
                paths.push(path);
            }
        }
        if paths.is_empty() {
            return Err(HardwareError::EmptyCatalog {
                path: dir.to_path_buf(),
            });
        }
        paths.sort();
        let mut catalog = Catalog::default();
        for path in paths {
            let profile = HardwareProfile::load(&path)?;
            catalog.insert(path, profile)?;
        }
        Ok(catalog)
    }

    /// Add one profile; `path` is where it came from (its stem becomes a key).
    pub fn insert(&mut self, path: PathBuf, profile: HardwareProfile) -> Result<(), HardwareError> {
        let pos = self.entries.len();
        let mut keys: Vec<String> = profile.names().map(normalize_gpu_name).collect();
        if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
            keys.push(normalize_gpu_name(stem));
        }
        keys.sort();
        keys.dedup();
        for key in &keys {
            if let Some(&other) = self.index.get(key) {
                return Err(HardwareError::DuplicateName {
                    path,
                    other: self.entries[other].0.clone(),
                    key: key.clone(),
                });
            }
        }
        for key in keys {
            self.index.insert(key, pos);
        }
        self.entries.push((path, profile));
        Ok(())
    }

    /// The profile for a GPU name as a trace, a user or a datasheet writes it:
    /// case-insensitive, with or without "NVIDIA ", or the file stem
    /// (`a100-sxm4-80gb`). No fuzzy matching: pricing a trace on the wrong
    /// GPU silently is worse than saying "unknown GPU".
    pub fn resolve(&self, gpu_name: &str) -> Option<&HardwareProfile> {
        self.index
            .get(&normalize_gpu_name(gpu_name))
            .map(|&i| &self.entries[i].1)
    }

    /// The file a resolved profile came from.
    pub fn path_of(&self, gpu_name: &str) -> Option<&Path> {
        self.index
            .get(&normalize_gpu_name(gpu_name))
            .map(|&i| self.entries[i].0.as_path())
    }

    pub fn profiles(&self) -> impl Iterator<Item = (&Path, &HardwareProfile)> {
        self.entries.iter().map(|(p, h)| (p.as_path(), h))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
format_version = 1
name = "NVIDIA Example X1"
aliases = ["Example-X1-16GB"]
vendor = "nvidia"
architecture = "Example"
compute_capability = "8.0"

[compute]
sm_count = { value = 10, source = "datasheet" }
base_clock_mhz = { value = 1000.0, source = "datasheet" }
boost_clock_mhz = { value = 1500.0, source = "datasheet" }

[memory]
size_gb = { value = 16.0, source = "datasheet" }
"#;

    fn minimal() -> HardwareProfile {
        HardwareProfile::from_toml_str(MINIMAL, Path::new("x1.toml")).unwrap()
    }

    #[test]
    fn minimal_profile_parses_and_round_trips() {
        let p = minimal();
        assert_eq!(p.vendor, Vendor::Nvidia);
        assert_eq!(p.compute_capability_pair(), Some((8, 0)));
        let text = p.to_toml_string().unwrap();
        let back = HardwareProfile::from_toml_str(&text, Path::new("again.toml")).unwrap();
        assert_eq!(p, back);
    }

    #[test]
    fn errors_name_file_and_field() {
        let bad = MINIMAL.replace("value = 10, source = \"datasheet\"", "value = 10, source = \" \"");
        let err = HardwareProfile::from_toml_str(&bad, Path::new("fixtures/x1.toml")).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("fixtures/x1.toml"), "{msg}");
        assert!(msg.contains("compute.sm_count.source"), "{msg}");

        let neg = MINIMAL.replace("value = 16.0", "value = -16.0");
        let msg = HardwareProfile::from_toml_str(&neg, Path::new("x1.toml"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("memory.size_gb.value"), "{msg}");

        let clocks = MINIMAL.replace("value = 1000.0", "value = 2000.0");
        let msg = HardwareProfile::from_toml_str(&clocks, Path::new("x1.toml"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("compute.base_clock_mhz"), "{msg}");

        let cc = MINIMAL.replace("\"8.0\"", "\"sm80\"");
        let msg = HardwareProfile::from_toml_str(&cc, Path::new("x1.toml"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("compute_capability"), "{msg}");
    }

    #[test]
    fn unknown_fields_and_versions_are_rejected() {
        let extra = MINIMAL.replace("[memory]", "[memory]\nhbm_stacks = 5");
        let err = HardwareProfile::from_toml_str(&extra, Path::new("x1.toml")).unwrap_err();
        assert!(matches!(err, HardwareError::Parse { .. }), "{err}");

        let v2 = MINIMAL.replace("format_version = 1", "format_version = 2");
        let err = HardwareProfile::from_toml_str(&v2, Path::new("x1.toml")).unwrap_err();
        assert!(matches!(err, HardwareError::Version { found: 2, .. }), "{err}");
    }

    #[test]
    fn duplicate_alias_within_a_profile_is_rejected() {
        let dup = MINIMAL.replace("[\"Example-X1-16GB\"]", "[\"Example-X1-16GB\", \"example-x1-16gb\"]");
        let msg = HardwareProfile::from_toml_str(&dup, Path::new("x1.toml"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("aliases[1]"), "{msg}");
    }

    #[test]
    fn normalization_drops_case_spacing_and_nvidia_prefix() {
        assert_eq!(normalize_gpu_name("NVIDIA  A100-SXM4-80GB "), "a100-sxm4-80gb");
        assert_eq!(normalize_gpu_name("a100-SXM4-80GB"), "a100-sxm4-80gb");
        assert_eq!(normalize_gpu_name("AMD Instinct MI300X"), "amd instinct mi300x");
        // "NVIDIA" alone is a name, not an empty one.
        assert_eq!(normalize_gpu_name("NVIDIA"), "nvidia");
    }

    #[test]
    fn catalog_resolves_names_aliases_and_stems_and_refuses_clashes() {
        let mut cat = Catalog::default();
        cat.insert(PathBuf::from("dir/example-x1.toml"), minimal()).unwrap();
        for q in [
            "Example X1",
            "nvidia example x1",
            "EXAMPLE-X1-16GB",
            "NVIDIA Example-X1-16GB",
            "example-x1",
        ] {
            assert_eq!(
                cat.resolve(q).map(|p| p.name.as_str()),
                Some("NVIDIA Example X1"),
                "{q}"
            );
        }
        assert!(cat.resolve("Example X2").is_none());
        assert_eq!(cat.path_of("example x1"), Some(Path::new("dir/example-x1.toml")));

        let mut other = minimal();
        other.name = "Other".into();
        let err = cat.insert(PathBuf::from("dir/other.toml"), other).unwrap_err();
        assert!(matches!(err, HardwareError::DuplicateName { .. }), "{err}");
        assert_eq!(cat.len(), 1);
    }

    #[test]
    fn measurement_summary() {
        let m = Measurement::from_samples(&[3.0, 1.0, 2.0, 10.0], "test").unwrap();
        assert_eq!((m.median, m.min, m.max, m.repeats), (2.5, 1.0, 10.0, 4));
        let m = Measurement::from_samples(&[5.0, 1.0, 3.0], "test").unwrap();
        assert_eq!(m.median, 3.0);
        assert!(Measurement::from_samples(&[], "test").is_none());
        assert!(Measurement::from_samples(&[1.0, f64::NAN], "test").is_none());
        assert!(Measurement::from_samples(&[1.0, 0.0], "test").is_none());
    }

    #[test]
    fn save_and_load_with_measured_section() {
        let mut p = minimal();
        p.measured = Some(Measured {
            tool: "tracecast-probe test".into(),
            probed_at_unix_s: 1,
            driver_version: Some(12080),
            quick: true,
            d2d_copy_gbs: Measurement::from_samples(&[1000.0, 1100.0], "copy"),
            fp32_fma_tflops: None,
            bf16_matmul_tflops: None,
            skipped: vec!["bf16 matmul: cuBLAS not found".into()],
        });
        let dir = std::env::temp_dir().join(format!("tc-hw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("probe.toml");
        p.save(&path).unwrap();
        assert_eq!(HardwareProfile::load(&path).unwrap(), p);
        std::fs::remove_dir_all(&dir).unwrap();

        let mut bad = p.clone();
        bad.measured.as_mut().unwrap().d2d_copy_gbs.as_mut().unwrap().min = 5000.0;
        let msg = bad.save(dir.join("bad.toml")).unwrap_err().to_string();
        assert!(
            msg.contains("bad.toml") && msg.contains("measured.d2d_copy_gbs"),
            "{msg}"
        );
    }
}
