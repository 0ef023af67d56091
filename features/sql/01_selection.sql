-- tracecast features, step 1 of 5: the traces this run computes.
--
-- `fx_selected` (trace_id, trace_key) is registered by tracecast before
-- these files run: a group of the lake's traces not yet in the output
-- directory, each with a small integer `trace_key` that the pipeline joins,
-- sorts and groups on in place of the text trace_id (cheaper to hash and
-- compare; trace_id comes back in step 4).
-- tracecast refills it and runs the pipeline once per group (of about
-- --chunk-items GPU items), so memory follows the group, not the lake.
-- Every later view reads the lake through these, so an incremental run
-- touches only the new traces. Joins name their smaller input first:
-- without statistics for its inputs, DataFusion builds its hash table from
-- the left input as written.
--
-- Template values, filled in before DataFusion sees the text:
--   {{W}} window length, {{S}} stride, {{PAD}} = (W - S) / 2 positions on
--   each side of the central items. Lines between `-- @each position` and
--   `-- @end` are repeated for p = 0 .. W-1, with {{p}} the two-digit
--   position. Full-line comments are dropped.

CREATE VIEW fx_kernels AS
SELECT s.trace_key, k.* EXCLUDE (trace_id)
FROM fx_selected s
JOIN kernels k ON k.trace_id = s.trace_id
WHERE k.step_id IS NOT NULL;

CREATE VIEW fx_memcpy AS
SELECT s.trace_key, k.* EXCLUDE (trace_id)
FROM fx_selected s
JOIN memcpy k ON k.trace_id = s.trace_id
WHERE k.step_id IS NOT NULL;

CREATE VIEW fx_launches AS
SELECT s.trace_key, k.* EXCLUDE (trace_id)
FROM fx_selected s
JOIN launches k ON k.trace_id = s.trace_id;

CREATE VIEW fx_ops_in AS
SELECT s.trace_key, k.* EXCLUDE (trace_id)
FROM fx_selected s
JOIN ops k ON k.trace_id = s.trace_id;

-- The hardware of each trace: its GPU's name, SM count and compute capability.
CREATE VIEW fx_hardware AS
SELECT s.trace_key,
       t.trace_id,
       t.gpu_name,
       MAX(d.sm_count) AS sm_count,
       CAST(MAX(d.compute_major * 10 + d.compute_minor) AS INT) AS compute_capability
FROM traces t
JOIN fx_selected s ON s.trace_id = t.trace_id
LEFT JOIN devices d ON d.trace_id = t.trace_id AND d.name = t.gpu_name
GROUP BY s.trace_key, t.trace_id, t.gpu_name;
