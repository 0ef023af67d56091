-- tracecast features, step 3 of 5: each step's GPU sequence, one row per item.
--
-- Items are the step's kernels and its memory copies and sets. Issue order:
-- by GPU start; at equal starts kernels before copies, kernels by
-- kernel_id, copies by stream, correlation and duration. `seq` numbers the
-- items of a step from 0 in that order.
--
-- An item's wall time `contrib_ns` runs from its start to the next item's
-- start (its duration plus the gap after it, the gap negative where the next
-- item overlaps); the last item's runs to the end of the step's GPU work
-- (the latest end of any item, which the running maximum of item ends
-- reaches at the last item). So the contributions of a step add up to its
-- GPU span exactly.

CREATE VIEW fx_gpu AS
SELECT trace_key, step_id, start_ns, dur_ns,
       0 AS item_kind, kernel_id AS tie_1, CAST(NULL AS BIGINT) AS tie_2,
       name, is_communication, op_id, launch_id,
       grid_x * grid_y * grid_z AS grid,
       block_x * block_y * block_z AS block,
       registers_per_thread AS registers,
       shared_memory_bytes, occupancy_pct,
       CAST(NULL AS BIGINT) AS copy_bytes
FROM fx_kernels
UNION ALL
SELECT trace_key, step_id, start_ns, dur_ns,
       1 AS item_kind, stream AS tie_1, correlation AS tie_2,
       name, false AS is_communication, op_id, launch_id,
       CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT),
       CAST(NULL AS DOUBLE),
       bytes AS copy_bytes
FROM fx_memcpy;

-- Kernel families, by name (lower case), in this order of precedence.
-- `{{family:NAME}}` is the family's code: its index in tracecast's one
-- family list (FAMILIES in schemas/src/features.rs), filled in when the
-- file is expanded. Copies and sets (item_kind 1) are copy_memset whatever
-- their name; then communication kernels are communication; then kernels
-- of the optimizer phase are optimizer whatever their name. The name rules
-- run once per distinct name: a step repeats a few hundred names thousands
-- of times, and the names are long.
CREATE VIEW fx_name_families AS
SELECT name,
       CAST(CASE
         WHEN strpos(lname, 'memcpy') > 0 OR strpos(lname, 'memset') > 0 THEN {{family:copy_memset}}
         WHEN strpos(lname, 'multi_tensor_apply') > 0 OR strpos(lname, 'adam') > 0
              OR strpos(lname, 'sgd_') > 0 OR strpos(lname, 'fused_optim') > 0 THEN {{family:optimizer}}
         WHEN strpos(lname, 'flash') > 0 OR strpos(lname, 'fmha') > 0 OR strpos(lname, 'attention') > 0
              OR strpos(lname, 'attn') > 0 THEN {{family:attention}}
         WHEN strpos(lname, 'conv') > 0 OR strpos(lname, 'fprop') > 0 OR strpos(lname, 'dgrad') > 0
              OR strpos(lname, 'wgrad') > 0 OR strpos(lname, 'winograd') > 0 OR strpos(lname, 'igemm') > 0 THEN {{family:conv}}
         WHEN strpos(lname, 'gemm') > 0 OR strpos(lname, 'cutlass') > 0 OR strpos(lname, 'xmma') > 0
              OR strpos(lname, 'matmul') > 0 OR starts_with(lname, 'cijk_') OR starts_with(lname, 'ampere_')
              OR starts_with(lname, 'volta_') OR starts_with(lname, 'turing_') OR starts_with(lname, 'sm80_')
              OR starts_with(lname, 'sm90_') OR starts_with(lname, 'triton_tem_') THEN {{family:gemm}}
         WHEN strpos(lname, 'norm') > 0 THEN {{family:norm}}
         WHEN strpos(lname, 'softmax') > 0 THEN {{family:softmax}}
         WHEN strpos(lname, 'reduce') > 0 OR strpos(lname, 'reduction') > 0 OR starts_with(lname, 'triton_red_')
              OR starts_with(lname, 'triton_per_') OR strpos(lname, 'cub::') > 0 THEN {{family:reduction}}
         WHEN strpos(lname, 'elementwise') > 0 OR strpos(lname, 'vectorized') > 0 OR strpos(lname, 'unrolled') > 0
              OR strpos(lname, 'pointwise') > 0 OR starts_with(lname, 'triton_poi_') THEN {{family:elementwise}}
         ELSE {{family:other}}
       END AS INT) AS name_family
FROM (SELECT name, lower(name) AS lname FROM (SELECT DISTINCT name FROM fx_gpu) d) n;

