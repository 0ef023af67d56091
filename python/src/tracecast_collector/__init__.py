"""tracecast_collector: wrap your training step, get a Kineto trace and a
manifest with the un-profiled step time (median and spread over N steps).

    from tracecast_collector import profile_training
    profile_training(train_step, "traces/", model_name="resnet50", batch_size=64,
                     precision="bf16", optimizer="SGD")

Importing this package does not import torch; profiling does.
"""

__version__ = "0.1.0"

from .collector import CollectionResult, Schedule, import_torch, profile_training  # noqa: E402
from .manifest import (  # noqa: E402
    FORMAT,
    FORMAT_VERSION,
    PRECISIONS,
    ManifestError,
    RunInfo,
    file_stem,
    read_manifest,
    validate,
    write_manifest,
)
from .stats import mad, median, percentile, summarize  # noqa: E402

__all__ = [
    "CollectionResult", "FORMAT", "FORMAT_VERSION", "ManifestError", "PRECISIONS", "RunInfo", "Schedule",
    "file_stem", "import_torch", "mad", "median", "percentile", "profile_training", "read_manifest",
    "summarize", "validate", "write_manifest",
]
