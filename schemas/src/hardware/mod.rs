//! Hardware profiles: one TOML file per GPU model (`fixtures/hardware/*.toml`),
//! written by hand from vendor datasheets or by `tracecast probe` from a live
//! device. The predictor reads them to price a trace on another GPU; the
//! planner reads them to name GPU types.
//!
//! Every figure is a [`Sourced`] value: the number and where it came from
//! (a datasheet's name and URL, or the driver call that reported it), so a
//! reader can check it and a figure nobody could source is simply absent.
//! The format is documented in `schemas/FORMATS.md` ("Hardware profile").

mod builtin;
mod catalog;
mod error;
mod lookup;
mod profile;
mod spec_sheet;
mod validate;

pub use builtin::{builtin_catalog, catalog_or_builtin};
pub use catalog::{Catalog, normalize_gpu_name};
pub use error::{FieldError, HardwareError};
pub use lookup::{GpuLookupError, lookup_gpu};
pub use profile::{Compute, HardwareProfile, Interconnect, Measured, Measurement, Memory, Sourced, Vendor};
pub use spec_sheet::is_spec_sheet;

/// Version of the hardware-profile file format. Bump it when a field is
/// removed or changes meaning; adding an optional field does not.
pub const FORMAT_VERSION: u32 = 1;

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

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
