#!/usr/bin/env python3
"""Independent pandas re-implementation of `tracecast features`, used as a
cross-check and as a benchmark peer.

Usage: features_check.py LAKE_DIR FEATURES_DIR [--time]

--time prints how long the computation took (from reading the lake to the
window frame) and, separately, how long writing that frame as Parquet takes.

Definition (window W, stride S, PAD = (W - S) / 2, from features.json):

* Items of a step are its kernels and memcpy/memset rows with a step_id, for
  the traces listed in features.json. Issue order inside (trace_id, step_id):
  start_ns, kind (kernel 0, memcpy 1), tie_1 (kernel_id | stream), tie_2
  (null | correlation), dur_ns; nulls last. seq = 0-based rank in that order.
* gpu_end = max(start + dur) over the step, gpu_span_ns = gpu_end - min(start).
  contrib_ns = next start (gpu_end for the last item) - start;
  gap_ns = next start (gpu_end for the last item) - (start + dur);
  launch_delay_ns = start - launches.start_ns of launch_id; op_depth = ops.depth;
  grid / block = products of the x*y*z dims (null if any null; memcpy: null).
* One window per item with seq % S == 0: window_index = seq // S,
  first_item = seq, central items = seq .. seq+S-1 (clipped to the step),
  central_count = their number, target_ns = sum of their contrib_ns,
  window_items = items in [seq - PAD, seq + S + PAD - 1] inside the step,
  step_dur_ns = steps.dur_ns, step_remainder_ns = step_dur_ns - gpu_span_ns.
  p{p:02d}_<feature> = feature of the item at seq + p - PAD (null outside the step).

Compared exactly against tracecast's windows/*.parquet and steps/*.parquet:
the set of (trace_id, step_id, window_index) rows, the identifier/target
columns and p*_{grid,block,registers,shared_memory_bytes,occupancy_pct,
op_depth,launch_delay_ns,gap_ns} for every position; per step, item_count,
gpu_span_ns, remainder_ns, window_count = ceil(item_count / S),
dataloader_ns = the summed dur_ns of the step's ops named
`enumerate(DataLoader)...` (0 where none), and
sum(target_ns) + remainder_ns == steps.dur_ns.
"""
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

KEY = ["trace_id", "step_id", "window_index"]
FEATURES = ["grid", "block", "registers", "shared_memory_bytes", "occupancy_pct",
            "op_depth", "launch_delay_ns", "gap_ns", "dur_ns"]
WINDOW_COLS = ["first_item", "central_count", "target_ns", "window_items",
               "step_items", "step_dur_ns", "step_remainder_ns"]


def read(lake, table, columns, traces):
    df = pd.read_parquet(Path(lake) / table, columns=columns, dtype_backend="numpy_nullable")
    return df[df["trace_id"].isin(traces)]


def product(df, cols):
    out = df[cols[0]].astype("Int64")
    for c in cols[1:]:
        out = out * df[c].astype("Int64")
    return out


