//! The hardware catalog `--hardware DIR` names, else the built-in one
//! (fixtures/hardware, compiled in).

use std::path::Path;

use anyhow::Context;
use tracecast_schemas::hardware::{Catalog, builtin_catalog};

pub fn catalog(dir: Option<&Path>) -> anyhow::Result<Catalog> {
    match dir {
        Some(dir) => Catalog::load_dir(dir).with_context(|| format!("hardware profiles in {}", dir.display())),
        None => Ok(builtin_catalog()?),
    }
}
