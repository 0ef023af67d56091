-- tracecast features, step 4 of 5: the windows, one row per window.
--
-- Window j of a step has the central items seq j*S .. j*S+S-1 (fewer in
-- the step's last window) and sees W positions, PAD = (W-S)/2 on each side
-- of them: position p is the item seq j*S + p - PAD, null past the step's
-- edges (the padding).
--
-- Three aggregates, registered by tracecast for the run's W and S, lay a
-- step's items out as its windows; each returns the step's windows in
-- order, as a list:
--   window_positions(value, seq): per window, a struct of the value at
--     positions p00 .. p{W-1};
--   window_sum(value, seq): per window, the value summed over its W
--     positions; central_sum(value, seq): over its S central ones (nulls
--     and padding count as 0).
-- The step's measured time and hardware are joined to the items, which
-- are narrow: joined to the windows, they would copy every window's values.

CREATE VIEW fx_windows AS
WITH step_context AS (
  SELECT h.trace_key, h.trace_id, s.step_id, s.dur_ns, h.gpu_name, h.sm_count, h.compute_capability
  FROM steps s
  JOIN fx_hardware h ON h.trace_id = s.trace_id
),
per_step AS (
  SELECT MAX(c.trace_id) AS trace_id, i.step_id,
         COUNT(*) AS step_items,
         MAX(i.start_ns + i.dur_ns) - MIN(i.start_ns) AS gpu_span_ns,
         MAX(c.dur_ns) AS step_dur_ns,
         MAX(c.gpu_name) AS gpu_name,
         MAX(c.sm_count) AS sm_count,
         MAX(c.compute_capability) AS compute_capability,
         range(0, (COUNT(*) + {{S}} - 1) / {{S}}) AS window_index,
         window_positions(i.family, i.seq) AS family_at,
         window_positions(i.op_code, i.seq) AS op_code_at,
         window_positions(i.phase, i.seq) AS phase_at,
         window_positions(i.op_depth, i.seq) AS op_depth_at,
         window_positions(i.flops, i.seq) AS flops_at,
         window_positions(i.bytes, i.seq) AS bytes_at,
         window_positions(i.in0_numel, i.seq) AS in0_numel_at,
         window_positions(i.in1_numel, i.seq) AS in1_numel_at,
         window_positions(i.dtype_bytes, i.seq) AS dtype_bytes_at,
         window_positions(i.product_alignment, i.seq) AS product_alignment_at,
         window_positions(i.conv_group_width, i.seq) AS conv_group_width_at,
         window_positions(i.grid, i.seq) AS grid_at,
         window_positions(i.block, i.seq) AS block_at,
         window_positions(i.registers, i.seq) AS registers_at,
         window_positions(i.shared_memory_bytes, i.seq) AS shared_memory_bytes_at,
         window_positions(i.occupancy_pct, i.seq) AS occupancy_pct_at,
         window_positions(i.launch_delay_ns, i.seq) AS launch_delay_ns_at,
         window_positions(i.gap_ns, i.seq) AS gap_ns_at,
         window_positions(i.dur_ns, i.seq) AS dur_ns_at,
         central_sum(i.contrib_ns, i.seq)                             AS target_ns,
         central_sum(CAST(1 AS BIGINT), i.seq)                        AS central_count,
         window_sum(CAST(1 AS BIGINT), i.seq)                         AS window_items,
         window_sum(i.flops, i.seq)                                   AS window_flops,
         window_sum(i.bytes, i.seq)                                   AS window_bytes,
         window_sum(CAST(i.family = {{family:gemm}} AS BIGINT), i.seq)              AS count_gemm,
         window_sum(CAST(i.family = {{family:conv}} AS BIGINT), i.seq)              AS count_conv,
         window_sum(CAST(i.family = {{family:attention}} AS BIGINT), i.seq)              AS count_attention,
         window_sum(CAST(i.family = {{family:elementwise}} AS BIGINT), i.seq)              AS count_elementwise,
         window_sum(CAST(i.family = {{family:reduction}} AS BIGINT), i.seq)              AS count_reduction,
         window_sum(CAST(i.family = {{family:norm}} AS BIGINT), i.seq)              AS count_norm,
         window_sum(CAST(i.family = {{family:softmax}} AS BIGINT), i.seq)              AS count_softmax,
         window_sum(CAST(i.family = {{family:copy_memset}} AS BIGINT), i.seq)              AS count_copy_memset,
         window_sum(CAST(i.family = {{family:communication}} AS BIGINT), i.seq)              AS count_communication,
         window_sum(CAST(i.family = {{family:optimizer}} AS BIGINT), i.seq)              AS count_optimizer,
         window_sum(CAST(i.family = {{family:other}} AS BIGINT), i.seq)             AS count_other,
         window_sum(i.dur_ns, i.seq)                                  AS window_dur_ns,
         window_sum(CASE WHEN i.family = {{family:gemm}} THEN i.dur_ns END, i.seq)  AS gemm_dur_ns,
         window_sum(CASE WHEN i.family = {{family:conv}} THEN i.dur_ns END, i.seq)  AS conv_dur_ns,
         window_sum(CASE WHEN i.family = {{family:attention}} THEN i.dur_ns END, i.seq)  AS attention_dur_ns,
         window_sum(CASE WHEN i.family = {{family:elementwise}} THEN i.dur_ns END, i.seq)  AS elementwise_dur_ns,
         window_sum(CASE WHEN i.family = {{family:reduction}} THEN i.dur_ns END, i.seq)  AS reduction_dur_ns,
         window_sum(CASE WHEN i.family = {{family:norm}} THEN i.dur_ns END, i.seq)  AS norm_dur_ns,
         window_sum(CASE WHEN i.family = {{family:softmax}} THEN i.dur_ns END, i.seq)  AS softmax_dur_ns,
         window_sum(CASE WHEN i.family = {{family:copy_memset}} THEN i.dur_ns END, i.seq)  AS copy_memset_dur_ns,
         window_sum(CASE WHEN i.family = {{family:communication}} THEN i.dur_ns END, i.seq)  AS communication_dur_ns,
         window_sum(CASE WHEN i.family = {{family:optimizer}} THEN i.dur_ns END, i.seq)  AS optimizer_dur_ns,
         window_sum(CASE WHEN i.family = {{family:other}} THEN i.dur_ns END, i.seq) AS other_dur_ns
  FROM step_context c
  JOIN fx_items i ON i.trace_key = c.trace_key AND i.step_id = c.step_id
  GROUP BY i.trace_key, i.step_id
),
windows AS (
  SELECT trace_id, step_id, step_items, gpu_span_ns, step_dur_ns, gpu_name, sm_count, compute_capability,
         unnest(window_index) AS window_index,
         unnest(family_at) AS family_at,
         unnest(op_code_at) AS op_code_at,
         unnest(phase_at) AS phase_at,
         unnest(op_depth_at) AS op_depth_at,
         unnest(flops_at) AS flops_at,
         unnest(bytes_at) AS bytes_at,
         unnest(in0_numel_at) AS in0_numel_at,
         unnest(in1_numel_at) AS in1_numel_at,
         unnest(dtype_bytes_at) AS dtype_bytes_at,
         unnest(product_alignment_at) AS product_alignment_at,
         unnest(conv_group_width_at) AS conv_group_width_at,
         unnest(grid_at) AS grid_at,
         unnest(block_at) AS block_at,
         unnest(registers_at) AS registers_at,
         unnest(shared_memory_bytes_at) AS shared_memory_bytes_at,
         unnest(occupancy_pct_at) AS occupancy_pct_at,
         unnest(launch_delay_ns_at) AS launch_delay_ns_at,
         unnest(gap_ns_at) AS gap_ns_at,
         unnest(dur_ns_at) AS dur_ns_at,
         unnest(target_ns) AS target_ns,
         unnest(central_count) AS central_count,
         unnest(window_items) AS window_items,
         unnest(window_flops) AS window_flops,
         unnest(window_bytes) AS window_bytes,
         unnest(count_gemm) AS count_gemm,
         unnest(count_conv) AS count_conv,
         unnest(count_attention) AS count_attention,
         unnest(count_elementwise) AS count_elementwise,
         unnest(count_reduction) AS count_reduction,
         unnest(count_norm) AS count_norm,
         unnest(count_softmax) AS count_softmax,
         unnest(count_copy_memset) AS count_copy_memset,
         unnest(count_communication) AS count_communication,
         unnest(count_optimizer) AS count_optimizer,
         unnest(count_other) AS count_other,
         unnest(window_dur_ns) AS window_dur_ns,
         unnest(gemm_dur_ns) AS gemm_dur_ns,
         unnest(conv_dur_ns) AS conv_dur_ns,
         unnest(attention_dur_ns) AS attention_dur_ns,
         unnest(elementwise_dur_ns) AS elementwise_dur_ns,
         unnest(reduction_dur_ns) AS reduction_dur_ns,
         unnest(norm_dur_ns) AS norm_dur_ns,
         unnest(softmax_dur_ns) AS softmax_dur_ns,
         unnest(copy_memset_dur_ns) AS copy_memset_dur_ns,
         unnest(communication_dur_ns) AS communication_dur_ns,
         unnest(optimizer_dur_ns) AS optimizer_dur_ns,
         unnest(other_dur_ns) AS other_dur_ns
  FROM per_step
)
SELECT trace_id, step_id, window_index,
       window_index * {{S}} AS first_item,
       central_count, target_ns, window_items, window_flops, window_bytes,
       count_gemm,
       count_conv,
       count_attention,
       count_elementwise,
       count_reduction,
       count_norm,
       count_softmax,
       count_copy_memset,
       count_communication,
       count_optimizer,
       count_other,
       CAST(gemm_dur_ns AS DOUBLE) / NULLIF(window_dur_ns, 0) AS share_gemm,
       CAST(conv_dur_ns AS DOUBLE) / NULLIF(window_dur_ns, 0) AS share_conv,
       CAST(attention_dur_ns AS DOUBLE) / NULLIF(window_dur_ns, 0) AS share_attention,
       CAST(elementwise_dur_ns AS DOUBLE) / NULLIF(window_dur_ns, 0) AS share_elementwise,
       CAST(reduction_dur_ns AS DOUBLE) / NULLIF(window_dur_ns, 0) AS share_reduction,
       CAST(norm_dur_ns AS DOUBLE) / NULLIF(window_dur_ns, 0) AS share_norm,
       CAST(softmax_dur_ns AS DOUBLE) / NULLIF(window_dur_ns, 0) AS share_softmax,
       CAST(copy_memset_dur_ns AS DOUBLE) / NULLIF(window_dur_ns, 0) AS share_copy_memset,
       CAST(communication_dur_ns AS DOUBLE) / NULLIF(window_dur_ns, 0) AS share_communication,
       CAST(optimizer_dur_ns AS DOUBLE) / NULLIF(window_dur_ns, 0) AS share_optimizer,
       CAST(other_dur_ns AS DOUBLE) / NULLIF(window_dur_ns, 0) AS share_other,
       step_items, step_dur_ns,
       step_dur_ns - gpu_span_ns AS step_remainder_ns,
       gpu_name, sm_count, compute_capability
-- The per-position columns come last, as in the table's schema (so no
-- column is reordered or cast on the way out); hence the leading commas.
-- @each position
       , family_at['p{{p}}'] AS p{{p}}_family
       , op_code_at['p{{p}}'] AS p{{p}}_op_code
       , phase_at['p{{p}}'] AS p{{p}}_phase
       , op_depth_at['p{{p}}'] AS p{{p}}_op_depth
       , flops_at['p{{p}}'] AS p{{p}}_flops
       , bytes_at['p{{p}}'] AS p{{p}}_bytes
       , in0_numel_at['p{{p}}'] AS p{{p}}_in0_numel
       , in1_numel_at['p{{p}}'] AS p{{p}}_in1_numel
       , dtype_bytes_at['p{{p}}'] AS p{{p}}_dtype_bytes
       , product_alignment_at['p{{p}}'] AS p{{p}}_product_alignment
       , conv_group_width_at['p{{p}}'] AS p{{p}}_conv_group_width
       , grid_at['p{{p}}'] AS p{{p}}_grid
       , block_at['p{{p}}'] AS p{{p}}_block
       , registers_at['p{{p}}'] AS p{{p}}_registers
       , shared_memory_bytes_at['p{{p}}'] AS p{{p}}_shared_memory_bytes
       , occupancy_pct_at['p{{p}}'] AS p{{p}}_occupancy_pct
       , launch_delay_ns_at['p{{p}}'] AS p{{p}}_launch_delay_ns
       , gap_ns_at['p{{p}}'] AS p{{p}}_gap_ns
       , dur_ns_at['p{{p}}'] AS p{{p}}_dur_ns
-- @end
FROM windows;
