-- Views registered over the lake by `tracecast sql` and the feature pipeline.

-- PyTorch Execution Trace nodes paired with the Kineto ops of the same
-- process: the ET's pid is the Kineto trace's CPU pid, and an ET node's
-- rf_id is the op's `Record function id`.
CREATE VIEW et_op_links AS
SELECT e.trace_id AS et_trace_id,
       e.node_id,
       e.name AS node_name,
       o.trace_id AS trace_id,
       o.op_id,
       o.name AS op_name
FROM et_nodes e
JOIN traces te ON te.trace_id = e.trace_id
JOIN traces tk ON tk.pid = te.pid AND tk.format = 'kineto'
JOIN ops o ON o.trace_id = tk.trace_id AND o.record_function_id = e.rf_id;
