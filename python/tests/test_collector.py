import gzip
import json
import sys
import types

import pytest

import tracecast_collector
from tracecast_collector import Schedule, profile_training, read_manifest
from tracecast_collector.collector import distributed_info

from fake_torch import FakeClock, FakeTorch


def make_step(clock, times):
    it = iter(times)

    def step():
        clock.ms += next(it)

    return step


def test_profile_training_measures_then_profiles_and_writes_both_files(tmp_path):
    clock = FakeClock()
    torch = FakeTorch(clock)
    warmup, timed, sched = 2, 5, Schedule(wait=1, warmup=1, active=2)
    times = [50.0] * warmup + [10.0, 12.0, 11.0, 30.0, 10.5] + [99.0] * sched.total_steps
    res = profile_training(make_step(clock, times), tmp_path, model_name="ResNet-50", batch_size=64,
                           precision="bf16", optimizer="SGD", timed_steps=timed, warmup_steps=warmup,
                           schedule=sched, extra={"image_size": 224}, torch_module=torch)
    assert res.trace_path.name == "resnet-50__bs64__bf16.pt.trace.json.gz"
    assert res.manifest_path.name == "resnet-50__bs64__bf16.manifest.json"
    with gzip.open(res.trace_path, "rt") as f:
        assert "traceEvents" in json.load(f)
    assert not (tmp_path / "resnet-50__bs64__bf16.pt.trace.json").exists(), "raw trace must be removed"
    m = read_manifest(res.manifest_path)
    st = m["step_time"]
    # Only the timed steps count: not warm-up (50 ms) nor profiled (99 ms) steps.
    assert st["samples_ms"] == [10.0, 12.0, 11.0, 30.0, 10.5]
    assert st["median"] == 11.0 and st["steps"] == 5 and st["warmup_steps"] == 2
    assert m["hardware"]["gpu_name"] == "NVIDIA A100-SXM4-80GB" and m["hardware"]["gpu_count"] == 2
    assert m["software"]["torch"] == "2.5.1+fake" and m["software"]["cuda"] == "12.4"
    assert m["distributed"] == {"world_size": 1, "rank": 0}
    assert m["run"]["extra"] == {"image_size": 224}
    assert torch.profiled_steps == sched.total_steps


def test_multi_rank_runs_name_files_by_rank(tmp_path):
    clock = FakeClock()
    dist = types.SimpleNamespace(is_available=lambda: True, is_initialized=lambda: True,
                                 get_world_size=lambda: 4, get_rank=lambda: 2)
    torch = FakeTorch(clock, dist=dist)
    res = profile_training(make_step(clock, [1.0] * 100), tmp_path, model_name="gpt2", batch_size=8,
                           precision="fp32", optimizer="AdamW", timed_steps=3, warmup_steps=0,
                           torch_module=torch)
    assert res.trace_path.name == "gpt2__bs8__fp32__rank2.pt.trace.json.gz"
    assert res.manifest["distributed"] == {"world_size": 4, "rank": 2}


def test_distributed_info_falls_back_to_environment():
    torch = FakeTorch(FakeClock())
    assert distributed_info(torch, env={"WORLD_SIZE": "16", "RANK": "5"})["world_size"] == 16
    assert distributed_info(torch, env={}) == {"world_size": 1, "rank": 0, "source": "default"}


def test_bad_precision_and_missing_gpu_fail_before_running(tmp_path):
    clock = FakeClock()
    with pytest.raises(ValueError, match="precision"):
        profile_training(lambda: None, tmp_path, model_name="m", batch_size=1, precision="int8",
                         optimizer="SGD", torch_module=FakeTorch(clock))
    with pytest.raises(RuntimeError, match="no CUDA device"):
        profile_training(lambda: None, tmp_path, model_name="m", batch_size=1, precision="fp32",
                         optimizer="SGD", torch_module=FakeTorch(clock, cuda_available=False))
    assert list(tmp_path.iterdir()) == []


def test_missing_torch_gives_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` raise ImportError
    with pytest.raises(ImportError, match="needs PyTorch"):
        tracecast_collector.import_torch()


def test_schedule_validation():
    assert Schedule(0, 0, 1).total_steps == 1
    with pytest.raises(ValueError):
        Schedule(active=0)
