-- tracecast features, step 5 of 5: one row per step, from the windows just
-- written (`fx_new_windows`, registered by tracecast after step 4's output
-- is on disk, so the sequence is not computed twice).
--
-- gpu_span_ns is the sum of the step's window targets; with remainder_ns
-- it adds up to the step's measured wall time. job_id ties the ranks of one
-- run together (evaluation keeps them on one side of a split).
-- dataloader_ns is the host time spent fetching the step's batch (PyTorch's
-- profiler names that `enumerate(DataLoader)#...`): work per sample, which a
-- batch-size what-if scales. cpu_op_count is the CPU operators the profiler
-- recorded in the step (nested ones included): predict takes the profiler's
-- own host time per operator out of the step. runtime_wait_ns is the time
-- the step's runtime calls took beyond 5 us each (a launch itself takes a
-- few us; the rest is the host waiting on the GPU): dur_ns less these
-- waits (and the profiler's cost) is the host's own time, which predict
-- keeps as the floor of a what-if, since the host sets the pace of a
-- host-bound step.

-- One pass over the step's operators gives both.
CREATE VIEW fx_step_ops AS
SELECT trace_id, step_id,
       SUM(CASE WHEN name LIKE 'enumerate(DataLoader)%' THEN dur_ns ELSE 0 END) AS dataloader_ns,
       SUM(CASE WHEN category = 'cpu_op' THEN 1 ELSE 0 END) AS cpu_op_count
FROM ops
WHERE selected_trace_key(trace_id) IS NOT NULL AND step_id IS NOT NULL
GROUP BY trace_id, step_id;

CREATE VIEW fx_step_waits AS
SELECT trace_id, step_id,
       SUM(CASE WHEN dur_ns > 5000 THEN dur_ns - 5000 ELSE 0 END) AS runtime_wait_ns
FROM launches
WHERE selected_trace_key(trace_id) IS NOT NULL AND step_id IS NOT NULL
GROUP BY trace_id, step_id;

CREATE VIEW fx_steps AS
SELECT w.trace_id, w.step_id,
       MAX(w.step_dur_ns) AS dur_ns,
       MAX(w.step_items) AS item_count,
       SUM(w.target_ns) AS gpu_span_ns,
       MAX(w.step_remainder_ns) AS remainder_ns,
       COALESCE(MAX(o.dataloader_ns), 0) AS dataloader_ns,
       COALESCE(MAX(o.cpu_op_count), 0) AS cpu_op_count,
       COALESCE(MAX(r.runtime_wait_ns), 0) AS runtime_wait_ns,
       COUNT(*) AS window_count,
       MAX(w.gpu_name) AS gpu_name,
       MAX(t.job_id) AS job_id
FROM fx_new_windows w
LEFT JOIN traces t ON t.trace_id = w.trace_id
LEFT JOIN fx_step_ops o ON o.trace_id = w.trace_id AND o.step_id = w.step_id
LEFT JOIN fx_step_waits r ON r.trace_id = w.trace_id AND r.step_id = w.step_id
GROUP BY w.trace_id, w.step_id;