def compute(lake, traces, W, S):
    """Returns (items, windows) DataFrames; windows has KEY + compared columns."""
    pad = (W - S) // 2
    k = read(lake, "kernels", ["trace_id", "kernel_id", "start_ns", "dur_ns", "step_id",
                               "launch_id", "op_id", "grid_x", "grid_y", "grid_z", "block_x",
                               "block_y", "block_z", "registers_per_thread",
                               "shared_memory_bytes", "occupancy_pct"], traces)
    m = read(lake, "memcpy", ["trace_id", "start_ns", "dur_ns", "step_id", "launch_id",
                              "op_id", "stream", "correlation"], traces)
    launches = read(lake, "launches", ["trace_id", "launch_id", "start_ns"], traces)
    ops = read(lake, "ops", ["trace_id", "op_id", "depth"], traces)
    steps = read(lake, "steps", ["trace_id", "step_id", "dur_ns"], traces)

    k = k[k["step_id"].notna()]
    m = m[m["step_id"].notna()]
    kern = pd.DataFrame({
        "trace_id": k["trace_id"], "step_id": k["step_id"], "start_ns": k["start_ns"],
        "kind": 0, "tie_1": k["kernel_id"].astype("Int64"), "tie_2": pd.NA,
        "dur_ns": k["dur_ns"], "launch_id": k["launch_id"], "op_id": k["op_id"],
        "grid": product(k, ["grid_x", "grid_y", "grid_z"]),
        "block": product(k, ["block_x", "block_y", "block_z"]),
        "registers": k["registers_per_thread"].astype("Int64"),
        "shared_memory_bytes": k["shared_memory_bytes"].astype("Int64"),
        "occupancy_pct": k["occupancy_pct"].astype("Float64")})
    mem = pd.DataFrame({
        "trace_id": m["trace_id"], "step_id": m["step_id"], "start_ns": m["start_ns"],
        "kind": 1, "tie_1": m["stream"].astype("Int64"), "tie_2": m["correlation"].astype("Int64"),
        "dur_ns": m["dur_ns"], "launch_id": m["launch_id"], "op_id": m["op_id"]})
    items = pd.concat([kern, mem], ignore_index=True)
    items["tie_2"] = items["tie_2"].astype("Int64")
    items = items.sort_values(["trace_id", "step_id", "start_ns", "kind", "tie_1", "tie_2", "dur_ns"],
                              na_position="last", kind="stable", ignore_index=True)

    g = items.groupby(["trace_id", "step_id"], sort=False)
    start = items["start_ns"].to_numpy("int64")
    end = start + items["dur_ns"].to_numpy("int64")
    items["seq"] = g.cumcount()
    items["step_items"] = g["start_ns"].transform("size")
    gpu_end = pd.Series(end, index=items.index).groupby([items["trace_id"], items["step_id"]],
                                                        sort=False).transform("max").to_numpy()
    last = (items["seq"] == items["step_items"] - 1).to_numpy()
    nxt = np.where(last, gpu_end, np.roll(start, -1))  # rows are contiguous per step
    items["contrib_ns"] = nxt - start
    items["gap_ns"] = nxt - end
    items["gpu_span_ns"] = gpu_end - g["start_ns"].transform("min").to_numpy("int64")

    launches = launches.drop_duplicates(["trace_id", "launch_id"]).rename(columns={"start_ns": "launch_ns"})
    ops = ops.drop_duplicates(["trace_id", "op_id"]).rename(columns={"depth": "op_depth"})
    items = items.merge(launches, on=["trace_id", "launch_id"], how="left")
    items = items.merge(ops, on=["trace_id", "op_id"], how="left")
    items = items.merge(steps.rename(columns={"dur_ns": "step_dur_ns"}), on=["trace_id", "step_id"], how="left")
    items["launch_delay_ns"] = items["start_ns"].astype("Int64") - items["launch_ns"].astype("Int64")
    items["op_depth"] = items["op_depth"].astype("Int64")

    # Windows: items are contiguous per step in seq order, so row r + o is the
    # item at seq + o when 0 <= seq + o < step_items.
    seq = items["seq"].to_numpy()
    n = items["step_items"].to_numpy()
    rows = np.flatnonzero(seq % S == 0)
    ws, wn = seq[rows], n[rows]
    csum = np.concatenate([[0], np.cumsum(items["contrib_ns"].to_numpy("int64"))])
    central_end = rows + np.minimum(ws + S, wn) - ws
    win = items.loc[rows, ["trace_id", "step_id", "step_items", "step_dur_ns", "gpu_span_ns"]].reset_index(drop=True)
    win["window_index"] = ws // S
    win["first_item"] = ws
    win["central_count"] = central_end - rows
    win["target_ns"] = csum[central_end] - csum[rows]
    win["window_items"] = np.minimum(wn - 1, ws + S + pad - 1) - np.maximum(0, ws - pad) + 1
    win["step_remainder_ns"] = win["step_dur_ns"].astype("Int64") - win["gpu_span_ns"]
    cols = {}
    for f in FEATURES:
        arr = items[f].astype("Float64" if f == "occupancy_pct" else "Int64").array
        for p in range(W):
            o = p - pad
            ok = (ws + o >= 0) & (ws + o < wn)
            cols[f"p{p:02d}_{f}"] = arr.take(np.where(ok, rows + o, -1), allow_fill=True)
    win = pd.concat([win, pd.DataFrame(cols)], axis=1)
    return items, win


