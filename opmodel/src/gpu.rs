//! The GPU figures the physics needs, from a hardware profile or spec sheet.

use serde::{Deserialize, Serialize};
use tracecast_schemas::hardware::{Catalog, HardwareProfile, Vendor, lookup_gpu};

use crate::OpModelError;
use crate::work::{OpKind, OpWork, Tf32Path};

/// Peak rates and sizes of one GPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuSpec {
    pub name: String,
    /// Dense FP32 (non-tensor) FLOP/s.
    pub peak_fp32_flops: f64,
    /// FP32 matrix-core FLOP/s (AMD MFMA), where GEMMs have such a path.
    pub peak_fp32_matrix_flops: Option<f64>,
    /// Dense 16-bit tensor-core FLOP/s, when the profile gives it.
    pub peak_half_flops: Option<f64>,
    /// Dense TF32 tensor-core FLOP/s (NVIDIA, Ampere and later), when the
    /// profile gives it. NeuSight's spec sheets do not.
    #[serde(default)]
    pub peak_tf32_flops: Option<f64>,
    /// Dense FP64 (non-tensor) FLOP/s, when the profile gives it. NeuSight's
    /// spec sheets do not.
    #[serde(default)]
    pub peak_fp64_flops: Option<f64>,
    /// Memory bandwidth, bytes/s.
    pub bandwidth: f64,
    /// SMs (compute units); NaN when the profile does not say (`null` in JSON).
    #[serde(with = "nan_as_null")]
    pub sm_count: f64,
    /// L2 bytes; 0 when unknown.
    pub l2_bytes: f64,
}

/// JSON has no NaN: a missing figure is written as `null`.
mod nan_as_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_nan() {
            s.serialize_none()
        } else {
            s.serialize_f64(*v)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }
}

/// Whether elements of `dtype_bytes` are float32: the only type that TF32
/// and AMD's FP32 matrix path take.
fn is_float32(dtype_bytes: f64) -> bool {
    dtype_bytes > 2.0 && dtype_bytes < 8.0
}

impl GpuSpec {
    /// Whether two specs give the same float32 figures (the name aside): a
    /// GPU the model trained on may come back under another name, or with
    /// the 16- and 64-bit rates its spec sheet lacked filled in
    /// (`fill_missing_rates`). The trees read float32 figures only: every
    /// measurement they learned from ran in float32.
    pub fn same_figures(&self, other: &GpuSpec) -> bool {
        let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
        same(self.peak_fp32_flops, other.peak_fp32_flops)
            && self.peak_fp32_matrix_flops == other.peak_fp32_matrix_flops
            && same(self.bandwidth, other.bandwidth)
            && same(self.sm_count, other.sm_count)
            && same(self.l2_bytes, other.l2_bytes)
    }

    /// The figures of a profile; it must give the FP32 peak and the bandwidth.
    pub fn from_profile(p: &HardwareProfile) -> Result<GpuSpec, OpModelError> {
        let missing = |what: &str| OpModelError::Spec {
            gpu: p.name.clone(),
            reason: format!("the profile gives no {what}"),
        };
        let dies = f64::from(p.devices_per_package.unwrap_or(1));
        Ok(GpuSpec {
            name: p.name.clone(),
            peak_fp32_flops: p.peak_fp32_flops().ok_or_else(|| missing("peak FP32 rate"))? / dies,
            peak_fp32_matrix_flops: p
                .compute
                .peak_fp32_matrix_tflops
                .as_ref()
                .map(|s| s.value * 1e12 / dies),
            peak_half_flops: p
                .peak_bf16_flops()
                .or_else(|| p.compute.peak_fp16_tflops.as_ref().map(|s| s.value * 1e12))
                .map(|f| f / dies),
            // PyTorch takes TF32 paths on NVIDIA's tensor cores only.
            peak_tf32_flops: (p.vendor == Vendor::Nvidia)
                .then(|| p.compute.peak_tf32_tflops.as_ref().map(|s| s.value * 1e12 / dies))
                .flatten(),
            peak_fp64_flops: p.peak_fp64_flops().map(|f| f / dies),
            bandwidth: p
                .memory_bandwidth_bytes_per_s()
                .ok_or_else(|| missing("memory bandwidth"))?
                / dies,
            // Some datasheets (H200, B200) state no SM count: the inputs that
            // need it are then missing, which the model is fitted to handle.
            sm_count: p
                .compute
                .sm_count
                .as_ref()
                .map_or(f64::NAN, |s| f64::from(s.value) / dies),
            l2_bytes: p.l2_bytes().unwrap_or(0.0) / dies,
        })
    }

    /// The built-in profile `name` resolves to, as a spec; `None` where no
    /// single profile matches or it lacks the figures a spec needs.
    pub fn builtin(catalog: &Catalog, name: &str) -> Option<GpuSpec> {
        lookup_gpu(catalog, name)
            .ok()
            .and_then(|profile| GpuSpec::from_profile(&profile).ok())
    }

    /// The peak rate for elements of `dtype_bytes`: 16-bit math runs on
    /// tensor cores where the GPU has them; 64-bit math at the GPU's FP64
    /// rate, or where no figure gives it, at half the FP32 rate: the most
    /// any GPU has, so the time is never priced below what it can be.
    pub fn peak_flops(&self, dtype_bytes: f64) -> f64 {
        match (self.peak_half_flops, self.peak_fp64_flops) {
            (Some(half), _) if dtype_bytes <= 2.0 => half,
            (_, Some(fp64)) if dtype_bytes >= 8.0 => fp64,
            _ if dtype_bytes >= 8.0 => self.peak_fp32_flops / 2.0,
            _ => self.peak_fp32_flops,
        }
    }

