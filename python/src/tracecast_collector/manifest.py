"""The collector manifest: a JSON file beside each trace that says what was
run (model, batch size, precision, optimizer), where (GPU, world size, rank,
software versions) and how long a step takes without the profiler.

The format is documented in schemas/FORMATS.md ("Collector manifest");
bump FORMAT_VERSION when a field is removed or changes meaning.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

FORMAT = "tracecast-collector-manifest"
FORMAT_VERSION = 1
PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
TRACE_SUFFIX = ".pt.trace.json.gz"
MANIFEST_SUFFIX = ".manifest.json"


class ManifestError(ValueError):
    """A manifest that does not follow the format; names the field."""

    def __init__(self, field_name: str, reason: str, path: Optional[Path] = None):
        where = f"{path}: " if path else ""
        super().__init__(f"{where}field `{field_name}`: {reason}")
        self.field_name = field_name
        self.path = path


@dataclass
class RunInfo:
    """What the user tells the collector about the training run."""

    model_name: str
    batch_size: int
    precision: str
    optimizer: str
    # Free-form facts worth keeping (sequence length, image size, ...).
    extra: dict = field(default_factory=dict)


def slug(text: str) -> str:
    """A file-name-safe form: lower case, runs of other characters become '-'."""
    s = re.sub(r"[^a-z0-9._]+", "-", text.strip().lower()).strip("-.")
    if not s:
        raise ValueError(f"cannot make a file name from {text!r}")
    return s


def file_stem(model_name: str, batch_size: int, precision: str, rank: int = 0, world_size: int = 1) -> str:
    """`<model>__bs<N>__<precision>`, plus `__rank<R>` in multi-rank runs, so
    the files of one configuration sort together and never collide."""
    stem = f"{slug(model_name)}__bs{int(batch_size)}__{precision}"
    if world_size > 1:
        stem += f"__rank{int(rank)}"
    return stem


def build_manifest(
    run: RunInfo,
    *,
    trace_file: str,
    step_time: dict,
    timed_steps_warmup: int,
    schedule: dict,
    profiled_steps: int,
    hardware: dict,
    distributed: dict,
    software: dict,
    created_unix_s: float,
) -> dict:
    """Assemble and validate a manifest dict (validation raises ManifestError)."""
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "created_unix_s": int(created_unix_s),
        "trace_file": trace_file,
        "run": {
            "model_name": run.model_name,
            "batch_size": run.batch_size,
            "precision": run.precision,
            "optimizer": run.optimizer,
            "extra": dict(run.extra),
        },
        "hardware": hardware,
        "distributed": distributed,
        "software": software,
        "profiler": {
            "wait": schedule["wait"],
            "warmup": schedule["warmup"],
            "active": schedule["active"],
            "record_shapes": True,
            "profiled_steps": profiled_steps,
        },
        "step_time": {
            "method": "cuda_events",
            "unit": "ms",
            "warmup_steps": timed_steps_warmup,
            **step_time,
        },
    }
    validate(manifest)
    return manifest


def _req(d: dict, key: str, path: str, kind, manifest_path=None):
    if key not in d:
        raise ManifestError(f"{path}{key}", "is missing", manifest_path)
    v = d[key]
    # bool is an int in Python; a batch size of True is a bug, not a 1.
    if kind is int and isinstance(v, bool):
        raise ManifestError(f"{path}{key}", f"expected an integer, got {v!r}", manifest_path)
    if kind is float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ManifestError(f"{path}{key}", f"expected a finite number, got {v!r}", manifest_path)
    elif not isinstance(v, kind):
        raise ManifestError(f"{path}{key}", f"expected {kind.__name__}, got {v!r}", manifest_path)
    return v


def validate(m: dict, manifest_path: Optional[Path] = None) -> None:
    """Raise ManifestError naming the first field that breaks the format."""
    p = manifest_path
    if _req(m, "format", "", str, p) != FORMAT:
        raise ManifestError("format", f"is {m['format']!r}, expected {FORMAT!r}", p)
    if _req(m, "format_version", "", int, p) != FORMAT_VERSION:
        raise ManifestError("format_version", f"{m['format_version']} is not supported (reads {FORMAT_VERSION})", p)
    trace = _req(m, "trace_file", "", str, p)
    if not trace.endswith(TRACE_SUFFIX) or "/" in trace or "\\" in trace:
        raise ManifestError("trace_file", f"{trace!r} must be a bare file name ending in {TRACE_SUFFIX}", p)
    run = _req(m, "run", "", dict, p)
    if not _req(run, "model_name", "run.", str, p).strip():
        raise ManifestError("run.model_name", "is empty", p)
    if _req(run, "batch_size", "run.", int, p) < 1:
        raise ManifestError("run.batch_size", "must be at least 1", p)
    if _req(run, "precision", "run.", str, p) not in PRECISIONS:
        raise ManifestError("run.precision", f"{run['precision']!r} is not one of {PRECISIONS}", p)
    _req(run, "optimizer", "run.", str, p)
    _req(run, "extra", "run.", dict, p)
    hw = _req(m, "hardware", "", dict, p)
    _req(hw, "gpu_name", "hardware.", str, p)
    if _req(hw, "gpu_count", "hardware.", int, p) < 1:
        raise ManifestError("hardware.gpu_count", "must be at least 1", p)
    dist = _req(m, "distributed", "", dict, p)
    world = _req(dist, "world_size", "distributed.", int, p)
    rank = _req(dist, "rank", "distributed.", int, p)
    if world < 1 or not 0 <= rank < world:
        raise ManifestError("distributed.rank", f"rank {rank} outside world size {world}", p)
    sw = _req(m, "software", "", dict, p)
    _req(sw, "torch", "software.", str, p)
    _req(sw, "collector", "software.", str, p)
    if sw.get("cuda") is not None and not isinstance(sw["cuda"], str):
        raise ManifestError("software.cuda", "must be a string or null", p)
    prof = _req(m, "profiler", "", dict, p)
    for k in ("wait", "warmup", "active", "profiled_steps"):
        if _req(prof, k, "profiler.", int, p) < 0:
            raise ManifestError(f"profiler.{k}", "must not be negative", p)
    if prof["active"] < 1:
        raise ManifestError("profiler.active", "must be at least 1", p)
    st = _req(m, "step_time", "", dict, p)
    if _req(st, "steps", "step_time.", int, p) < 1:
        raise ManifestError("step_time.steps", "must be at least 1", p)
    for k in ("median", "p10", "p90", "mad", "mean", "min", "max"):
        _req(st, k, "step_time.", float, p)
    if not st["min"] <= st["p10"] <= st["median"] <= st["p90"] <= st["max"]:
        raise ManifestError("step_time", "min <= p10 <= median <= p90 <= max does not hold", p)
    if st["min"] <= 0:
        raise ManifestError("step_time.min", "must be positive", p)


def write_manifest(manifest: dict, path: Path) -> Path:
    """Validate and write atomically (a crash never leaves half a manifest)."""
    validate(manifest, path)
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)
    return path


def read_manifest(path: Path) -> dict:
    path = Path(path)
    try:
        m = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ManifestError("<document>", f"not JSON: {e}", path) from e
    if not isinstance(m, dict):
        raise ManifestError("<document>", "is not a JSON object", path)
    validate(m, path)
    return m


def run_info_dict(run: RunInfo) -> dict[str, Any]:
    return asdict(run)
