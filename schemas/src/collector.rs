//! The Python collector's sidecar manifest (`schemas/FORMATS.md` "Collector
//! manifest"; written by `python/src/tracecast_collector/manifest.py`):
//! recognised at ingest, read for a trace's model name and batch size.

/// `format` of a collector manifest.
pub const MANIFEST_FORMAT: &str = "tracecast-collector-manifest";
/// The `format_version` this build reads.
pub const MANIFEST_VERSION: u64 = 1;
/// A manifest's file name ends in this.
pub const MANIFEST_SUFFIX: &str = ".manifest.json";

/// Compressions a trace may have been stored with after its manifest was
/// written (the corpus in `bench/corpus` is recompressed with zstd).
const COMPRESSION_SUFFIXES: &[&str] = &[".gz", ".zst"];

/// Whether `file` is the trace a manifest's `trace_file` names, whatever
/// compression either name carries.
pub fn names_trace(trace_file: &str, file: &str) -> bool {
    fn bare(name: &str) -> &str {
        COMPRESSION_SUFFIXES
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(name)
    }
    bare(trace_file) == bare(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recompressed_trace_keeps_its_manifest() {
        assert!(names_trace(
            "m__bs8__fp32.pt.trace.json.gz",
            "m__bs8__fp32.pt.trace.json.zst"
        ));
        assert!(names_trace(
            "m__bs8__fp32.pt.trace.json.gz",
            "m__bs8__fp32.pt.trace.json"
        ));
        assert!(!names_trace(
            "m__bs8__fp32.pt.trace.json.gz",
            "m__bs16__fp32.pt.trace.json.gz"
        ));
        assert!(
            !names_trace("a.json.gz", "a.json.gz.zst"),
            "one suffix is stripped, not a chain"
        );
    }
}
