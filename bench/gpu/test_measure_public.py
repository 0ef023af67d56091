"""measure_public.py's --resume without torch or a GPU: what an earlier run
measured is kept as it was, in the input's order, and only the rest is
measured (the timing itself is stubbed)."""

import csv
import gzip
import json
import sys
import types
from pathlib import Path

import pytest

if "torch" not in sys.modules:
    try:
        import torch  # noqa: F401
    except ImportError:
        fake = types.ModuleType("torch")
        fake.__version__ = "2.11.0+fake"
        fake.version = types.SimpleNamespace(cuda="13.0")
        fake.backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=lambda: 91000))
        fake.float32, fake.bfloat16, fake.float16 = "float32", "bfloat16", "float16"
        fake.OutOfMemoryError = type("OutOfMemoryError", (Exception,), {})
        fake.cuda = types.SimpleNamespace(empty_cache=lambda: None)
        sys.modules["torch"] = fake

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure_public as mp  # noqa: E402

HEADER = ["OPName", "Latency", "Device", "Torch Version", "CUDNN Version", "CUDA Version", "B", "H"]
SHAPES = [("softmax", 8, 1024), ("softmax", 16, 2048), ("softmax", 32, 4096)]


def row(op, latency, device, b, h):
    return {"OPName": op, "Latency": latency, "Device": device, "Torch Version": "p2.11.0",
            "CUDNN Version": "91000", "CUDA Version": "cu130", "B": str(b), "H": str(h)}


def write_csv(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", newline="") as f:
        w = csv.DictWriter(f, fieldnames=HEADER)
        w.writeheader()
        w.writerows(rows)


def read_csv(path):
    with gzip.open(path, "rt") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def timed(monkeypatch):
    """Every op the run measures takes 1.5 ms; the shapes it measured are listed."""
    measured = []

    def op_callable(name, shape, dtype):
        measured.append((name, shape["B"], shape["H"]))
        return lambda: None

    monkeypatch.setattr(mp, "op_callable", op_callable)
    monkeypatch.setattr(mp, "time_op", lambda fn: 1.5)
    return measured


def run_perop(tmp_path, kept, budget_s):
    """NeuSight's three softmax shapes, `kept` measured by an earlier run:
    the rows the resumed run writes."""
    neusight, out, earlier = tmp_path / "neusight", tmp_path / "out" / "neusight", tmp_path / "earlier"
    write_csv(neusight / "per_op/test/softmax.csv.gz", [row(o, "9.9", "Tesla T4", b, h) for o, b, h in SHAPES])
    write_csv(earlier / "neusight/per_op/test/softmax.csv.gz", [kept])
    mp.measure_perop(neusight, out, "NVIDIA H200", "NVIDIA_H200", "test", 0, budget_s, 0, {"softmax"}, "float32",
                     [earlier])
    return read_csv(out / "per_op/test/softmax.csv.gz")


def test_perop_resume_keeps_earlier_rows_and_measures_the_rest(tmp_path, timed):
    kept = row("softmax", "0.25", "NVIDIA H200", 16, 2048)
    rows = run_perop(tmp_path, kept, budget_s=60)
    assert sorted(timed) == [("softmax", 8, 1024), ("softmax", 32, 4096)]
    assert [(r["B"], r["H"]) for r in rows] == [("8", "1024"), ("16", "2048"), ("32", "4096")]
    assert rows[1] == kept
    assert [float(r["Latency"]) for r in (rows[0], rows[2])] == [1.5, 1.5]
    assert {r["Device"] for r in (rows[0], rows[2])} == {"NVIDIA H200"}


def test_perop_without_budget_writes_only_what_was_kept(tmp_path, timed):
    kept = row("softmax", "0.5", "NVIDIA H200", 32, 4096)
    assert run_perop(tmp_path, kept, budget_s=-1) == [kept]
    assert timed == []


def test_e2e_resume_copies_earlier_labels_and_measures_the_rest(tmp_path, monkeypatch):
    neusight, out, earlier = tmp_path / "neusight", tmp_path / "out" / "neusight", tmp_path / "earlier"
    neusight.mkdir()
    (neusight / "label_index.csv").write_text(
        "model,mode,seqlen,batch,option\n"
        "bert_large,inf,512,8,\n"
        "bert_large,train,512,2,\n"
        "bert_large,inf,512,8,fusion\n"
        "switchxl4,inf,512,1,\n")
    earlier_label = earlier / "neusight/label/NVIDIA_H200/bert_large-train-512-2.json"
    earlier_label.parent.mkdir(parents=True)
    earlier_label.write_text('{"e2e_latency": 94.0}')
    measured = []

    def measure_one(config_path, train, seqlen, batch, precision):
        measured.append((config_path.name, train, seqlen, batch))
        return {"num_layer": 24, "e2e_latency": 65.8, "fw_latency": 65.8, "bwall_latency": 0.0}

    monkeypatch.setattr(mp, "measure_e2e_one", measure_one)

    mp.measure_e2e(neusight, out, "NVIDIA_H200", 60, "fp32", [earlier])

    assert measured == [("bert_large.json", False, 512, 8)]
    labels = out / "label/NVIDIA_H200"
    assert sorted(p.name for p in labels.iterdir()) == ["bert_large-inf-512-8.json", "bert_large-train-512-2.json"]
    assert (labels / "bert_large-train-512-2.json").read_text() == '{"e2e_latency": 94.0}'
    assert json.loads((labels / "bert_large-inf-512-8.json").read_text())["e2e_latency"] == 65.8


def test_resume_names_a_folder_that_is_not_an_earlier_output(tmp_path):
    (tmp_path / "earlier" / "neusight").mkdir(parents=True)
    assert mp.resume_problem([tmp_path / "earlier"]) is None
    problem = mp.resume_problem([tmp_path / "earlier", tmp_path / "typo"])
    assert problem is not None and str(tmp_path / "typo") in problem and "neusight/" in problem
