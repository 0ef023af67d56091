-- ResNet-50 at batch 32 on one H100 SXM5, strict float32 and TF32
-- (bench/measured/h100-sxm5/kineto): milliseconds a step in the kernels
-- its convolutions launch, per trace, with whether the trace ran TF32.
SELECT max(CASE WHEN k.name LIKE '%tf32%' OR k.name LIKE '%s1688gemm%' THEN 1 ELSE 0 END) AS tf32,
  round(sum(k.dur_ns) / 1e6 / count(DISTINCT k.step_id), 2) AS conv_ms_per_step
FROM kernels k JOIN ops o ON o.trace_id = k.trace_id AND o.op_id = k.op_id
WHERE k.step_id > 0 AND o.name IN ('aten::convolution_backward', 'aten::cudnn_convolution')
GROUP BY k.trace_id ORDER BY 1