def compare(df, columns, what):
    """Compares df[c] (expected) with df[c + "_got"]; prints up to 10 differing cells."""
    bad = []
    for c in columns:
        kind = "Float64" if c.endswith("occupancy_pct") else "Int64"
        e, a = df[c].astype(kind), df[c + "_got"].astype(kind)
        diff = (e.isna() != a.isna()) | (e != a).fillna(False)
        bad += [(c, i) for i in np.flatnonzero(diff.to_numpy(bool))]
    for c, i in bad[:10]:
        at = lambda col: df[col].iloc[i] if col in df else "-"
        print(f"MISMATCH {what} trace_id={at('trace_id')} step_id={at('step_id')} "
              f"window_index={at('window_index')} column={c} "
              f"expected={at(c)} got={at(c + '_got')}")
    if bad:
        print(f"{len(bad)} mismatching {what} cells in columns {sorted({c for c, _ in bad})}")
    return len(bad)


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    lake, out, timed = argv[1], Path(argv[2]), "--time" in argv[3:]
    meta = json.loads((out / "features.json").read_text())
    W, S = meta["window"], meta["stride"]
    traces = sorted({t["trace_id"] for t in meta["traces"]})

    t0 = time.perf_counter()
    items, exp = compute(lake, traces, W, S)
    elapsed = time.perf_counter() - t0
    if timed:
        print(f"pandas windows: {len(exp)} windows from {len(items)} items in {elapsed:.3f} s "
              f"({len(items) / elapsed:.0f} items/s)")
        # What tracecast's time also covers: the table written as Parquet,
        # with the same compression (zstd level 1).
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            exp.to_parquet(Path(tmp) / "windows.parquet", compression="zstd",
                           compression_level=1, index=False)
            written = time.perf_counter() - t0
        print(f"pandas write: {len(exp)} windows x {len(exp.columns)} columns to Parquet "
              f"(zstd level 1) in {written:.3f} s")

    got = pd.read_parquet(out / "windows", dtype_backend="numpy_nullable")
    got_steps = pd.read_parquet(out / "steps", dtype_backend="numpy_nullable")
    lake_steps = read(lake, "steps", ["trace_id", "step_id", "dur_ns"], traces)
    errors = 0

    # Row sets.
    merged = exp.merge(got, on=KEY, how="outer", suffixes=("", "_got"), indicator=True)
    for side, name in [("left_only", "missing from tracecast"), ("right_only", "extra in tracecast")]:
        rows = merged[merged["_merge"] == side]
        if len(rows):
            errors += len(rows)
            print(f"{len(rows)} windows {name}, e.g.:\n{rows[KEY].head(5).to_string(index=False)}")
    both = merged[merged["_merge"] == "both"].reset_index(drop=True)
    columns = WINDOW_COLS + [f"p{p:02d}_{f}" for f in FEATURES for p in range(W)]
    errors += compare(both, columns, "window")

    # Steps table, and span + remainder == sum(target) + remainder == steps.dur_ns.
    exp_steps = items.groupby(["trace_id", "step_id"], sort=False).agg(
        item_count=("seq", "size"), gpu_span_ns=("gpu_span_ns", "first")).reset_index()
    exp_steps["window_count"] = -(-exp_steps["item_count"] // S)
    exp_steps = exp_steps.merge(lake_steps, on=["trace_id", "step_id"], how="left")
    exp_steps["remainder_ns"] = exp_steps["dur_ns"].astype("Int64") - exp_steps["gpu_span_ns"]
    ops = read(lake, "ops", ["trace_id", "step_id", "name", "dur_ns"], traces)
    loader = ops[ops["name"].str.startswith("enumerate(DataLoader)") & ops["step_id"].notna()]
    loader = loader.groupby(["trace_id", "step_id"]).agg(dataloader_ns=("dur_ns", "sum")).reset_index()
    exp_steps = exp_steps.merge(loader, on=["trace_id", "step_id"], how="left")
    exp_steps["dataloader_ns"] = exp_steps["dataloader_ns"].fillna(0).astype("Int64")
    exp_steps["span_plus_remainder"] = exp_steps["target_plus_remainder"] = exp_steps["dur_ns"]
    sums = got.groupby(["trace_id", "step_id"]).agg(
        target=("target_ns", "sum"), rem=("step_remainder_ns", "first")).reset_index()
    got_steps = got_steps.merge(sums, on=["trace_id", "step_id"], how="left")
    got_steps["span_plus_remainder"] = got_steps["gpu_span_ns"].astype("Int64") + got_steps["remainder_ns"]
    got_steps["target_plus_remainder"] = got_steps["target"].astype("Int64") + got_steps["rem"]
    sm = exp_steps.merge(got_steps, on=["trace_id", "step_id"], how="outer",
                         suffixes=("", "_got"), indicator=True)
    only = sm[sm["_merge"] != "both"]
    if len(only):
        errors += len(only)
        print(f"{len(only)} steps not in both (left_only: expected only):\n"
              f"{only[['trace_id', 'step_id', '_merge']].head(5).to_string(index=False)}")
    scols = ["item_count", "gpu_span_ns", "remainder_ns", "dataloader_ns", "window_count", "dur_ns",
             "span_plus_remainder", "target_plus_remainder"]
    errors += compare(sm[sm["_merge"] == "both"].reset_index(drop=True), scols, "step")

    verdict = "all equal" if errors == 0 else f"{errors} differences"
    print(f"features_check: {len(exp)} windows, {len(exp_steps)} steps, "
          f"{len(columns) + len(scols)} columns compared: {verdict}")
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
