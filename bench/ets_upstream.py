"""ETS files from the upstream benchmark, priced against their labels
(issue 16). Run by bench/ets_upstream.sh.

  python3 bench/ets_upstream.py fetch DIR
      Puts each file below in DIR/ets/datasets/<GPU folder>/, downloading
      those missing from GitHub at the pinned commit.
  python3 bench/ets_upstream.py table DIR PREDICTED_CSV ETS_COMPARE_CSV
      Prints each file's measured label (ETS's: forward and backward rows'
      kduration + max(space, 0)) beside tracecast's and ETS's predictions.
"""

import csv
import statistics
import sys
import urllib.request
from pathlib import Path

COMMIT = "ceab3e8dae0298abd3272389573dc5331b027960"
URL = f"https://raw.githubusercontent.com/iscas-system/ETS/{COMMIT}/benchmark/datasets/{{}}/{{}}"
# (GPU folder, file): batch 64, 256x256, float32, unless said.
FILES = [
    ("T4CPUALL", "resnet18.16_7.csv"),  # batch 2
    ("T4CPUALL", "mobilenet_v2.64_7.csv"),  # batch 8, 128x128
    ("T4CPUALL", "alexnet.116_7.csv"),  # float16
    ("T4CPUALL", "alexnet.117_7.csv"),  # float64
    ("T4CPUALL", "resnet18.150_7.csv"),
    ("T4CPUALL", "resnet18.151_7.csv"),  # float16
    ("T4CPUALL", "vgg11_bn.123_7.csv"),
    ("T4CPUALL", "squeezenet1_0.132_7.csv"),
    ("T4CPUALL", "mobilenet_v2.147_7.csv"),
    ("T4CPUALL", "mobilenet_v3_small.151_7.csv"),
    ("T4CPUALL", "shufflenet_v2_x0_5.151_7.csv"),
    ("T4CPUALL", "vit_b_16.130_7.csv"),
    ("2080TiCPUALL", "mobilenet_v2.115_7.csv"),
]
DTYPES = {"1": "float32", "2": "float16", "3": "float64"}


def fetch(root: Path) -> None:
    for folder, name in FILES:
        path = root / "ets" / "datasets" / folder / name
        if path.exists():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        url = URL.format(folder, name)
        try:
            with urllib.request.urlopen(url, timeout=60) as r:
                path.write_bytes(r.read())
        except OSError as e:
            raise SystemExit(f"{path}: missing, and {url} could not be fetched ({e})")


def label(path: Path) -> tuple[float, str, str]:
    """The ETS label in ms, the configuration and the element type."""
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["dir"] in ("1", "2")]
    ms = sum(float(r["kduration"]) + max(float(r["space"]), 0.0) for r in rows) / 1e6
    r = rows[0]
    return ms, f"batch {r['batch']} h {r['h']}", DTYPES.get(r["input_type"], r["input_type"])


def table(root: Path, predicted_csv: str, compare_csv: str) -> None:
    with open(predicted_csv, newline="") as f:
        predicted = {(r["gpu_folder"], r["file"]): r["predicted_ms"] for r in csv.DictReader(f)}
    with open(compare_csv, newline="") as f:
        ets_own = {r["model"]: (float(r["predict"]), float(r["measure"])) for r in csv.DictReader(f)}
    print("| GPU folder | file | config | type | measured ms | tracecast ms | error % | ETS's own ms | ETS error % |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|")
    errors = []
    for folder, name in FILES:
        measured, config, dtype = label(root / "ets" / "datasets" / folder / name)
        ours = float(predicted[(folder, name)])
        error = 100 * (ours / measured - 1)
        errors.append(abs(error))
        model = name.split(".")[0]
        own = ets_own.get(model) if (folder, dtype, config) == ("T4CPUALL", "float32", "batch 64 h 256") else None
        # ETS's table measures some files otherwise than their rows add up (vit_b_16).
        if own and abs(own[1] - measured) < 1e-3:
            own_cols = f"{own[0]:.1f} | {100 * (own[0] / measured - 1):+.1f}"
        else:
            own_cols = "- | -"
        print(f"| {folder} | {name} | {config} | {dtype} | {measured:.1f} | {ours:.1f} | {error:+.1f} | {own_cols} |")
    print(f"\nmean |error| {statistics.mean(errors):.1f}% over {len(errors)} files")


if __name__ == "__main__":
    if sys.argv[1] == "fetch":
        fetch(Path(sys.argv[2]))
    else:
        table(Path(sys.argv[2]), sys.argv[3], sys.argv[4])
