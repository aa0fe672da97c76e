"""torch.autograd.profiler's API, as a profiler that records nothing: `profile` and
`record_function` run the code inside them unchanged, and report no events (autodiff
has no operator-level profiler; time code with `time.perf_counter` or cProfile instead).

A script written for torch's profiler runs: `key_averages()` is an empty event list whose
`table()` is torch's table of no events (an empty string), `export_chrome_trace` writes a
trace with no events.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

__all__ = ["EventList", "profile", "record_function"]


class EventList(list):
    """torch's list of profiled events (always empty here), with its summaries."""

    def table(
        self,
        sort_by: str | None = None,
        row_limit: int = 100,
        max_src_column_width: int = 75,
        max_name_column_width: int = 55,
        max_shapes_column_width: int = 80,
        header: str | None = None,
        top_level_events_only: bool = False,
        time_unit: str | None = None,
    ) -> str:
        """The events as a table: torch's table of no events, an empty string."""
        return ""

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0):
        """The events averaged by name: none."""
        return EventList()

    def total_average(self) -> dict:
        """The events' totals: zero time."""
        return {"cpu_time_total": 0.0, "self_cpu_time_total": 0.0, "count": 0}

    @property
    def self_cpu_time_total(self) -> float:
        return 0.0

    def export_chrome_trace(self, path: str) -> None:
        """Write a Chrome trace with no events to `path`."""
        with open(path, "w") as f:
            json.dump({"traceEvents": []}, f)

    def __str__(self) -> str:
        return self.table()


class profile:
    """`torch.autograd.profiler.profile(...)`: a context manager that records nothing.

    Example:
        >>> import autodiff as torch
        >>> with torch.autograd.profiler.profile(record_shapes=True) as prof:
        ...     y = torch.ones(3).sum()
        >>> prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=5)
        ''
    """

    def __init__(
        self,
        enabled: bool = True,
        *,
        use_cuda: bool = False,
        use_device: str | None = None,
        record_shapes: bool = False,
        with_flops: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_modules: bool = False,
        use_kineto: bool = False,
        use_cpu: bool = True,
        experimental_config: Any = None,
        acc_events: bool = False,
        custom_trace_id_callback: Callable | None = None,
    ) -> None:
        self.enabled = enabled
        self.function_events = EventList()

    def __enter__(self) -> profile:
        return self

    def __exit__(self, *exc_info) -> None:
        return None

    def key_averages(
        self,
        group_by_input_shape: bool = False,
        group_by_stack_n: int = 0,
        group_by_overload_name: bool = False,
    ) -> EventList:
        """The recorded events averaged by name: none."""
        return EventList()

    def table(self, *args, **kwargs) -> str:
        """The recorded events as a table (`EventList.table`'s arguments): empty."""
        return self.function_events.table(*args, **kwargs)

    def total_average(self) -> dict:
        return self.function_events.total_average()

    def export_chrome_trace(self, path: str) -> None:
        self.function_events.export_chrome_trace(path)

    @property
    def self_cpu_time_total(self) -> float:
        return 0.0

    def __str__(self) -> str:
        return self.table()


class record_function:
    """`torch.autograd.profiler.record_function(name)`: a labelled region (a context manager
    or a decorator); with nothing recorded, it only runs its code.

    Example:
        >>> with record_function("forward"):
        ...     pass
    """

    def __init__(self, name: str, args: str | None = None) -> None:
        if not isinstance(name, str):
            raise TypeError(f"record_function(name): name must be a str, got {type(name)}")
        self.name = name
        self.args = args

    def __enter__(self) -> record_function:
        return self

    def __exit__(self, *exc_info) -> None:
        return None

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return wrapped