    /// The 16- and 64-bit rates this spec lacks, from `other`: a spec sheet
    /// gives float32 figures only (NeuSight's), a built-in profile of the
    /// same GPU gives the rest.
    pub fn fill_missing_rates(&mut self, other: &GpuSpec) {
        self.peak_half_flops = self.peak_half_flops.or(other.peak_half_flops);
        self.peak_tf32_flops = self.peak_tf32_flops.or(other.peak_tf32_flops);
        self.peak_fp64_flops = self.peak_fp64_flops.or(other.peak_fp64_flops);
    }

    /// The peak rate `work` runs against: matrix products (GEMMs,
    /// convolutions) on matrix cores where there are some, and on TF32
    /// tensor cores where the work allows it and the GPU has them.
    pub fn peak_for(&self, work: &OpWork) -> f64 {
        match self.tf32_peak_for(work) {
            Some(tf32) => tf32,
            None if matches!(work.kind, OpKind::Gemm | OpKind::Conv) => self.peak_gemm_flops(work.dtype_bytes),
            None => self.peak_flops(work.dtype_bytes),
        }
    }

    /// The TF32 tensor-core rate `work` runs at on this GPU, if it does.
    pub fn tf32_peak_for(&self, work: &OpWork) -> Option<f64> {
        let matrix_f32 = matches!(work.kind, OpKind::Gemm | OpKind::Conv) && is_float32(work.dtype_bytes);
        self.peak_tf32_flops
            .filter(|_| work.tf32 != Tf32Path::Off && matrix_f32)
    }

    /// The work's FLOPs at peak and its bytes at full bandwidth, µs.
    pub fn compute_memory_us(&self, work: &OpWork) -> (f64, f64) {
        (
            work.flops / self.peak_for(work) * 1e6,
            work.bytes / self.bandwidth * 1e6,
        )
    }

    /// The work's roofline time, µs: the longer of the two.
    pub fn roofline_us(&self, work: &OpWork) -> f64 {
        let (compute, memory) = self.compute_memory_us(work);
        compute.max(memory)
    }

    /// The peak rate of a matrix product: FP32 GEMMs use matrix cores where
    /// the GPU has an FP32 path through them.
    pub fn peak_gemm_flops(&self, dtype_bytes: f64) -> f64 {
        match self.peak_fp32_matrix_flops {
            Some(mm) if is_float32(dtype_bytes) => mm,
            _ => self.peak_flops(dtype_bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use tracecast_schemas::hardware::builtin_catalog;

    use super::*;
    use crate::work::EwFunc;

    fn spec_of(name: &str) -> GpuSpec {
        let catalog = builtin_catalog().unwrap();
        GpuSpec::from_profile(catalog.resolve(name).unwrap()).unwrap()
    }

    /// PyTorch's TF32 switches reach NVIDIA's tensor cores only, and only
    /// float32 matrix work that is allowed on them.
    #[test]
    fn tf32_applies_to_allowed_float32_matrix_work_on_nvidia_tensor_cores() {
        let h100 = spec_of("H100");
        assert_eq!(h100.peak_tf32_flops, Some(494.7e12));
        assert!(
            spec_of("MI300X").peak_tf32_flops.is_none(),
            "an AMD profile's TF32 figure is not PyTorch's path"
        );
        assert!(spec_of("T4").peak_tf32_flops.is_none());

        let conv = OpWork {
            kind: OpKind::Conv,
            ..OpWork::linear(8.0, 512.0, 512.0, 512.0)
        };
        let allowed = OpWork {
            tf32: Tf32Path::Convolution,
            ..conv
        };
        assert_eq!(h100.tf32_peak_for(&conv), None);
        assert_eq!(h100.tf32_peak_for(&allowed), Some(494.7e12));
        assert_eq!(h100.peak_for(&allowed), 494.7e12);
        assert_eq!(h100.peak_for(&conv), h100.peak_fp32_flops);
        let half = OpWork {
            dtype_bytes: 2.0,
            ..allowed
        };
        assert_eq!(h100.tf32_peak_for(&half), None);
        let double = OpWork {
            dtype_bytes: 8.0,
            ..allowed
        };
        assert_eq!(h100.tf32_peak_for(&double), None);
        assert_eq!(h100.peak_for(&double), 33.5e12);
        let elementwise = OpWork {
            tf32: Tf32Path::MatrixProduct,
            ..OpWork::elementwise(EwFunc::Gelu, 1e6, 1.0)
        };
        assert_eq!(h100.tf32_peak_for(&elementwise), None);
    }

    /// Float64 work runs at the FP64 rate; a spec sheet that gives none is
    /// never priced faster than half its FP32 rate, and borrows the rates it
    /// lacks from a profile of its GPU without turning into another GPU for
    /// the float32-trained trees.
    #[test]
    fn float64_runs_at_the_fp64_rate_and_sheets_borrow_missing_rates() {
        let t4 = spec_of("T4");
        assert_eq!(t4.peak_flops(8.0), 0.25e12);
        assert_eq!(t4.peak_flops(4.0), t4.peak_fp32_flops);
        let sheet = GpuSpec {
            peak_half_flops: None,
            peak_fp64_flops: None,
            ..t4.clone()
        };
        assert_eq!(sheet.peak_flops(8.0), t4.peak_fp32_flops / 2.0);
        assert_eq!(sheet.peak_flops(2.0), t4.peak_fp32_flops);
        let mut filled = sheet.clone();
        filled.fill_missing_rates(&t4);
        assert_eq!((filled.peak_flops(2.0), filled.peak_flops(8.0)), (65e12, 0.25e12));
        assert!(filled.same_figures(&sheet));
    }
}
