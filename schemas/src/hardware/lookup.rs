//! `--gpu` arguments: a path to a profile or spec sheet, an exact name (as a
//! trace, a datasheet or a file stem writes it), or a short name such as
//! `V100` or `H100` that exactly one profile answers to.

use std::path::Path;

use super::{Catalog, HardwareError, HardwareProfile, normalize_gpu_name};

#[derive(Debug, thiserror::Error)]
pub enum GpuLookupError {
    #[error("GPU `{query}`: no hardware profile by that name; known: {}", known.join(", "))]
    Unknown { query: String, known: Vec<String> },
    #[error("GPU `{query}` is ambiguous: it could be {}; name one of them", candidates.join(" or "))]
    Ambiguous { query: String, candidates: Vec<String> },
    #[error(transparent)]
    File(#[from] HardwareError),
}

/// The words of a name: lower case, split at anything not a letter or digit.
fn words(name: &str) -> Vec<String> {
    normalize_gpu_name(name)
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// Resolve a `--gpu` argument. An existing file is read as a profile or spec
/// sheet; otherwise an exact name wins; otherwise every profile one of whose
/// names (or file stem) contains all the query's words as whole words is a
/// candidate, and exactly one must be.
pub fn lookup_gpu(catalog: &Catalog, query: &str) -> Result<HardwareProfile, GpuLookupError> {
    let path = Path::new(query);
    if path.is_file() {
        return Ok(HardwareProfile::load(path)?);
    }
    if let Some(profile) = catalog.resolve(query) {
        return Ok(profile.clone());
    }
    let wanted = words(query);
    let mut candidates: Vec<&HardwareProfile> = Vec::new();
    if !wanted.is_empty() {
        for (file, profile) in catalog.profiles() {
            let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            let matches = profile.names().chain(std::iter::once(stem)).any(|name| {
                let have = words(name);
                wanted.iter().all(|w| have.contains(w))
            });
            if matches {
                candidates.push(profile);
            }
        }
    }
    match candidates.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(GpuLookupError::Unknown {
            query: query.to_string(),
            known: catalog.profiles().map(|(_, p)| p.name.clone()).collect(),
        }),
        many => Err(GpuLookupError::Ambiguous {
            query: query.to_string(),
            candidates: many.iter().map(|p| p.name.clone()).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn profile(name: &str, aliases: &[&str]) -> HardwareProfile {
        let text = format!(
            "format_version = 1\nname = \"{name}\"\naliases = [{}]\nvendor = \"nvidia\"\narchitecture = \"X\"\n[compute]\n[memory]\n",
            aliases
                .iter()
                .map(|a| format!("\"{a}\""))
                .collect::<Vec<_>>()
                .join(", ")
        );
        HardwareProfile::from_toml_str(&text, Path::new("t.toml")).unwrap()
    }

    fn catalog() -> Catalog {
        let mut cat = Catalog::default();
        for (file, name, aliases) in [
            (
                "a100-sxm4-40gb.toml",
                "NVIDIA A100 SXM4 40GB",
                &["NVIDIA A100-SXM4-40GB"][..],
            ),
            ("a100-sxm4-80gb.toml", "NVIDIA A100 SXM4 80GB", &[][..]),
            (
                "v100-sxm2-32gb.toml",
                "NVIDIA V100 SXM2 32GB",
                &["Tesla V100-SXM2-32GB"][..],
            ),
            ("h100-sxm5-80gb.toml", "NVIDIA H100 SXM5 80GB", &[][..]),
        ] {
            cat.insert(PathBuf::from(file), profile(name, aliases)).unwrap();
        }
        cat
    }

    #[test]
    fn short_names_resolve_when_one_profile_answers() {
        let cat = catalog();
        assert_eq!(lookup_gpu(&cat, "V100").unwrap().name, "NVIDIA V100 SXM2 32GB");
        assert_eq!(lookup_gpu(&cat, "h100").unwrap().name, "NVIDIA H100 SXM5 80GB");
        assert_eq!(lookup_gpu(&cat, "A100 80GB").unwrap().name, "NVIDIA A100 SXM4 80GB");
        assert_eq!(
            lookup_gpu(&cat, "a100-sxm4-40gb").unwrap().name,
            "NVIDIA A100 SXM4 40GB"
        );
    }

    #[test]
    fn ambiguous_names_list_candidates_and_unknown_lists_known() {
        let cat = catalog();
        let err = lookup_gpu(&cat, "A100").unwrap_err().to_string();
        assert!(
            err.contains("ambiguous") && err.contains("A100 SXM4 40GB") && err.contains("A100 SXM4 80GB"),
            "{err}"
        );
        let err = lookup_gpu(&cat, "H10").unwrap_err().to_string();
        assert!(
            err.contains("no hardware profile") && err.contains("H100 SXM5"),
            "{err}"
        );
    }

    #[test]
    fn a_file_argument_is_read_as_a_spec_sheet() {
        let dir = std::env::temp_dir().join(format!("tracecast-lookup-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("NVIDIA_L40.json");
        std::fs::write(
            &file,
            r#"{"Device":"NVIDIA L40","Mem_Bw":864,"Num_Sm":142,"Freq":2490,"SingleFLOPs":90500}"#,
        )
        .unwrap();
        let p = lookup_gpu(&catalog(), file.to_str().unwrap()).unwrap();
        assert_eq!(p.name, "NVIDIA L40");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
