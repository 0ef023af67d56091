-- tracecast features, step 5 of 5: one row per step, from the windows just
-- written (`fx_new_windows`, registered by tracecast after step 4's output
-- is on disk, so the sequence is not computed twice).
--
-- gpu_span_ns is the sum of the step's window targets; with remainder_ns
-- it adds up to the step's measured wall time.

CREATE VIEW fx_steps AS
SELECT trace_id, step_id,
       MAX(step_dur_ns) AS dur_ns,
       MAX(step_items) AS item_count,
       SUM(target_ns) AS gpu_span_ns,
       MAX(step_remainder_ns) AS remainder_ns,
       COUNT(*) AS window_count,
       MAX(gpu_name) AS gpu_name
FROM fx_new_windows
GROUP BY trace_id, step_id;
