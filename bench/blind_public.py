#!/usr/bin/env python3
"""A blind copy of a public-layout directory, as issue 16's judge describes
its evaluation set: label JSONs keep `num_layer` only; per-node graph CSVs
lose their latency columns; per-op CSVs lose their latency and the columns
only a run on that GPU gives (kernel names, grid and block, warps and blocks
per SM); ETS CSVs have their timing columns zeroed. Spec sheets and model
configs are copied as they are.

    python3 bench/blind_public.py ../shared/public OUT

Then `tracecast ops bench --train ../shared/public --eval OUT --out A` and
`--eval ../shared/public --out B` must write the same prediction files
(`cmp A/neusight_e2e.csv B/neusight_e2e.csv`, and so on): predictions never
read the evaluation set's latencies.
"""
import csv
import glob
import gzip
import json
import os
import shutil
import sys

csv.field_size_limit(2**31 - 1)

GRAPH_LATENCIES = {"latency", "fw_latency", "bw_latency", "acc_latency"}
PER_OP_RUN_ONLY = {"Latency", "Kernel Name", "Kernels", "Warps per SM", "Blocks per SM",
                   "Grid x", "Grid y", "Grid z", "Block x", "Block y", "Block z"}
ETS_TIMING = ("rStartTime", "rEndTime", "kStartTime", "kEndTime", "space", "space1", "rduration", "kduration")


def without_columns(src, dst, dropped):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with gzip.open(src, "rt", newline="") as f, gzip.open(dst, "wt", newline="") as g:
        rows = csv.reader(f)
        header = next(rows)
        keep = [i for i, name in enumerate(header) if name not in dropped]
        out = csv.writer(g)
        out.writerow([header[i] for i in keep])
        for row in rows:
            out.writerow([row[i] for i in keep])


def main(src, dst):
    if not os.path.isdir(os.path.join(src, "neusight")) and not os.path.isdir(os.path.join(src, "ets")):
        sys.exit(f"{src}: no neusight/ or ets/ folder: not laid out like ../shared/public")
    if os.path.exists(dst):
        sys.exit(f"{dst}: exists; give a new folder")
    for sub in ("neusight/device_configs", "neusight/DLmodel_configs"):
        if os.path.isdir(os.path.join(src, sub)):
            shutil.copytree(os.path.join(src, sub), os.path.join(dst, sub))
    for label in glob.glob(os.path.join(src, "neusight/label/*/*.json")):
        out = os.path.join(dst, os.path.relpath(label, src))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(label) as f, open(out, "w") as g:
            json.dump({"num_layer": json.load(f).get("num_layer")}, g)
        graph = label[: -len(".json")] + ".csv.gz"
        if os.path.exists(graph):
            without_columns(graph, out[: -len(".json")] + ".csv.gz", GRAPH_LATENCIES)
    for per_op in glob.glob(os.path.join(src, "neusight/per_op/test/*.csv.gz")):
        without_columns(per_op, os.path.join(dst, os.path.relpath(per_op, src)), PER_OP_RUN_ONLY)
    for ets in glob.glob(os.path.join(src, "ets/datasets/*/*.csv")):
        out = os.path.join(dst, os.path.relpath(ets, src))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(ets, newline="") as f, open(out, "w", newline="") as g:
            rows = csv.DictReader(f)
            writer = csv.DictWriter(g, rows.fieldnames)
            writer.writeheader()
            for row in rows:
                writer.writerow({k: ("0" if k in ETS_TIMING else v) for k, v in row.items()})
    print(f"wrote a blind copy of {src} to {dst}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
