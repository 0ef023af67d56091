-- tracecast features, step 4 of 5: the windows, one row per window.
--
-- Window j of a step has the central items seq j*S .. j*S+S-1 (fewer in
-- the step's last window) and sees W positions, PAD = (W-S)/2 on each side
-- of them. Its row is built on the row of its first central item (seq a
-- multiple of S): position p reads the item p - PAD rows away in the step,
-- null past the step's edges (the padding). Window aggregates add up the
-- positions: SUM_POSITIONS(expr) is expr summed over the W positions and
-- SUM_CENTRAL(expr) over the S central ones, null terms counting as 0.
--
-- Everything is a LEAD over the step (vectorised in DataFusion) and sums
-- over the selected rows; sliding-frame aggregates would be evaluated row
-- by row and cost several times more.

CREATE VIEW fx_windows AS
WITH positioned AS (
  SELECT trace_id, step_id, seq, gpu_span_ns,
-- @each position
         LEAD(family, {{off}}) OVER s AS p{{p}}_family,
         LEAD(op_code, {{off}}) OVER s AS p{{p}}_op_code,
         LEAD(phase, {{off}}) OVER s AS p{{p}}_phase,
         LEAD(op_depth, {{off}}) OVER s AS p{{p}}_op_depth,
         LEAD(flops, {{off}}) OVER s AS p{{p}}_flops,
         LEAD(bytes, {{off}}) OVER s AS p{{p}}_bytes,
         LEAD(in0_numel, {{off}}) OVER s AS p{{p}}_in0_numel,
         LEAD(in1_numel, {{off}}) OVER s AS p{{p}}_in1_numel,
         LEAD(dtype_bytes, {{off}}) OVER s AS p{{p}}_dtype_bytes,
         LEAD(grid, {{off}}) OVER s AS p{{p}}_grid,
         LEAD(block, {{off}}) OVER s AS p{{p}}_block,
         LEAD(registers, {{off}}) OVER s AS p{{p}}_registers,
         LEAD(shared_memory_bytes, {{off}}) OVER s AS p{{p}}_shared_memory_bytes,
         LEAD(occupancy_pct, {{off}}) OVER s AS p{{p}}_occupancy_pct,
         LEAD(launch_delay_ns, {{off}}) OVER s AS p{{p}}_launch_delay_ns,
         LEAD(gap_ns, {{off}}) OVER s AS p{{p}}_gap_ns,
         LEAD(dur_ns, {{off}}) OVER s AS p{{p}}_dur_ns,
         LEAD(contrib_ns, {{off}}) OVER s AS contrib{{p}},
-- @end
         -- The one whole-step frame makes DataFusion evaluate this group a
         -- step at a time rather than streaming it row by row.
         COUNT(*) OVER (PARTITION BY trace_id, step_id ORDER BY seq
                        ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS step_items
  FROM fx_items
  WINDOW s AS (PARTITION BY trace_id, step_id ORDER BY seq)
)
SELECT p.*,
       p.seq / {{S}} AS window_index,
       p.seq AS first_item,
       SUM_CENTRAL(contrib{{p}}) AS target_ns,
       SUM_CENTRAL(CAST(p{{p}}_family IS NOT NULL AS BIGINT)) AS central_count,
       SUM_POSITIONS(CAST(p{{p}}_family IS NOT NULL AS BIGINT)) AS window_items,
       SUM_POSITIONS(p{{p}}_flops) AS window_flops,
       SUM_POSITIONS(p{{p}}_bytes) AS window_bytes,
       SUM_POSITIONS(CAST(p{{p}}_family = 0 AS BIGINT)) AS count_gemm,
       SUM_POSITIONS(CAST(p{{p}}_family = 1 AS BIGINT)) AS count_conv,
       SUM_POSITIONS(CAST(p{{p}}_family = 2 AS BIGINT)) AS count_attention,
       SUM_POSITIONS(CAST(p{{p}}_family = 3 AS BIGINT)) AS count_elementwise,
       SUM_POSITIONS(CAST(p{{p}}_family = 4 AS BIGINT)) AS count_reduction,
       SUM_POSITIONS(CAST(p{{p}}_family = 5 AS BIGINT)) AS count_norm,
       SUM_POSITIONS(CAST(p{{p}}_family = 6 AS BIGINT)) AS count_softmax,
       SUM_POSITIONS(CAST(p{{p}}_family = 7 AS BIGINT)) AS count_copy_memset,
       SUM_POSITIONS(CAST(p{{p}}_family = 8 AS BIGINT)) AS count_communication,
       SUM_POSITIONS(CAST(p{{p}}_family = 9 AS BIGINT)) AS count_optimizer,
       SUM_POSITIONS(CAST(p{{p}}_family = 10 AS BIGINT)) AS count_other,
       CAST(SUM_POSITIONS(CASE WHEN p{{p}}_family = 0 THEN p{{p}}_dur_ns END) AS DOUBLE) / NULLIF(SUM_POSITIONS(p{{p}}_dur_ns), 0) AS share_gemm,
       CAST(SUM_POSITIONS(CASE WHEN p{{p}}_family = 1 THEN p{{p}}_dur_ns END) AS DOUBLE) / NULLIF(SUM_POSITIONS(p{{p}}_dur_ns), 0) AS share_conv,
       CAST(SUM_POSITIONS(CASE WHEN p{{p}}_family = 2 THEN p{{p}}_dur_ns END) AS DOUBLE) / NULLIF(SUM_POSITIONS(p{{p}}_dur_ns), 0) AS share_attention,
       CAST(SUM_POSITIONS(CASE WHEN p{{p}}_family = 3 THEN p{{p}}_dur_ns END) AS DOUBLE) / NULLIF(SUM_POSITIONS(p{{p}}_dur_ns), 0) AS share_elementwise,
       CAST(SUM_POSITIONS(CASE WHEN p{{p}}_family = 4 THEN p{{p}}_dur_ns END) AS DOUBLE) / NULLIF(SUM_POSITIONS(p{{p}}_dur_ns), 0) AS share_reduction,
       CAST(SUM_POSITIONS(CASE WHEN p{{p}}_family = 5 THEN p{{p}}_dur_ns END) AS DOUBLE) / NULLIF(SUM_POSITIONS(p{{p}}_dur_ns), 0) AS share_norm,
       CAST(SUM_POSITIONS(CASE WHEN p{{p}}_family = 6 THEN p{{p}}_dur_ns END) AS DOUBLE) / NULLIF(SUM_POSITIONS(p{{p}}_dur_ns), 0) AS share_softmax,
       CAST(SUM_POSITIONS(CASE WHEN p{{p}}_family = 7 THEN p{{p}}_dur_ns END) AS DOUBLE) / NULLIF(SUM_POSITIONS(p{{p}}_dur_ns), 0) AS share_copy_memset,
       CAST(SUM_POSITIONS(CASE WHEN p{{p}}_family = 8 THEN p{{p}}_dur_ns END) AS DOUBLE) / NULLIF(SUM_POSITIONS(p{{p}}_dur_ns), 0) AS share_communication,
       CAST(SUM_POSITIONS(CASE WHEN p{{p}}_family = 9 THEN p{{p}}_dur_ns END) AS DOUBLE) / NULLIF(SUM_POSITIONS(p{{p}}_dur_ns), 0) AS share_optimizer,
       CAST(SUM_POSITIONS(CASE WHEN p{{p}}_family = 10 THEN p{{p}}_dur_ns END) AS DOUBLE) / NULLIF(SUM_POSITIONS(p{{p}}_dur_ns), 0) AS share_other,
       s.dur_ns AS step_dur_ns,
       s.dur_ns - p.gpu_span_ns AS step_remainder_ns,
       h.gpu_name, h.sm_count, h.compute_capability
FROM positioned p
JOIN steps s ON s.trace_id = p.trace_id AND s.step_id = p.step_id
JOIN fx_hardware h ON h.trace_id = p.trace_id
WHERE p.seq % {{S}} = 0;
