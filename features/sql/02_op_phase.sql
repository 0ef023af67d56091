-- tracecast features, step 2 of 5: the phase of every operator.
--
-- Phases are forward, backward and optimizer; `{{phase:NAME}}` is a phase's
-- code, its index in PHASES (schemas/src/features.rs). An operator whose own name says a
-- phase (autograd's backward functions, optimizer steps and their foreach
-- and fused kernels) has it. Any other is optimizer if an optimizer-named
-- operator on its thread encloses it, else backward if a backward-named one
-- does, else forward. Ops nest properly on a thread, so "encloses" is one
-- running maximum in start order (enclosing ops first at equal starts): an
-- op ends by the latest end of the named ops that started before it exactly
-- when one of them contains it.

CREATE VIEW fx_op_phase AS
WITH named AS (
  SELECT trace_key, op_id, pid, tid, start_ns, start_ns + dur_ns AS end_ns,
         CASE
           WHEN starts_with(name, 'Optimizer.') OR strpos(lower(name), 'optimizer') > 0
                OR starts_with(name, 'aten::_foreach_') OR starts_with(name, 'aten::_fused_') THEN {{phase:optimizer}}
           WHEN starts_with(name, 'autograd::engine::evaluate_function') OR strpos(name, 'Backward') > 0
                OR strpos(name, '_backward') > 0 THEN {{phase:backward}}
         END AS own_phase
  FROM fx_ops_in
),
reach AS (
  SELECT trace_key, op_id, end_ns, own_phase,
         MAX(CASE WHEN own_phase = {{phase:optimizer}} THEN end_ns END) OVER thread AS optimizer_until,
         MAX(CASE WHEN own_phase = {{phase:backward}} THEN end_ns END) OVER thread AS backward_until
  FROM named
  WINDOW thread AS (PARTITION BY trace_key, pid, tid ORDER BY start_ns, end_ns DESC, op_id
                    ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
)
SELECT trace_key, op_id,
       CAST(CASE
         WHEN own_phase IS NOT NULL THEN own_phase
         WHEN end_ns <= optimizer_until THEN {{phase:optimizer}}
         WHEN end_ns <= backward_until THEN {{phase:backward}}
         ELSE {{phase:forward}}
       END AS INT) AS phase
FROM reach;
