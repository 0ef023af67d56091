-- Matrix products (aten::mm, aten::bmm) of more than 10 GFLOP that ran on
-- TF32 tensor cores (kernel names with tf32 or CUTLASS's s1688gemm) in a
-- lake: their FLOPs from the operator's input dims, over their kernels' time.
WITH products AS (
  SELECT o.name AS op, o.input_dims AS d, sum(k.dur_ns) AS ns,
    max(CASE WHEN k.name LIKE '%tf32%' OR k.name LIKE '%s1688gemm%' THEN 1 ELSE 0 END) AS tf32
  FROM kernels k JOIN ops o ON o.trace_id = k.trace_id AND o.op_id = k.op_id
  WHERE o.name IN ('aten::mm', 'aten::bmm')
  GROUP BY k.trace_id, k.op_id, o.name, o.input_dims
), sized AS (
  SELECT ns, tf32, CASE WHEN op = 'aten::mm' THEN 2.0 * d[1][1] * d[1][2] * d[2][2]
    ELSE 2.0 * d[1][1] * d[1][2] * d[1][3] * d[2][3] END AS flops
  FROM products
)
SELECT count(*) AS products, round(sum(flops) / 1e9, 1) AS gflop, round(sum(ns) / 1e6, 2) AS ms,
  round(sum(flops) / (sum(ns) * 1e-9) / 1e12, 2) AS tflops
FROM sized WHERE tf32 = 1 AND flops > 1e10
