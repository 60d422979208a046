"""The trace clock, shared by every thread and (through offsets) every process."""

from __future__ import annotations

from time import perf_counter_ns as now

__all__ = ["now"]
