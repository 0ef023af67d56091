//! The bundled hardware catalog (`fixtures/hardware/`): every profile loads
//! and validates, the GPUs the predictor issue names are there, and every GPU
//! named in the shared trace corpus resolves to a profile whose compute
//! capability matches what the trace reports.

use std::path::{Path, PathBuf};

use tracecast_schemas::hardware::{Catalog, HardwareProfile, Vendor};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn catalog() -> Catalog {
    let dir = root().join("fixtures/hardware");
    Catalog::load_dir(&dir).unwrap_or_else(|e| panic!("{e}"))
}

/// Profiles allowed to lack core figures, each explained in its `notes`.
const INCOMPLETE: &[&str] = &["h800-sxm5-80gb"];

#[test]
fn every_profile_loads_validates_and_round_trips() {
    let cat = catalog();
    assert!(cat.len() >= 14, "only {} profiles", cat.len());
    for (path, profile) in cat.profiles() {
        let text = profile.to_toml_string().unwrap();
        let back = HardwareProfile::from_toml_str(&text, path).unwrap();
        assert_eq!(&back, profile, "{} does not round-trip", path.display());

        let stem = path.file_stem().unwrap().to_str().unwrap();
        if INCOMPLETE.contains(&stem) {
            assert!(
                profile.notes.iter().any(|n| n.starts_with("INCOMPLETE")),
                "{} is allowed to be incomplete but does not say so",
                path.display()
            );
            continue;
        }
        // What the predictor needs to price a trace on this GPU.
        let missing: Vec<&str> = [
            ("compute.peak_fp32_tflops", profile.compute.peak_fp32_tflops.is_some()),
            ("memory.bandwidth_gbs", profile.memory.bandwidth_gbs.is_some()),
            ("memory.size_gb", profile.memory.size_gb.is_some()),
            ("compute_capability", profile.compute_capability.is_some()),
        ]
        .into_iter()
        .filter(|(_, present)| !present)
        .map(|(f, _)| f)
        .collect();
        assert!(missing.is_empty(), "{}: missing {missing:?}", path.display());
    }
}

#[test]
fn peak_fp32_agrees_with_lanes_times_clock_where_both_are_given() {
    // An independent check on transcription: peak FP32 = SMs x FP32 lanes per
    // SM x 2 (FMA) x boost clock. Lanes per SM/CU by architecture: NVIDIA
    // Volta/Ampere GA100/Turing have 64, Ampere GA10x (compute capability
    // 8.6), Ada and Hopper 128; AMD CDNA 2 and 3 CUs do 128 and 256 FP32 FLOP
    // per clock.
    let flop_per_clk_per_unit = |p: &tracecast_schemas::hardware::HardwareProfile| -> Option<f64> {
        match (p.architecture.as_str(), p.compute_capability.as_deref()) {
            ("Ampere", Some("8.6")) | ("Ada Lovelace", _) => Some(256.0),
            ("Volta" | "Ampere" | "Turing", _) => Some(128.0),
            ("Hopper", _) => Some(256.0),
            ("CDNA 2", _) => Some(128.0),
            ("CDNA 3", _) => Some(256.0),
            _ => None,
        }
    };
    let mut checked = 0;
    for (path, p) in catalog().profiles() {
        let (Some(sm), Some(clk), Some(peak), Some(per)) = (
            &p.compute.sm_count,
            &p.compute.boost_clock_mhz,
            &p.compute.peak_fp32_tflops,
            flop_per_clk_per_unit(p),
        ) else {
            continue;
        };
        let derived = f64::from(sm.value) * per * clk.value * 1e6 / 1e12;
        let rel = (derived - peak.value).abs() / peak.value;
        assert!(
            rel < 0.01,
            "{}: {} TFLOPS listed, {derived:.2} from SMs x clock",
            path.display(),
            peak.value
        );
        checked += 1;
    }
    assert!(checked >= 7, "only {checked} profiles had SMs, clock and peak");
}

