//! The target hardware as model inputs, from a hardware profile
//! (`fixtures/hardware/*.toml`). Training uses the profile of the GPU each
//! trace was recorded on; prediction may substitute another GPU's.

use tracecast_schemas::features::FAMILIES;
use tracecast_schemas::hardware::HardwareProfile;

/// Input names, in the order of [`HardwareInputs::values`].
pub const HARDWARE_INPUTS: [&str; 7] = [
    "hw_sm_count",
    "hw_boost_clock_mhz",
    "hw_peak_fp32_tflops",
    "hw_peak_fp16_tflops",
    "hw_memory_bandwidth_gbs",
    "hw_l2_mib",
    "hw_memory_gb",
];

/// One traced device's figures (a multi-die package's divided by its dies).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HardwareInputs {
    pub values: [f64; 7],
}

impl HardwareInputs {
    /// A GPU no profile describes: every figure missing.
    pub fn unknown() -> HardwareInputs {
        HardwareInputs { values: [f64::NAN; 7] }
    }

    /// No figure known (no profile matched the GPU).
    pub fn is_unknown(&self) -> bool {
        self.values.iter().all(|v| v.is_nan())
    }

    pub fn from_profile(profile: &HardwareProfile) -> HardwareInputs {
        let per_device = f64::from(profile.devices_per_package.unwrap_or(1).max(1));
        let or_nan = |v: Option<f64>| v.unwrap_or(f64::NAN);
        let c = &profile.compute;
        let m = &profile.memory;
        // Half precision on tensor cores: the FP16 figure, else BF16 (some data sheets give only one).
        let fp16 = c
            .peak_fp16_tflops
            .as_ref()
            .or(c.peak_bf16_tflops.as_ref())
            .map(|s| s.value);
        HardwareInputs {
            values: [
                or_nan(c.sm_count.as_ref().map(|s| f64::from(s.value))) / per_device,
                or_nan(c.boost_clock_mhz.as_ref().map(|s| s.value)),
                or_nan(c.peak_fp32_tflops.as_ref().map(|s| s.value)) / per_device,
                or_nan(fp16) / per_device,
                or_nan(m.bandwidth_gbs.as_ref().map(|s| s.value)) / per_device,
                or_nan(m.l2_mib.as_ref().map(|s| s.value)) / per_device,
                or_nan(m.size_gb.as_ref().map(|s| s.value)) / per_device,
            ],
        }
    }

    /// Roofline time of one item in ns: the longer of its FLOPs at peak rate
    /// and its bytes at memory bandwidth. Matrix families in 16-bit types use
    /// the tensor-core rate, everything else FP32. NaN without a profile.
    pub fn roofline_ns(&self, family: f64, dtype_bytes: f64, flops: f64, bytes: f64) -> f64 {
        let matrix = matches!(FAMILIES.get(family as usize), Some(&("gemm" | "conv" | "attention")));
        // 16-bit matrix work at the tensor rate where the profile has one, else FP32.
        let tflops = if matrix && dtype_bytes == 2.0 && !self.values[3].is_nan() {
            self.values[3]
        } else {
            self.values[2]
        };
        let zero_if_nan = |v: f64| if v.is_nan() { 0.0 } else { v };
        let compute_ns = zero_if_nan(flops) / (tflops * 1e3);
        let memory_ns = zero_if_nan(bytes) / self.values[4];
        compute_ns.max(memory_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roofline_takes_the_slower_bound() {
        let mut hw = HardwareInputs::unknown();
        hw.values[2] = 10.0; // 10 TFLOP/s FP32
        hw.values[3] = 100.0; // 100 TFLOP/s FP16
        hw.values[4] = 1000.0; // 1000 GB/s = 1 byte/ps
        // 1e9 FLOP at 10 TFLOP/s = 100 µs; 1e6 bytes at 1 TB/s = 1 µs.
        assert!((hw.roofline_ns(0.0, 4.0, 1e9, 1e6) - 100_000.0).abs() < 1e-6);
        // The same gemm in FP16 runs at the tensor rate: 10 µs.
        assert!((hw.roofline_ns(0.0, 2.0, 1e9, 1e6) - 10_000.0).abs() < 1e-6);
        // An elementwise item is memory bound.
        assert!((hw.roofline_ns(3.0, 2.0, 1e3, 1e9) - 1_000_000.0).abs() < 1e-6);
        assert!(HardwareInputs::unknown().roofline_ns(0.0, 4.0, 1e9, 1e6).is_nan());
    }
}
