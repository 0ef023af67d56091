//! `tracecast probe`: read a local NVIDIA GPU's properties through the CUDA
//! driver API, run a few micro-benchmarks, and write the result as a
//! hardware profile (the same TOML format as `fixtures/hardware/`).
//!
//! cudarc is built with dynamic loading, so this crate builds without the
//! CUDA toolkit and the binary runs on machines without a driver. cudarc
//! panics on the first driver call when libcuda is missing, so [`probe`]
//! checks for the library first and returns [`ProbeError::NoDriver`].

// The CUDA driver, NVRTC and cuBLAS are reached through cudarc's raw
// bindings: the one crate where unsafe code is allowed.
#![allow(unsafe_code)]

mod bench;

use std::time::{SystemTime, UNIX_EPOCH};

use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaContext, DriverError};
use tracecast_schemas::hardware::{
    Compute, FORMAT_VERSION, HardwareProfile, Interconnect, Measured, Memory, Sourced, Vendor,
};

pub use bench::BenchConfig;

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// libcuda (the NVIDIA driver's user-space library) could not be loaded.
    #[error("no CUDA driver found: tracecast probe needs an NVIDIA GPU")]
    NoDriver,
    #[error("the CUDA driver reports no GPU")]
    NoDevice,
    #[error("GPU {ordinal} does not exist (the driver reports {count})")]
    NoSuchDevice { ordinal: usize, count: usize },
    #[error("CUDA driver call {call} failed: {source}")]
    Driver { call: &'static str, source: DriverError },
    /// cudarc panics when a driver symbol it expects is missing (a driver older
    /// than the CUDA version it was built for); that becomes this error.
    #[error("the CUDA driver library failed during {stage}: {message}")]
    DriverPanicked { stage: &'static str, message: String },
}

/// What to probe and how long to spend.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// CUDA device ordinal.
    pub ordinal: usize,
    /// Shorter benchmarks (fewer repeats, smaller sizes).
    pub quick: bool,
}

