//! The hardware catalog `--hardware DIR` names, else the built-in one
//! (fixtures/hardware, compiled in).

use std::path::Path;

use anyhow::Context;
use tracecast_schemas::hardware::{Catalog, catalog_or_builtin};

pub fn catalog(dir: Option<&Path>) -> anyhow::Result<Catalog> {
    catalog_or_builtin(dir).with_context(|| match dir {
        Some(dir) => format!("hardware profiles in {}", dir.display()),
        None => "the built-in hardware profiles".into(),
    })
}
