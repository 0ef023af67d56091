-- tracecast features, step 1 of 5: the traces this run computes.
--
-- `fx_selected` (trace_id) is registered by tracecast before these files
-- run: a group of the lake's traces not yet in the output directory.
-- tracecast refills it and runs the pipeline once per group (of about
-- --chunk-items GPU items), so memory follows the group, not the lake.
-- Every later view reads the lake through these, so an incremental run
-- touches only the new traces.
--
-- Template values, filled in before DataFusion sees the text:
--   {{W}} window length, {{S}} stride, {{PAD}} = (W - S) / 2 positions on
--   each side of the central items. Lines between `-- @each position` and
--   `-- @end` are repeated for p = 0 .. W-1, with {{p}} the two-digit
--   position and {{off}} = p - PAD its offset from the first central item.
--   SUM_POSITIONS(expr) becomes expr summed over p = 0 .. W-1, and
--   SUM_CENTRAL(expr) over the central p = PAD .. PAD+S-1, with {{p}} in
--   expr standing for p and null terms counting as 0. Full-line comments
--   are dropped.

CREATE VIEW fx_kernels AS
SELECT * FROM kernels
WHERE step_id IS NOT NULL AND trace_id IN (SELECT trace_id FROM fx_selected);

CREATE VIEW fx_memcpy AS
SELECT * FROM memcpy
WHERE step_id IS NOT NULL AND trace_id IN (SELECT trace_id FROM fx_selected);

CREATE VIEW fx_launches AS
SELECT * FROM launches
WHERE trace_id IN (SELECT trace_id FROM fx_selected);

CREATE VIEW fx_ops_in AS
SELECT * FROM ops
WHERE trace_id IN (SELECT trace_id FROM fx_selected);

-- The hardware of each trace: its GPU's name, SM count and compute capability.
CREATE VIEW fx_hardware AS
SELECT t.trace_id,
       t.gpu_name,
       MAX(d.sm_count) AS sm_count,
       CAST(MAX(d.compute_major * 10 + d.compute_minor) AS INT) AS compute_capability
FROM traces t
LEFT JOIN devices d ON d.trace_id = t.trace_id AND d.name = t.gpu_name
WHERE t.trace_id IN (SELECT trace_id FROM fx_selected)
GROUP BY t.trace_id, t.gpu_name;
