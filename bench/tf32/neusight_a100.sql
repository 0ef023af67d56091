-- The same size of matrix product in strict float32 on the A100s of
-- NeuSight's model graphs (timed as a model runs them): GEMM nodes of more
-- than 10 GFLOP, FLOPs over forward time, per GPU.
SELECT gpu, count(*) AS nodes, round(sum(flops) / (sum(fw_ms) * 1e-3) / 1e12, 2) AS tflops
FROM neusight_graph_nodes
WHERE kind = 'gemm' AND flops > 1e10 AND gpu IN ('NVIDIA_A100-PCIE-40GB', 'NVIDIA_A100_80GB_PCIe')
GROUP BY 1 ORDER BY 1
