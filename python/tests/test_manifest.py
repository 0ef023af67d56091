import copy
import json

import pytest

from tracecast_collector.manifest import (
    FORMAT_VERSION,
    ManifestError,
    RunInfo,
    build_manifest,
    file_stem,
    read_manifest,
    slug,
    validate,
    write_manifest,
)
from tracecast_collector.stats import summarize


def sample_manifest(**over):
    kw = dict(
        trace_file="resnet50__bs64__bf16.pt.trace.json.gz",
        step_time=summarize([100.0, 101.0, 99.0, 100.5]),
        timed_steps_warmup=10,
        schedule={"wait": 1, "warmup": 1, "active": 2},
        profiled_steps=2,
        hardware={"gpu_name": "NVIDIA A100-SXM4-80GB", "gpu_count": 8, "compute_capability": "8.0"},
        distributed={"world_size": 1, "rank": 0},
        software={"torch": "2.5.1", "cuda": "12.4", "python": "3.11.7", "collector": "0.1.0"},
        created_unix_s=1_700_000_000.5,
    )
    kw.update(over)
    return build_manifest(RunInfo("ResNet-50", 64, "bf16", "SGD", {"image_size": 224}), **kw)


def test_file_stems():
    assert file_stem("ResNet-50", 64, "bf16") == "resnet-50__bs64__bf16"
    assert file_stem("GPT-2 medium", 8, "fp32", rank=3, world_size=8) == "gpt-2-medium__bs8__fp32__rank3"
    assert slug("  ViT B/16 ") == "vit-b-16"
    with pytest.raises(ValueError):
        slug("///")


def test_build_write_read_round_trip(tmp_path):
    m = sample_manifest()
    assert m["format_version"] == FORMAT_VERSION
    assert m["step_time"]["unit"] == "ms" and m["step_time"]["method"] == "cuda_events"
    path = write_manifest(m, tmp_path / "x.manifest.json")
    assert read_manifest(path) == json.loads(json.dumps(m))
    assert not (tmp_path / "x.manifest.json.tmp").exists()


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda m: m["run"].update(precision="int8"), "run.precision"),
        (lambda m: m["run"].update(batch_size=0), "run.batch_size"),
        (lambda m: m["run"].update(batch_size=True), "run.batch_size"),
        (lambda m: m.update(trace_file="../x.pt.trace.json.gz"), "trace_file"),
        (lambda m: m.update(trace_file="x.json"), "trace_file"),
        (lambda m: m["distributed"].update(rank=8, world_size=8), "distributed.rank"),
        (lambda m: m["step_time"].update(median=float("inf")), "step_time.median"),
        (lambda m: m["step_time"].update(p90=1.0), "step_time"),
        (lambda m: m["profiler"].update(active=0), "profiler.active"),
        (lambda m: m.update(format_version=99), "format_version"),
        (lambda m: m["hardware"].pop("gpu_name"), "hardware.gpu_name"),
    ],
)
def test_validation_names_the_field(mutate, field):
    m = copy.deepcopy(sample_manifest())
    mutate(m)
    with pytest.raises(ManifestError) as e:
        validate(m)
    assert e.value.field_name == field


def test_read_names_the_file(tmp_path):
    p = tmp_path / "broken.manifest.json"
    p.write_text("{not json")
    with pytest.raises(ManifestError) as e:
        read_manifest(p)
    assert "broken.manifest.json" in str(e.value)
