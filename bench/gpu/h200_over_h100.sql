-- The same operator shapes timed on our H100 (2026-11-24) and H200
-- (2026-11-26) leases, by how long they took on the H100: the ratio of the
-- two times. The GPUs share their compute; the H200 has 1.4x the
-- bandwidth. Run:
--   tracecast sql --public bench/measured/h100-sxm5 \
--       --public bench/measured/h200-train -f bench/gpu/h200_over_h100.sql
WITH p AS (SELECT gpu, latency_ms, concat_ws(',', op, coalesce(b, -1), coalesce(m, -1), coalesce(n, -1), coalesce(k, -1), coalesce(h, -1), coalesce(input_channel, -1), coalesce(output_channel, -1), coalesce(kernel_size, -1), coalesce(input_size, -1), coalesce(stride, -1), coalesce(padding, -1)) AS shape FROM neusight_per_op WHERE file LIKE 'train/%')
SELECT CASE WHEN a.latency_ms < 0.02 THEN 'under 20 us' WHEN a.latency_ms < 0.1 THEN '20-100 us' WHEN a.latency_ms < 1 THEN '0.1-1 ms' ELSE 'over 1 ms' END AS on_the_h100,
  count(*) AS shapes, round(median(b.latency_ms / a.latency_ms), 3) AS median_h200_over_h100
FROM p a JOIN p b ON a.shape = b.shape AND a.gpu = 'NVIDIA_H100_80GB_HBM3' AND b.gpu = 'NVIDIA_H200'
GROUP BY 1 ORDER BY min(a.latency_ms)