-- The launching operator's features, one row per operator and step it
-- launched items in (computed here, not per item: an operator's shapes are
-- parsed once). FLOPs and bytes are the operator's, shared evenly by the
-- items it launched in the step.
CREATE VIEW fx_op_features AS
SELECT n.trace_key, n.step_id, n.op_id,
       name_code(o.name) AS op_code,
       o.depth AS op_depth,
       ph.phase,
       op_flops(o.name, o.input_dims, o.input_types) / n.op_items AS flops,
       op_bytes(o.name, o.input_dims, o.input_types) / n.op_items AS bytes,
       input_numel(o.input_dims, 0) AS in0_numel,
       input_numel(o.input_dims, 1) AS in1_numel,
       dtype_bytes(o.input_dims, o.input_types) AS dtype_bytes,
       product_alignment(o.name, o.input_dims) AS product_alignment,
       conv_group_width(o.name, o.input_dims) AS conv_group_width
FROM (SELECT trace_key, step_id, op_id, COUNT(*) AS op_items
      FROM fx_gpu WHERE op_id IS NOT NULL GROUP BY trace_key, step_id, op_id) n
LEFT JOIN fx_ops_in o ON o.trace_key = n.trace_key AND o.op_id = n.op_id
LEFT JOIN fx_op_phase ph ON ph.trace_key = n.trace_key AND ph.op_id = n.op_id;

-- Each item with its family and its operator's features. Every join puts
-- the smaller side first (left): DataFusion builds its hash table from the
-- left input as written (step 1 keeps it from reordering), and the items
-- are the largest and widest input, so they stream through (RIGHT JOIN
-- keeps every item). The item's name is dropped once its family is known:
-- each join copies what it carries.
CREATE VIEW fx_classified AS
WITH named AS (
  SELECT g.trace_key, g.step_id, g.start_ns, g.dur_ns, g.item_kind, g.tie_1, g.tie_2,
         g.is_communication, g.op_id, g.launch_id,
         g.grid, g.block, g.registers, g.shared_memory_bytes, g.occupancy_pct, g.copy_bytes,
         f.name_family
  FROM fx_name_families f
  RIGHT JOIN fx_gpu g ON g.name = f.name
),
with_op AS (
  SELECT n.*, op.op_code, op.op_depth, op.phase, op.flops, op.bytes AS op_bytes,
         op.in0_numel, op.in1_numel, op.dtype_bytes, op.product_alignment,
         op.conv_group_width
  FROM fx_op_features op
  RIGHT JOIN named n ON op.trace_key = n.trace_key AND op.step_id = n.step_id AND op.op_id = n.op_id
)
SELECT w.trace_key, w.step_id, w.start_ns, w.dur_ns, w.item_kind, w.tie_1, w.tie_2,
       w.grid, w.block, w.registers, w.shared_memory_bytes, w.occupancy_pct,
       CAST(CASE
         WHEN w.item_kind = 1 OR w.name_family = {{family:copy_memset}} THEN {{family:copy_memset}}
         WHEN w.is_communication THEN {{family:communication}}
         WHEN w.phase = {{phase:optimizer}} OR w.name_family = {{family:optimizer}} THEN {{family:optimizer}}
         ELSE COALESCE(w.name_family, {{family:other}})
       END AS INT) AS family,
       w.op_code, w.op_depth, w.phase, w.flops,
       COALESCE(CAST(w.copy_bytes AS DOUBLE), w.op_bytes) AS bytes,
       w.in0_numel, w.in1_numel, w.dtype_bytes, w.product_alignment, w.conv_group_width,
       w.start_ns - l.start_ns AS launch_delay_ns
FROM fx_launches l
RIGHT JOIN with_op w ON l.trace_key = w.trace_key AND l.launch_id = w.launch_id;

CREATE VIEW fx_items AS
SELECT trace_key, step_id,
       CAST(ROW_NUMBER() OVER seq_order - 1 AS BIGINT) AS seq,
       start_ns, dur_ns, family, op_code, phase, op_depth, flops, bytes,
       in0_numel, in1_numel, dtype_bytes, product_alignment, conv_group_width,
       grid, block, registers, shared_memory_bytes, occupancy_pct, launch_delay_ns,
       COALESCE(LEAD(start_ns) OVER seq_order, MAX(start_ns + dur_ns) OVER seq_order) - start_ns AS contrib_ns,
       COALESCE(LEAD(start_ns) OVER seq_order, MAX(start_ns + dur_ns) OVER seq_order) - (start_ns + dur_ns) AS gap_ns
FROM fx_classified
WINDOW seq_order AS (PARTITION BY trace_key, step_id ORDER BY start_ns, item_kind, tie_1 NULLS LAST, tie_2 NULLS LAST, dur_ns
                     ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW);