/// Whether the CUDA driver library can be loaded on this machine.
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library by its candidate names.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Probe one GPU: properties plus measured figures.
pub fn probe(opts: &ProbeOptions) -> Result<HardwareProfile, ProbeError> {
    if !driver_present() {
        return Err(ProbeError::NoDriver);
    }
    let opts = opts.clone();
    match std::panic::catch_unwind(move || probe_with_driver(&opts)) {
        Ok(result) => result,
        Err(payload) => Err(ProbeError::DriverPanicked {
            stage: "probe",
            message: panic_message(payload),
        }),
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".to_string())
}

fn probe_with_driver(opts: &ProbeOptions) -> Result<HardwareProfile, ProbeError> {
    let count = CudaContext::device_count().map_err(|source| ProbeError::Driver {
        call: "cuDeviceGetCount",
        source,
    })?;
    let count = usize::try_from(count).unwrap_or(0);
    if count == 0 {
        return Err(ProbeError::NoDevice);
    }
    if opts.ordinal >= count {
        return Err(ProbeError::NoSuchDevice {
            ordinal: opts.ordinal,
            count,
        });
    }
    let ctx = CudaContext::new(opts.ordinal).map_err(|source| ProbeError::Driver {
        call: "cuCtxCreate",
        source,
    })?;
    let props = read_properties(&ctx)?;
    tracing::info!(name = %props.name, sm = props.sm_count, "probing");
    let cfg = if opts.quick {
        BenchConfig::quick()
    } else {
        BenchConfig::full()
    };
    let measured = bench::run_all(&ctx, &props, &cfg, probe_timestamp());
    Ok(profile_from_properties(&props, Some(measured)))
}

fn probe_timestamp() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Device properties as the driver reports them (zeros where it reports
/// nothing), kept apart from the driver so profile assembly can be tested.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceProperties {
    pub name: String,
    pub cc_major: i32,
    pub cc_minor: i32,
    pub sm_count: i32,
    /// Peak SM clock, kHz (CU_DEVICE_ATTRIBUTE_CLOCK_RATE).
    pub clock_khz: i32,
    /// Peak memory clock, kHz (CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE).
    pub memory_clock_khz: i32,
    pub bus_width_bits: i32,
    pub l2_bytes: i32,
    pub total_mem_bytes: u64,
    /// `cuDriverGetVersion`, e.g. 12080.
    pub driver_version: Option<i32>,
}

fn read_properties(ctx: &std::sync::Arc<CudaContext>) -> Result<DeviceProperties, ProbeError> {
    let attr = |a: Attr| {
        ctx.attribute(a).map_err(|source| ProbeError::Driver {
            call: "cuDeviceGetAttribute",
            source,
        })
    };
    let name = ctx.name().map_err(|source| ProbeError::Driver {
        call: "cuDeviceGetName",
        source,
    })?;
    let total_mem = ctx.total_mem().map_err(|source| ProbeError::Driver {
        call: "cuDeviceTotalMem",
        source,
    })?;
    let mut version: std::ffi::c_int = 0;
    // SAFETY: writes one int through a valid pointer.
    let driver_version = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut version) }
        .result()
        .ok()
        .map(|_| version);
    Ok(DeviceProperties {
        name,
        cc_major: attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
        cc_minor: attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        sm_count: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        clock_khz: attr(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?,
        memory_clock_khz: attr(Attr::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?,
        bus_width_bits: attr(Attr::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?,
        l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
        total_mem_bytes: total_mem as u64,
        driver_version,
    })
}

/// Architecture name for a compute capability.
pub fn architecture(cc_major: i32, cc_minor: i32) -> String {
    match (cc_major, cc_minor) {
        (6, _) => "Pascal".into(),
        (7, 0) | (7, 2) => "Volta".into(),
        (7, 5) => "Turing".into(),
        (8, 9) => "Ada Lovelace".into(),
        (8, _) => "Ampere".into(),
        (9, _) => "Hopper".into(),
        (10, _) | (11, _) | (12, _) => "Blackwell".into(),
        (major, minor) => format!("unknown (sm_{major}{minor})"),
    }
}

/// FP32 lanes per SM, the table in the CUDA samples' `_ConvertSMVer2Cores`
/// (`helper_cuda.h`). `None` for architectures it does not list.
pub fn fp32_lanes_per_sm(cc_major: i32, cc_minor: i32) -> Option<u32> {
    match (cc_major, cc_minor) {
        (6, 0) => Some(64),
        (6, 1) | (6, 2) => Some(128),
        (7, 0) | (7, 2) | (7, 5) => Some(64),
        (8, 0) => Some(64),
        (8, 6) | (8, 7) | (8, 9) => Some(128),
        (9, 0) => Some(128),
        (10, 0) | (10, 1) | (10, 3) | (11, 0) | (12, 0) | (12, 1) => Some(128),
        _ => None,
    }
}

const ATTR_SOURCE: &str = "cuDeviceGetAttribute";

fn positive(v: i32) -> Option<u32> {
    u32::try_from(v).ok().filter(|v| *v > 0)
}

/// Build the hardware profile for a probed device. Figures the driver does
/// not report (0) are left out; peak FP32 and memory bandwidth are derived
/// from the attributes, and their sources say how.
pub fn profile_from_properties(props: &DeviceProperties, measured: Option<Measured>) -> HardwareProfile {
    let cc = format!("{}.{}", props.cc_major, props.cc_minor);
    let sm = positive(props.sm_count);
    let clock_mhz = positive(props.clock_khz).map(|k| f64::from(k) / 1000.0);

    let peak_fp32 = match (sm, clock_mhz, fp32_lanes_per_sm(props.cc_major, props.cc_minor)) {
        (Some(sm), Some(mhz), Some(lanes)) => Some(Sourced::new(
            f64::from(sm) * f64::from(lanes) * 2.0 * mhz * 1e6 / 1e12,
            format!(
                "derived: {sm} SMs x {lanes} FP32 lanes/SM for sm_{}{} (CUDA samples' _ConvertSMVer2Cores) x 2 (FMA) x {mhz} MHz peak clock",
                props.cc_major, props.cc_minor
            ),
        )),
        _ => None,
    };
    let bandwidth = match (positive(props.memory_clock_khz), positive(props.bus_width_bits)) {
        (Some(khz), Some(bits)) => Some(Sourced::new(
            2.0 * f64::from(khz) * 1e3 * f64::from(bits) / 8.0 / 1e9,
            format!(
                "derived: 2 (double data rate) x {khz} kHz (CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE) x {bits} bits / 8"
            ),
        )),
        _ => None,
    };

    let mut notes = vec![
        "Probed on a live device by tracecast probe. Tensor-core peaks (TF32, FP16, BF16) are not derivable from device attributes and are left out; see measured.bf16_matmul_tflops.".to_string(),
    ];
    if fp32_lanes_per_sm(props.cc_major, props.cc_minor).is_none() {
        notes.push(format!(
            "Peak FP32 left out: FP32 lanes per SM unknown for sm_{}{}.",
            props.cc_major, props.cc_minor
        ));
    }

    HardwareProfile {
        format_version: FORMAT_VERSION,
        name: props.name.clone(),
        aliases: Vec::new(),
        vendor: Vendor::Nvidia,
        architecture: architecture(props.cc_major, props.cc_minor),
        compute_capability: Some(cc),
        form_factor: None,
        devices_per_package: None,
        compute: Compute {
            sm_count: sm.map(|v| Sourced::new(v, format!("{ATTR_SOURCE}(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)"))),
            base_clock_mhz: None,
            boost_clock_mhz: clock_mhz
                .map(|v| Sourced::new(v, format!("{ATTR_SOURCE}(CU_DEVICE_ATTRIBUTE_CLOCK_RATE), peak clock"))),
            peak_fp32_tflops: peak_fp32,
            peak_fp32_matrix_tflops: None,
            peak_tf32_tflops: None,
            peak_fp16_tflops: None,
            peak_bf16_tflops: None,
            peak_fp64_tflops: None,
        },
        memory: Memory {
            size_gb: (props.total_mem_bytes > 0)
                .then(|| Sourced::new(props.total_mem_bytes as f64 / 1e9, "cuDeviceTotalMem")),
            bandwidth_gbs: bandwidth,
            bus_width_bits: positive(props.bus_width_bits)
                .map(|v| Sourced::new(v, format!("{ATTR_SOURCE}(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)"))),
            l2_mib: positive(props.l2_bytes).map(|v| {
                Sourced::new(
                    f64::from(v) / (1024.0 * 1024.0),
                    format!("{ATTR_SOURCE}(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)"),
                )
            }),
        },
        interconnect: Interconnect::default(),
        measured,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracecast_schemas::hardware::Measurement;

    /// What an A100-SXM4-40GB reports (matches a deviceQuery of one).
    fn a100() -> DeviceProperties {
        DeviceProperties {
            name: "NVIDIA A100-SXM4-40GB".into(),
            cc_major: 8,
            cc_minor: 0,
            sm_count: 108,
            clock_khz: 1_410_000,
            memory_clock_khz: 1_215_000,
            bus_width_bits: 5120,
            l2_bytes: 41_943_040,
            total_mem_bytes: 42_505_273_344,
            driver_version: Some(12080),
        }
    }

    #[test]
    fn profile_from_a100_properties_matches_the_datasheet() {
        let p = profile_from_properties(&a100(), None);
        p.validate().unwrap();
        assert_eq!(p.architecture, "Ampere");
        assert_eq!(p.compute_capability.as_deref(), Some("8.0"));
        assert_eq!(p.compute.sm_count.as_ref().unwrap().value, 108);
        // 108 x 64 x 2 x 1.41 GHz = 19.49 TFLOPS (datasheet: 19.5).
        let fp32 = p.compute.peak_fp32_tflops.as_ref().unwrap().value;
        assert!((fp32 - 19.49).abs() < 0.01, "{fp32}");
        // 2 x 1215 MHz x 5120 bits / 8 = 1555.2 GB/s (datasheet: 1,555).
        let bw = p.memory.bandwidth_gbs.as_ref().unwrap().value;
        assert!((bw - 1555.2).abs() < 0.01, "{bw}");
        assert_eq!(p.memory.l2_mib.as_ref().unwrap().value, 40.0);
        assert!((p.memory.size_gb.as_ref().unwrap().value - 42.505).abs() < 0.001);
        assert!(p.compute.peak_bf16_tflops.is_none());
    }

    #[test]
    fn zero_attributes_are_left_out_not_written_as_zero() {
        let mut props = a100();
        props.memory_clock_khz = 0;
        props.l2_bytes = 0;
        props.clock_khz = 0;
        let p = profile_from_properties(&props, None);
        p.validate().unwrap();
        assert!(p.memory.bandwidth_gbs.is_none());
        assert!(p.memory.l2_mib.is_none());
        assert!(p.compute.boost_clock_mhz.is_none());
        assert!(p.compute.peak_fp32_tflops.is_none());
        assert!(p.memory.bus_width_bits.is_some());
    }

    #[test]
    fn unknown_architecture_gets_no_derived_fp32_peak() {
        let mut props = a100();
        props.cc_major = 42;
        props.cc_minor = 1;
        let p = profile_from_properties(&props, None);
        p.validate().unwrap();
        assert_eq!(p.architecture, "unknown (sm_421)");
        assert!(p.compute.peak_fp32_tflops.is_none());
        assert!(p.notes.iter().any(|n| n.contains("sm_421")));
    }

    #[test]
    fn probed_profile_with_measurements_round_trips_through_toml() {
        let measured = Measured {
            tool: "tracecast-probe test".into(),
            probed_at_unix_s: 1_700_000_000,
            driver_version: Some(12080),
            quick: true,
            d2d_copy_gbs: Measurement::from_samples(&[1300.0, 1310.0, 1290.0], "copy"),
            fp32_fma_tflops: Measurement::from_samples(&[18.9, 19.1], "fma"),
            bf16_matmul_tflops: None,
            skipped: vec!["bf16 matmul: cuBLAS library not found".into()],
        };
        let p = profile_from_properties(&a100(), Some(measured));
        let text = p.to_toml_string().unwrap();
        let back = HardwareProfile::from_toml_str(&text, std::path::Path::new("probe.toml")).unwrap();
        assert_eq!(back, p);
        assert!(text.contains("[measured.d2d_copy_gbs]"), "{text}");
    }

    #[test]
    fn known_architectures() {
        assert_eq!(architecture(7, 0), "Volta");
        assert_eq!(architecture(7, 5), "Turing");
        assert_eq!(architecture(8, 6), "Ampere");
        assert_eq!(architecture(8, 9), "Ada Lovelace");
        assert_eq!(architecture(9, 0), "Hopper");
        assert_eq!(architecture(10, 0), "Blackwell");
        assert_eq!(fp32_lanes_per_sm(9, 0), Some(128));
        assert_eq!(fp32_lanes_per_sm(7, 0), Some(64));
    }

    /// This checks the machine it runs on: without libcuda the probe must
    /// answer NoDriver, not panic inside cudarc.
    #[test]
    fn without_a_driver_probe_says_no_driver() {
        if driver_present() {
            eprintln!("NOTE: skipped: a CUDA driver is present on this machine");
            return;
        }
        let err = probe(&ProbeOptions {
            ordinal: 0,
            quick: true,
        })
        .unwrap_err();
        assert!(matches!(err, ProbeError::NoDriver), "{err}");
        assert_eq!(
            err.to_string(),
            "no CUDA driver found: tracecast probe needs an NVIDIA GPU"
        );
    }
}
