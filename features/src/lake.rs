use std::path::Path;
use std::sync::Arc;

use datafusion::datasource::MemTable;
use datafusion::execution::memory_pool::FairSpillPool;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use tracecast_schemas::lake;

use crate::FeaturesError;

/// Views over the lake tables, defined in SQL so analysts can read them.
const VIEWS: &str = include_str!("views.sql");

#[derive(Debug, Clone, Default)]
pub struct LakeOptions {
    /// Memory DataFusion may use before spilling to disk (bytes); `None` = no limit.
    pub memory_limit: Option<usize>,
}

/// Names under which the lake's tables and views are queryable.
pub fn table_names() -> Vec<&'static str> {
    lake::TABLES.iter().map(|t| t.name).chain(["et_op_links"]).collect()
}

/// A DataFusion session with every lake table registered, and tracecast's
/// SQL functions (`op_flops`, `op_bytes`, `input_numel`, `dtype_bytes`,
/// `name_code`). Tables the lake
/// has no files for yet are registered empty, with their schema, so queries
/// over them return no rows instead of failing.
pub async fn open_lake(dir: &Path, options: &LakeOptions) -> Result<SessionContext, FeaturesError> {
    if !dir.is_dir() {
        return Err(FeaturesError::NoLake(dir.display().to_string()));
    }
    let config = SessionConfig::new().with_information_schema(true);
    let mut runtime = RuntimeEnvBuilder::new();
    if let Some(limit) = options.memory_limit {
        runtime = runtime.with_memory_pool(Arc::new(FairSpillPool::new(limit)));
    }
    let ctx = SessionContext::new_with_config_rt(config, runtime.build_arc()?);
    crate::udf::register(&ctx);
    for def in lake::TABLES {
        let folder = dir.join(def.name);
        // Without the `tracecast.*` file metadata: DataFusion refuses plans
        // where inputs of one union or join carry different metadata.
        let schema = Arc::new(def.schema().as_ref().clone().with_metadata(Default::default()));
        let has_files = std::fs::read_dir(&folder).is_ok_and(|mut entries| {
            entries.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "parquet")))
        });
        if has_files {
            let options = ParquetReadOptions::default().schema(&schema);
            let url = format!("{}/", folder.display());
            ctx.register_parquet(def.name, &url, options).await?;
        } else {
            ctx.register_table(def.name, Arc::new(MemTable::try_new(schema, vec![vec![]])?))?;
        }
    }
    for statement in VIEWS.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        ctx.sql(statement).await?;
    }
    Ok(ctx)
}
