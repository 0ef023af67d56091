-- tracecast features, step 1 of 5: the traces this run computes.
--
-- `selected_trace_key(trace_id)` is a function tracecast registers: for a
-- trace of the group being computed (traces of the lake not yet in the
-- output directory) it returns a small integer key, for any other trace
-- null. tracecast computes the traces in groups (of about --chunk-items GPU
-- items), changing the selection and running the pipeline once per group, so
-- memory follows the group, not the lake. The pipeline joins, sorts and
-- groups on the integer `trace_key` in place of the text trace_id (cheaper to
-- hash and compare; trace_id comes back in step 4). Filtering on it, rather
-- than joining the lake tables to a list of ids, spares a copy of every row.
-- Every later view reads the lake through these, so an incremental run
-- computes only the new traces; with the filter pushed into the Parquet
-- reader (the first SET below), the other traces' rows are decoded only
-- as far as the filter's columns. Joins name their smaller input first:
-- DataFusion builds one hash table from the left input and streams the
-- right one through it. The other SETs keep that plan: from its estimates
-- of the filtered inputs' sizes DataFusion would otherwise swap some joins
-- to build from the items, or split both inputs by hash first.
--
-- Template values, filled in before DataFusion sees the text:
--   {{W}} window length, {{S}} stride, {{PAD}} = (W - S) / 2 positions on
--   each side of the central items. Lines between `-- @each position` and
--   `-- @end` are repeated for p = 0 .. W-1, with {{p}} the two-digit
--   position. {{family:NAME}} and {{phase:NAME}} are the codes of a
--   kernel family (gemm, ..., other) and an operator phase (forward,
--   backward, optimizer): their positions in FAMILIES and PHASES of
--   schemas/src/features.rs, the one place codes are defined. Full-line
--   comments are dropped.

SET datafusion.execution.parquet.pushdown_filters = true;
SET datafusion.optimizer.join_reordering = false;
SET datafusion.optimizer.hash_join_single_partition_threshold = 1000000000000;
SET datafusion.optimizer.hash_join_single_partition_threshold_rows = 1000000000000;

CREATE VIEW fx_kernels AS
SELECT selected_trace_key(trace_id) AS trace_key, * EXCLUDE (trace_id)
FROM kernels
WHERE selected_trace_key(trace_id) IS NOT NULL AND step_id IS NOT NULL;

CREATE VIEW fx_memcpy AS
SELECT selected_trace_key(trace_id) AS trace_key, * EXCLUDE (trace_id)
FROM memcpy
WHERE selected_trace_key(trace_id) IS NOT NULL AND step_id IS NOT NULL;

CREATE VIEW fx_launches AS
SELECT selected_trace_key(trace_id) AS trace_key, * EXCLUDE (trace_id)
FROM launches
WHERE selected_trace_key(trace_id) IS NOT NULL;

CREATE VIEW fx_ops_in AS
SELECT selected_trace_key(trace_id) AS trace_key, * EXCLUDE (trace_id)
FROM ops
WHERE selected_trace_key(trace_id) IS NOT NULL;

-- The hardware of each trace: its GPU's name, SM count and compute capability.
CREATE VIEW fx_hardware AS
SELECT selected_trace_key(t.trace_id) AS trace_key,
       t.trace_id,
       t.gpu_name,
       MAX(d.sm_count) AS sm_count,
       CAST(MAX(d.compute_major * 10 + d.compute_minor) AS INT) AS compute_capability
FROM traces t
LEFT JOIN devices d ON d.trace_id = t.trace_id AND d.name = t.gpu_name
WHERE selected_trace_key(t.trace_id) IS NOT NULL
GROUP BY t.trace_id, t.gpu_name;
