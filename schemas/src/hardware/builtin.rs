//! The profiles in `fixtures/hardware/`, compiled into every build so that
//! `train`, `predict` and `ops` work from any directory.

use std::path::{Path, PathBuf};

use super::{Catalog, HardwareError, HardwareProfile};

macro_rules! builtin {
    ($($file:literal),* $(,)?) => {
        [$(($file, include_str!(concat!("../../../fixtures/hardware/", $file)))),*]
    };
}

/// Every file of fixtures/hardware (a test keeps this list complete).
pub const BUILTIN: [(&str, &str); 24] = builtin!(
    "a10.toml",
    "a100-sxm4-40gb.toml",
    "a100-sxm4-80gb.toml",
    "a30.toml",
    "a40.toml",
    "b200-hgx-180gb.toml",
    "h100-sxm5-80gb.toml",
    "h200-sxm-141gb.toml",
    "h800-sxm5-80gb.toml",
    "l4.toml",
    "l40.toml",
    "l40s.toml",
    "mi210.toml",
    "mi250.toml",
    "mi300x.toml",
    "p40.toml",
    "quadro-gp100.toml",
    "rtx-2080-ti.toml",
    "rtx-3080-ti.toml",
    "rtx-3090.toml",
    "rtx-4090.toml",
    "rtx-a6000.toml",
    "t4.toml",
    "v100-sxm2-32gb.toml",
);

/// The profiles in `dir` where one is given, else the built-in catalog.
pub fn catalog_or_builtin(dir: Option<&Path>) -> Result<Catalog, HardwareError> {
    match dir {
        Some(dir) => Catalog::load_dir(dir),
        None => builtin_catalog(),
    }
}

/// The built-in catalog.
pub fn builtin_catalog() -> Result<Catalog, HardwareError> {
    let mut catalog = Catalog::default();
    for (file, text) in BUILTIN {
        let path = PathBuf::from("fixtures/hardware").join(file);
        let profile = HardwareProfile::from_toml_str(text, &path)?;
        catalog.insert(path, profile)?;
    }
    Ok(catalog)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_catalog_is_every_fixture_file() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/hardware");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".toml"))
            .collect();
        on_disk.sort();
        let builtin: Vec<&str> = BUILTIN.iter().map(|(f, _)| *f).collect();
        assert_eq!(
            on_disk, builtin,
            "add the new profile to BUILTIN in schemas/src/hardware/builtin.rs"
        );
        let catalog = builtin_catalog().unwrap();
        assert!(catalog.resolve("Tesla V100-DGXS-32GB").is_some());
        assert!(catalog.resolve("NVIDIA A100-PG509-200").is_some());
    }

    /// A profile without the tensor-core rates its architecture has is
    /// priced on its FP32 lanes in 16 bits (the RTX 3080 Ti once came out
    /// 1.4x slower than the RTX 3090, nearly the same chip): every NVIDIA
    /// profile with an FP32 peak states FP16 from Volta (7.0) on, and TF32
    /// and BF16 from Ampere (8.0) on.
    #[test]
    fn nvidia_profiles_state_the_tensor_rates_of_their_architecture() {
        for (file, text) in BUILTIN {
            let p = HardwareProfile::from_toml_str(text, Path::new(file)).unwrap();
            let Some(cc) = p.compute_capability.as_deref().and_then(|c| c.parse::<f64>().ok()) else {
                continue;
            };
            let c = &p.compute;
            if p.vendor != crate::hardware::Vendor::Nvidia || c.peak_fp32_tflops.is_none() {
                continue;
            }
            if cc >= 7.0 {
                assert!(
                    c.peak_fp16_tflops.is_some(),
                    "{file}: compute capability {cc}, no FP16 tensor rate"
                );
            }
            if cc >= 8.0 {
                assert!(
                    c.peak_tf32_tflops.is_some() && c.peak_bf16_tflops.is_some(),
                    "{file}: compute capability {cc}, no TF32 or BF16 tensor rate"
                );
            }
        }
    }
}
