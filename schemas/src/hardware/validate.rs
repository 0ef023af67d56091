//! What serde cannot check in a profile: version, names, sources, figures.

use std::collections::HashMap;

use super::profile::parse_compute_capability;
use super::{FORMAT_VERSION, FieldError, HardwareProfile, Measurement, Sourced, normalize_gpu_name};

impl HardwareProfile {
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
        check_float("compute.peak_fp64_tflops", &c.peak_fp64_tflops)?;
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
