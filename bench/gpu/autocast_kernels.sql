-- Where a training step's GPU time goes in float32 and under autocast:
-- kernel time per step by kind, for every trace of our H100 leases of
-- 2026-11-26 (bench/measured/h100-bf16/kineto: ResNet-50, BERT-large,
-- GPT-2 Large), over the profiled steps after the first (which also holds
-- the kernels of the step before it).
-- Autocast's casts are the copy kernels; softmax and layer norm stay
-- float32. Run:
--   tracecast ingest bench/measured/h100-bf16/kineto --lake /tmp/autocast-lake
--   tracecast sql --lake /tmp/autocast-lake -f bench/gpu/autocast_kernels.sql
WITH later AS (
  SELECT s.trace_id, s.step_id FROM steps s
  WHERE s.step_number > (SELECT min(f.step_number) FROM steps f WHERE f.trace_id = s.trace_id)
),
per_trace AS (
  SELECT trace_id, count(*) AS steps FROM later GROUP BY trace_id
),
k AS (
  SELECT k.trace_id, k.dur_ns,
    CASE
      WHEN k.name LIKE 'nvjet%' OR lower(k.name) LIKE '%gemm%' OR k.name LIKE '%cutlass%' THEN 'matrix products'
      WHEN lower(k.name) LIKE '%softmax%' THEN 'softmax (float32)'
      WHEN k.name LIKE '%layer_norm%' OR k.name LIKE '%GammaBeta%' THEN 'layer norm (float32)'
      WHEN k.name LIKE '%copy_kernel%' THEN 'casts and copies'
      WHEN k.name LIKE '%multi_tensor_apply%' THEN 'optimizer (AdamW)'
      ELSE 'other element-wise'
    END AS kind
  FROM kernels k JOIN later l ON l.trace_id = k.trace_id AND l.step_id = k.step_id
)
SELECT regexp_replace(t.source, '^.*/', '') AS trace, k.kind,
  round(sum(k.dur_ns) / 1e6 / max(p.steps), 2) AS ms_per_step
FROM k JOIN traces t ON t.trace_id = k.trace_id JOIN per_trace p ON p.trace_id = k.trace_id
GROUP BY 1, 2 ORDER BY 1, 3 DESC
