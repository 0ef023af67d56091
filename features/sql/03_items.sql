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
-- (`gpu_end_ns`, the latest end of any item). So the contributions of a
-- step add up to its GPU span exactly.

CREATE VIEW fx_gpu AS
SELECT trace_id, step_id, start_ns, dur_ns,
       0 AS item_kind, kernel_id AS tie_1, CAST(NULL AS BIGINT) AS tie_2,
       name, is_communication, op_id, launch_id,
       grid_x * grid_y * grid_z AS grid,
       block_x * block_y * block_z AS block,
       registers_per_thread AS registers,
       shared_memory_bytes, occupancy_pct,
       CAST(NULL AS BIGINT) AS copy_bytes
FROM fx_kernels
UNION ALL
SELECT trace_id, step_id, start_ns, dur_ns,
       1 AS item_kind, stream AS tie_1, correlation AS tie_2,
       name, false AS is_communication, op_id, launch_id,
       CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT),
       CAST(NULL AS DOUBLE),
       bytes AS copy_bytes
FROM fx_memcpy;

-- The launching operator's features. FLOPs and bytes are the operator's,
-- shared evenly by the items it launched in the step.
CREATE VIEW fx_launched AS
SELECT g.*,
       o.name AS op_name,
       o.depth AS op_depth,
       o.input_dims,
       o.input_types,
       ph.phase,
       l.start_ns AS launch_start_ns,
       n.op_items
FROM fx_gpu g
LEFT JOIN (SELECT trace_id, step_id, op_id, COUNT(*) AS op_items FROM fx_gpu GROUP BY trace_id, step_id, op_id) n
       ON n.trace_id = g.trace_id AND n.step_id = g.step_id AND n.op_id = g.op_id
LEFT JOIN fx_ops_in o ON o.trace_id = g.trace_id AND o.op_id = g.op_id
LEFT JOIN fx_op_phase ph ON ph.trace_id = g.trace_id AND ph.op_id = g.op_id
LEFT JOIN fx_launches l ON l.trace_id = g.trace_id AND l.launch_id = g.launch_id;

-- Kernel families, by name (lower case), in this order of precedence. The
-- codes index tracecast's family list: 0 gemm, 1 conv, 2 attention,
-- 3 elementwise, 4 reduction, 5 norm, 6 softmax, 7 copy_memset,
-- 8 communication, 9 optimizer, 10 other.
CREATE VIEW fx_classified AS
SELECT f.*,
       CAST(CASE
         WHEN item_kind = 1 OR strpos(lname, 'memcpy') > 0 OR strpos(lname, 'memset') > 0 THEN 7
         WHEN is_communication THEN 8
         WHEN phase = 2 OR strpos(lname, 'multi_tensor_apply') > 0 OR strpos(lname, 'adam') > 0
              OR strpos(lname, 'sgd_') > 0 OR strpos(lname, 'fused_optim') > 0 THEN 9
         WHEN strpos(lname, 'flash') > 0 OR strpos(lname, 'fmha') > 0 OR strpos(lname, 'attention') > 0
              OR strpos(lname, 'attn') > 0 THEN 2
         WHEN strpos(lname, 'conv') > 0 OR strpos(lname, 'fprop') > 0 OR strpos(lname, 'dgrad') > 0
              OR strpos(lname, 'wgrad') > 0 OR strpos(lname, 'winograd') > 0 OR strpos(lname, 'igemm') > 0 THEN 1
         WHEN strpos(lname, 'gemm') > 0 OR strpos(lname, 'cutlass') > 0 OR strpos(lname, 'xmma') > 0
              OR strpos(lname, 'matmul') > 0 OR starts_with(lname, 'cijk_') OR starts_with(lname, 'ampere_')
              OR starts_with(lname, 'volta_') OR starts_with(lname, 'turing_') OR starts_with(lname, 'sm80_')
              OR starts_with(lname, 'sm90_') OR starts_with(lname, 'triton_tem_') THEN 0
         WHEN strpos(lname, 'norm') > 0 THEN 5
         WHEN strpos(lname, 'softmax') > 0 THEN 6
         WHEN strpos(lname, 'reduce') > 0 OR strpos(lname, 'reduction') > 0 OR starts_with(lname, 'triton_red_')
              OR starts_with(lname, 'triton_per_') OR strpos(lname, 'cub::') > 0 THEN 4
         WHEN strpos(lname, 'elementwise') > 0 OR strpos(lname, 'vectorized') > 0 OR strpos(lname, 'unrolled') > 0
              OR strpos(lname, 'pointwise') > 0 OR starts_with(lname, 'triton_poi_') THEN 3
         ELSE 10
       END AS INT) AS family
FROM (SELECT *, lower(name) AS lname FROM fx_launched) f;

CREATE VIEW fx_items AS
SELECT trace_id, step_id,
       CAST(ROW_NUMBER() OVER seq_order - 1 AS BIGINT) AS seq,
       start_ns, dur_ns, family,
       name_code(op_name) AS op_code,
       phase, op_depth,
       op_flops(op_name, input_dims, input_types) / op_items AS flops,
       COALESCE(CAST(copy_bytes AS DOUBLE), op_bytes(op_name, input_dims, input_types) / op_items) AS bytes,
       input_numel(input_dims, 0) AS in0_numel,
       input_numel(input_dims, 1) AS in1_numel,
       dtype_bytes(input_dims, input_types) AS dtype_bytes,
       grid, block, registers, shared_memory_bytes, occupancy_pct,
       start_ns - launch_start_ns AS launch_delay_ns,
       COALESCE(LEAD(start_ns) OVER seq_order, MAX(start_ns + dur_ns) OVER whole_step) - start_ns AS contrib_ns,
       COALESCE(LEAD(start_ns) OVER seq_order, MAX(start_ns + dur_ns) OVER whole_step) - (start_ns + dur_ns) AS gap_ns,
       MAX(start_ns + dur_ns) OVER whole_step - MIN(start_ns) OVER whole_step AS gpu_span_ns
FROM fx_classified
WINDOW seq_order AS (PARTITION BY trace_id, step_id ORDER BY start_ns, item_kind, tie_1 NULLS LAST, tie_2 NULLS LAST, dur_ns),
       whole_step AS (PARTITION BY trace_id, step_id);
