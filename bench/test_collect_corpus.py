"""collect_corpus.py without torch: configuration enumeration, naming and
shard packing (running the zoo needs a GPU)."""

import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import collect_corpus as cc  # noqa: E402

ISSUE_MODELS = {
    "resnet18", "resnet50", "resnet101", "vgg16", "densenet121", "mobilenet_v2", "mobilenet_v3_large",
    "efficientnet_b0", "efficientnet_b1", "efficientnet_b2", "efficientnet_b3", "regnet_y_1_6gf",
    "convnext_tiny", "vit_b_16", "swin_t", "bert_base", "gpt2_small", "gpt2_medium", "t5_small", "llama_small",
}


def test_zoo_covers_the_issue_list_with_several_batch_sizes():
    assert {m.name for m in cc.ZOO} == ISSUE_MODELS
    for m in cc.ZOO:
        assert len(m.batch_sizes) >= 3, m.name
        assert m.family in ("vision", "lm")


def test_enumeration_counts_and_order():
    configs = cc.enumerate_configs()
    assert len(configs) == sum(len(m.batch_sizes) for m in cc.ZOO) * 2
    assert len({c.stem for c in configs}) == len(configs), "stems must be unique"
    r50 = [c.batch_size for c in configs if c.model.name == "resnet50" and c.precision == "bf16"]
    assert r50 == sorted(r50), "smallest batch first so OOM can prune larger ones"


def test_filters_and_quick():
    c = cc.enumerate_configs(models=["gpt2_small"], precisions=["bf16"], max_batch=16)
    assert [x.stem for x in c] == ["gpt2_small__bs4__bf16", "gpt2_small__bs8__bf16", "gpt2_small__bs16__bf16"]
    q = cc.enumerate_configs(models=["resnet50"], quick=True)
    assert [(x.batch_size, x.precision) for x in q] == [(16, "fp32"), (256, "fp32"), (16, "bf16"), (256, "bf16")]
    with pytest.raises(ValueError, match="unknown models"):
        cc.enumerate_configs(models=["resnet5O"])
    with pytest.raises(ValueError, match="unknown precisions"):
        cc.enumerate_configs(precisions=["fp8"])


def test_gpu_dir_names():
    assert cc.gpu_dir_name("NVIDIA H100 80GB HBM3") == "h100-80gb-hbm3"
    assert cc.gpu_dir_name("Tesla V100-SXM2-32GB") == "tesla-v100-sxm2-32gb"


def test_shards_respect_limits_and_keep_pairs_together():
    files = []
    for i in range(10):
        stem = f"m{i}__bs8__bf16"
        files.append((Path(stem + cc.TRACE_SUFFIX), 20 << 20))
        files.append((Path(stem + cc.MANIFEST_SUFFIX), 2000))
    shards = cc.plan_shards(files, max_files=8, max_bytes=64 << 20)
    assert sum(len(s) for s in shards) == 20
    sizes = dict(files)
    for s in shards:
        assert len(s) <= 8 and sum(sizes[p] for p in s) <= 64 << 20
        stems = {p.name.split("__")[0] for p in s}
        assert len(s) == 2 * len(stems), "trace and manifest travel together"
    with pytest.raises(ValueError, match="do not fit"):
        cc.plan_shards([(Path("big" + cc.TRACE_SUFFIX), 100 << 20)], max_files=8, max_bytes=64 << 20)


def test_pack_shards_writes_readable_archives(tmp_path):
    gpu = tmp_path / "a100-sxm4-80gb"
    gpu.mkdir()
    for i in range(5):
        (gpu / f"m{i}__bs8__fp32{cc.TRACE_SUFFIX}").write_bytes(b"x" * 1000)
        (gpu / f"m{i}__bs8__fp32{cc.MANIFEST_SUFFIX}").write_text("{}")
    (gpu / "skipped.jsonl").write_text('{"stem": "m9__bs512__fp32"}\n')
    shards = cc.pack_shards(gpu, tmp_path / "shards", max_files=4, max_bytes=1 << 20)
    assert len(shards) == 3
    names = []
    for s in shards:
        with tarfile.open(s) as t:
            names += t.getnames()
    assert "a100-sxm4-80gb/skipped.jsonl" in names
    assert len([n for n in names if n.endswith(cc.TRACE_SUFFIX)]) == 5


def test_help_and_list_run_without_torch():
    script = Path(__file__).resolve().parent / "collect_corpus.py"
    out = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "--shard-max-files" in out.stdout
    out = subprocess.run([sys.executable, script, "--list", "--models", "vit_b_16", "--precisions", "fp32"],
                         capture_output=True, text=True)
    assert out.returncode == 0
    assert out.stdout.split() == [f"vit_b_16__bs{b}__fp32" for b in (8, 16, 32, 64, 128)]


def test_breadth_order_covers_every_model_twice_per_precision_first():
    configs = cc.enumerate_configs(breadth=True)
    assert sorted(c.stem for c in configs) == sorted(c.stem for c in cc.enumerate_configs())
    n = len(cc.ZOO)
    first = configs[: 4 * n]
    for p in cc.PRECISIONS:
        per_model = {m.name: sorted(c.batch_size for c in first if c.model.name == m.name and c.precision == p)
                     for m in cc.ZOO}
        for m in cc.ZOO:
            sizes = sorted(m.batch_sizes)
            assert per_model[m.name] == [sizes[1], sizes[2]], (m.name, p)
    assert [c.precision for c in configs[:2 * n]] == ["fp32"] * (2 * n), "float32 rounds come first"


def test_stop_reasons(tmp_path):
    import time

    args = cc.parse_args(["--budget-s", "10", "--max-total-mib", "1"])
    assert cc._stop_reason(args, time.time(), tmp_path) is None
    assert "time budget" in cc._stop_reason(args, time.time() - 11, tmp_path)
    (tmp_path / f"m__bs8__fp32{cc.TRACE_SUFFIX}").write_bytes(b"x" * (2 << 20))
    (tmp_path / "skipped.jsonl").write_bytes(b"x" * (4 << 20))
    assert cc.collected_bytes(tmp_path) == 2 << 20, "only traces and manifests count"
    assert "1 MiB" in cc._stop_reason(args, time.time(), tmp_path)
    assert cc._stop_reason(cc.parse_args([]), 0.0, tmp_path) is None, "no limits given, no stop"
