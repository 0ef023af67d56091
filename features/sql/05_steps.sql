-- tracecast features, step 5 of 5: one row per step, from the windows just
-- written (`fx_new_windows`, registered by tracecast after step 4's output
-- is on disk, so the sequence is not computed twice).
--
-- gpu_span_ns is the sum of the step's window targets; with remainder_ns
-- it adds up to the step's measured wall time. job_id ties the ranks of one
-- run together (evaluation keeps them on one side of a split).

CREATE VIEW fx_steps AS
SELECT w.trace_id, w.step_id,
       MAX(w.step_dur_ns) AS dur_ns,
       MAX(w.step_items) AS item_count,
       SUM(w.target_ns) AS gpu_span_ns,
       MAX(w.step_remainder_ns) AS remainder_ns,
       COUNT(*) AS window_count,
       MAX(w.gpu_name) AS gpu_name,
       MAX(t.job_id) AS job_id
FROM fx_new_windows w
LEFT JOIN traces t ON t.trace_id = w.trace_id
GROUP BY w.trace_id, w.step_id;
