"""Run a user's training step under torch.profiler and write the trace plus
its manifest.

Order matters: the step time is measured first, without the profiler (the
profiler slows steps down), then a short profiled run records the trace.
"""

from __future__ import annotations

import gzip
import os
import platform
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from . import __version__
from .manifest import MANIFEST_SUFFIX, PRECISIONS, TRACE_SUFFIX, RunInfo, build_manifest, file_stem, write_manifest
from .stats import summarize


def import_torch():
    """torch, or an ImportError that says what to do."""
    try:
        import torch  # noqa: PLC0415 (optional dependency)
    except ImportError as e:
        raise ImportError(
            "tracecast_collector needs PyTorch to profile a run: install the torch build for your CUDA "
            "(https://pytorch.org/get-started/locally/). The manifest helpers work without it."
        ) from e
    return torch


@dataclass(frozen=True)
class Schedule:
    """torch.profiler schedule: skip `wait` steps, warm up for `warmup`, record `active`."""

    wait: int = 1
    warmup: int = 1
    active: int = 2

    def __post_init__(self):
        if self.wait < 0 or self.warmup < 0 or self.active < 1:
            raise ValueError(f"bad profiler schedule {self}: wait, warmup >= 0 and active >= 1")

    @property
    def total_steps(self) -> int:
        return self.wait + self.warmup + self.active

    def as_dict(self) -> dict:
        return {"wait": self.wait, "warmup": self.warmup, "active": self.active}


@dataclass
class CollectionResult:
    trace_path: Path
    manifest_path: Path
    manifest: dict


def distributed_info(torch: Any, env: Optional[dict] = None) -> dict:
    """World size and rank: from torch.distributed when initialized, else from
    the launcher's environment (torchrun sets WORLD_SIZE and RANK), else 1/0."""
    env = os.environ if env is None else env
    dist = getattr(torch, "distributed", None)
    if dist is not None and dist.is_available() and dist.is_initialized():
        return {"world_size": int(dist.get_world_size()), "rank": int(dist.get_rank()), "source": "torch.distributed"}
    if "WORLD_SIZE" in env and "RANK" in env:
        return {"world_size": int(env["WORLD_SIZE"]), "rank": int(env["RANK"]), "source": "environment"}
    return {"world_size": 1, "rank": 0, "source": "default"}


def hardware_info(torch: Any, device_index: int) -> dict:
    props = torch.cuda.get_device_properties(device_index)
    return {
        "gpu_name": torch.cuda.get_device_name(device_index),
        "gpu_count": int(torch.cuda.device_count()),
        "compute_capability": f"{props.major}.{props.minor}",
        "memory_bytes": int(props.total_memory),
        "sm_count": int(props.multi_processor_count),
        "device_index": device_index,
    }


def software_info(torch: Any) -> dict:
    return {
        "torch": str(torch.__version__),
        "cuda": getattr(torch.version, "cuda", None),
        "python": platform.python_version(),
        "collector": __version__,
    }


def time_steps(torch: Any, step_fn: Callable[[], Any], steps: int, warmup: int) -> list[float]:
    """Per-step times in ms from CUDA events, no profiler attached. Events are
    read after one synchronize at the end, so timing adds no host stalls."""
    if steps < 1:
        raise ValueError("need at least one timed step")
    for _ in range(warmup):
        step_fn()
    torch.cuda.synchronize()
    events = []
    for _ in range(steps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        step_fn()
        end.record()
        events.append((start, end))
    torch.cuda.synchronize()
    return [float(s.elapsed_time(e)) for s, e in events]


def _gzip_file(src: Path, dst: Path) -> None:
    with open(src, "rb") as fin, gzip.open(dst, "wb", compresslevel=6) as fout:
        shutil.copyfileobj(fin, fout)
    src.unlink()


def profile_training(
    step_fn: Callable[[], Any],
    out_dir: os.PathLike | str,
    *,
    model_name: str,
    batch_size: int,
    precision: str,
    optimizer: str,
    timed_steps: int = 50,
    warmup_steps: int = 10,
    schedule: Schedule = Schedule(),
    extra: Optional[dict] = None,
    device_index: Optional[int] = None,
    torch_module: Any = None,
) -> CollectionResult:
    """Measure, then profile, one training configuration.

    `step_fn` runs one full training step (forward, backward, optimizer) on
    the GPU. It is called `warmup_steps + timed_steps` times without the
    profiler, then `schedule.total_steps` times under torch.profiler with
    `record_shapes=True`. Writes `<model>__bs<N>__<precision>.pt.trace.json.gz`
    and a `.manifest.json` beside it into `out_dir`.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r} is not one of {PRECISIONS}")
    torch = torch_module if torch_module is not None else import_torch()
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device visible to torch: the collector measures GPU step time")
    device = torch.cuda.current_device() if device_index is None else device_index
    run = RunInfo(model_name=model_name, batch_size=batch_size, precision=precision, optimizer=optimizer,
                  extra=dict(extra or {}))
    dist = distributed_info(torch)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = file_stem(model_name, batch_size, precision, dist["rank"], dist["world_size"])
    trace_path = out / f"{stem}{TRACE_SUFFIX}"
    manifest_path = out / f"{stem}{MANIFEST_SUFFIX}"

    samples = time_steps(torch, step_fn, timed_steps, warmup_steps)
    step_time = summarize(samples)
    step_time["samples_ms"] = samples

    raw_trace = out / f"{stem}.pt.trace.json"
    exported: list[Path] = []

    def on_trace_ready(prof):
        prof.export_chrome_trace(str(raw_trace))
        exported.append(raw_trace)

    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    prof_schedule = torch.profiler.schedule(wait=schedule.wait, warmup=schedule.warmup, active=schedule.active,
                                            repeat=1)
    with torch.profiler.profile(activities=activities, schedule=prof_schedule, on_trace_ready=on_trace_ready,
                                record_shapes=True) as prof:
        for _ in range(schedule.total_steps):
            step_fn()
            prof.step()
    torch.cuda.synchronize()
    if not exported or not raw_trace.exists():
        raise RuntimeError(f"torch.profiler produced no trace for {stem} (schedule {schedule.as_dict()})")
    _gzip_file(raw_trace, trace_path)

    manifest = build_manifest(
        run,
        trace_file=trace_path.name,
        step_time=step_time,
        timed_steps_warmup=warmup_steps,
        schedule=schedule.as_dict(),
        profiled_steps=schedule.active,
        hardware=hardware_info(torch, device),
        distributed={"world_size": dist["world_size"], "rank": dist["rank"]},
        software=software_info(torch),
        created_unix_s=time.time(),
    )
    write_manifest(manifest, manifest_path)
    return CollectionResult(trace_path=trace_path, manifest_path=manifest_path, manifest=manifest)
