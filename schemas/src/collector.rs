//! The Python collector's sidecar manifest (`schemas/FORMATS.md` "Collector
//! manifest"; written by `python/src/tracecast_collector/manifest.py`):
//! recognised at ingest, read for a trace's model name and batch size.

/// `format` of a collector manifest.
pub const MANIFEST_FORMAT: &str = "tracecast-collector-manifest";
/// The `format_version` this build reads.
pub const MANIFEST_VERSION: u64 = 1;
/// A manifest's file name ends in this.
pub const MANIFEST_SUFFIX: &str = ".manifest.json";
