"""A stand-in for the parts of torch the collector touches, so its logic is
tested without torch or a GPU. Time is a fake clock the step function moves."""

import json
import types


class FakeClock:
    def __init__(self):
        self.ms = 0.0


class FakeTorch:
    def __init__(self, clock, *, cuda_available=True, dist=None, device_count=2):
        self.clock = clock
        self.__version__ = "2.5.1+fake"
        self.version = types.SimpleNamespace(cuda="12.4")
        self.synchronize_calls = 0
        self.profiled_steps = 0
        torch = self

        class Event:
            def __init__(self, enable_timing=False):
                assert enable_timing, "collector must create timing events"
                self.t = None

            def record(self):
                self.t = torch.clock.ms

            def elapsed_time(self, end):
                assert torch.synchronize_calls > 0, "events read before synchronize"
                return end.t - self.t

        def synchronize():
            torch.synchronize_calls += 1

        self.cuda = types.SimpleNamespace(
            is_available=lambda: cuda_available,
            current_device=lambda: 0,
            synchronize=synchronize,
            Event=Event,
            device_count=lambda: device_count,
            get_device_name=lambda i: "NVIDIA A100-SXM4-80GB",
            get_device_properties=lambda i: types.SimpleNamespace(
                major=8, minor=0, total_memory=85_000_000_000, multi_processor_count=108),
        )
        self.distributed = dist or types.SimpleNamespace(is_available=lambda: True, is_initialized=lambda: False)

        class Profile:
            def __init__(self, activities, schedule, on_trace_ready, record_shapes):
                assert record_shapes is True
                self.schedule = schedule
                self.on_trace_ready = on_trace_ready
                self.n = 0

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

            def step(self):
                self.n += 1
                torch.profiled_steps += 1
                if self.n == self.schedule["wait"] + self.schedule["warmup"] + self.schedule["active"]:
                    self.on_trace_ready(self)

            def export_chrome_trace(self, path):
                with open(path, "w") as f:
                    json.dump({"traceEvents": [], "deviceProperties": [{"name": "fake"}]}, f)

        self.profiler = types.SimpleNamespace(
            ProfilerActivity=types.SimpleNamespace(CPU="cpu", CUDA="cuda"),
            schedule=lambda wait, warmup, active, repeat: {"wait": wait, "warmup": warmup, "active": active},
            profile=Profile,
        )