#[test]
fn the_issue_list_of_gpus_is_covered() {
    let cat = catalog();
    for name in [
        "Tesla V100-SXM2-32GB",
        "NVIDIA A100-SXM4-40GB",
        "NVIDIA A100-SXM4-80GB",
        "NVIDIA H100 80GB HBM3",
        "NVIDIA H200",
        "NVIDIA H800",
        "NVIDIA B200",
        "Tesla T4",
        "NVIDIA L4",
        "NVIDIA GeForce RTX 2080 Ti",
        "AMD Instinct MI250",
        "AMD Instinct MI300X",
        "Quadro GP100",
        "AMD Instinct MI210",
    ] {
        assert!(cat.resolve(name).is_some(), "{name} does not resolve");
    }
    // Variants must not collapse into one profile.
    let a40 = cat.resolve("a100-sxm4-40gb").unwrap();
    let a80 = cat.resolve("A100 SXM4 80GB").unwrap();
    assert_ne!(a40.name, a80.name);
    // File stems are keys ("MI300X" finds mi300x.toml), but nothing fuzzier.
    assert_eq!(
        cat.resolve("MI300X").map(|p| p.name.as_str()),
        Some("AMD Instinct MI300X")
    );
    assert_eq!(cat.resolve("MI300").map(|p| p.name.as_str()), None, "no fuzzy matching");
    assert_eq!(
        cat.resolve("H100 PCIe").map(|p| p.name.as_str()),
        None,
        "no fuzzy matching"
    );
    assert_eq!(cat.resolve("amd instinct mi300x").unwrap().vendor, Vendor::Amd);
}

/// GPU names and compute capabilities from the "GPU (deviceProperties)"
/// column of the shared trace catalog, e.g. "8× NVIDIA A100-PG509-200 (cc 8.0)".
fn gpus_in_trace_catalog(markdown: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut gpu_col = None;
    for line in markdown.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if gpu_col.is_none() {
            gpu_col = cells.iter().position(|c| c.starts_with("GPU (deviceProperties)"));
            continue;
        }
        let Some(col) = gpu_col else { continue };
        if !line.starts_with('|') || cells.len() <= col {
            continue;
        }
        let cell = cells[col];
        // "none listed", "n/a (ET)" and the separator row carry no GPU.
        let Some((count_part, rest)) = cell.split_once('×') else {
            continue;
        };
        if count_part.trim().parse::<u32>().is_err() {
            continue;
        }
        let rest = rest.trim();
        let (name, cc) = match rest.rsplit_once("(cc ") {
            Some((name, cc)) => (name.trim(), cc.trim_end_matches(')').trim()),
            None => (rest, ""),
        };
        out.push((name.to_string(), cc.to_string()));
    }
    out
}

#[test]
fn every_gpu_in_the_shared_trace_catalog_resolves() {
    let path = root().join("../shared/traces/CATALOG.md");
    let Ok(markdown) = std::fs::read_to_string(&path) else {
        eprintln!(
            "NOTE: skipped: {} is not there (run with the shared data checked out beside the repo)",
            path.display()
        );
        return;
    };
    let gpus = gpus_in_trace_catalog(&markdown);
    assert!(
        gpus.len() >= 10,
        "parsed only {} GPU cells from {}",
        gpus.len(),
        path.display()
    );
    let cat = catalog();
    let mut distinct: Vec<&(String, String)> = gpus.iter().collect();
    distinct.sort();
    distinct.dedup();
    for (name, cc) in distinct {
        let profile = cat
            .resolve(name)
            .unwrap_or_else(|| panic!("trace GPU `{name}` has no hardware profile"));
        if !cc.is_empty() {
            assert_eq!(
                profile.compute_capability.as_deref(),
                Some(cc.as_str()),
                "`{name}` resolves to {} whose compute capability differs from the trace's",
                profile.name
            );
        }
    }
}

#[test]
fn trace_catalog_parser_reads_the_gpu_column() {
    let md = "| # | Local file | GPU (deviceProperties) | Notes |\n|---|---|---|---|\n\
              | 1 | a | 4× AMD Radeon Graphics (cc 9.0) | x |\n\
              | 2 | b | none listed | y |\n\
              | 3 | c | n/a (ET) | z |\n";
    assert_eq!(
        gpus_in_trace_catalog(md),
        vec![("AMD Radeon Graphics".to_string(), "9.0".to_string())]
    );
}

/// NVIDIA's bfloat16 tensor cores came with compute capability 8.0
/// (Ampere): a profile from there on that gives a float16 tensor rate gives
/// the bfloat16 one too, or `--precision bf16` would say PyTorch emulates it
/// there; one before it gives none.
#[test]
fn nvidia_profiles_give_a_bfloat16_rate_from_ampere_on_only() {
    for (_, profile) in catalog().profiles() {
        if profile.vendor != Vendor::Nvidia || profile.compute.peak_fp16_tflops.is_none() {
            continue;
        }
        let ampere_or_later = profile.compute_capability_pair().is_some_and(|cc| cc >= (8, 0));
        assert_eq!(
            profile.peak_bf16_flops().is_some(),
            ampere_or_later,
            "{}: compute capability {:?}",
            profile.name,
            profile.compute_capability
        );
    }
}
