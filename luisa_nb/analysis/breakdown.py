"""Whole-trace analyses as tables, in the style of trace-analysis notebooks: where each
stream's time went, how deep its queue was, how many bytes uploads staged, and how two
traces differ by command and by finding. All take the tables of
:meth:`~luisa_nb.recording.trace.Trace.to_pandas` and
:meth:`~luisa_nb.analysis.AnalyzedTrace.findings_to_pandas` (``luisa_nb[data]``); times
are nanoseconds from the trace's start. :mod:`luisa_nb.views.data_figures` draws them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from luisa_nb.recording.frames import needed

if TYPE_CHECKING:
    import pandas

    from luisa_nb.analysis import AnalyzedTrace

BREAKDOWN_COLUMNS = ("stream", "span", "busy", "queued", "waiting_on_host", "busy_fraction")


def _ran(commands: pandas.DataFrame) -> pandas.DataFrame:
    frame = commands[commands["record"] == "command"]
    return frame[frame["started"].notna() & frame["finished"].notna()]


def stream_breakdown(trace: AnalyzedTrace) -> pandas.DataFrame:
    """A row per stream: ``span`` from its first submission to its last command's end,
    split into ``busy`` (a command running), ``queued`` (idle with commands submitted
    but not started: waiting on an event, on staging or on the worker) and
    ``waiting_on_host`` (idle with nothing submitted: the host had not sent work)."""
    pd = needed("pandas", "the stream breakdown")
    rows = []
    for stream, commands in _ran(trace.to_pandas()).groupby("stream_name", sort=True):
        submitted = commands["submitted"].to_numpy(np.int64)
        started = commands["started"].to_numpy(np.int64)
        finished = np.maximum(commands["finished"].to_numpy(np.int64), started)
        moments = np.unique(np.concatenate([submitted, started, finished]))
        lengths = np.diff(moments)
        segments = moments[:-1]
        busy = _open_at(started, finished, segments) > 0
        pending = _open_at(submitted, finished, segments) > 0
        span = int(lengths.sum())
        busy_time = int(lengths[busy].sum())
        rows.append(
            {
                "stream": stream,
                "span": span,
                "busy": busy_time,
                "queued": int(lengths[pending & ~busy].sum()),
                "waiting_on_host": int(lengths[~pending].sum()),
                "busy_fraction": busy_time / span if span else 0.0,
            }
        )
    return pd.DataFrame(rows, columns=list(BREAKDOWN_COLUMNS))


def _open_at(begins: np.ndarray, ends: np.ndarray, moments: np.ndarray) -> np.ndarray:
    """How many of the intervals ``[begin, end)`` hold each moment."""
    opened = np.searchsorted(np.sort(begins), moments, "right")
    return opened - np.searchsorted(np.sort(ends), moments, "right")


def queue_depth(trace: AnalyzedTrace) -> pandas.DataFrame:
    """How many commands each stream held (submitted, not yet finished) from each moment
    on: columns ``time``, ``stream``, ``depth``, one row per change. A command that never
    ran stays in the queue to the end of the trace."""
    pd = needed("pandas", "the queue depth")
    frames = []
    commands = trace.to_pandas()
    commands = commands[commands["record"] == "command"]
    for stream, rows in commands.groupby("stream_name", sort=True):
        submitted = rows["submitted"].to_numpy(np.int64)
        finished = rows["finished"].dropna().to_numpy(np.int64)
        times = np.concatenate([submitted, finished])
        steps = np.concatenate(
            [np.ones(len(submitted), np.int64), -np.ones(len(finished), np.int64)]
        )
        order = np.lexsort((steps, times))  # at one moment, a finish before a submission
        depth = np.cumsum(steps[order])
        frame = pd.DataFrame({"time": times[order], "stream": stream, "depth": depth})
        frames.append(frame.drop_duplicates("time", keep="last"))
    if not frames:
        return pd.DataFrame(columns=["time", "stream", "depth"])
    return pd.concat(frames, ignore_index=True)


def staged_bytes(trace: AnalyzedTrace) -> pandas.DataFrame:
    """A row per upload that read host memory: ``time`` of the read, ``stream``,
    ``nbytes``, the stream's running ``total`` and whether a finding says the upload sent
    stale bytes (``stale``)."""
    commands = trace.to_pandas()
    uploads = commands[(commands["kind"] == "upload") & commands["host_read"].notna()]
    stale = {h.command_ids[-1] for h in trace.hazards if "STALE" in h.kind.value}
    frame = uploads[["id", "host_read", "stream_name", "host_nbytes"]].rename(
        columns={"host_read": "time", "stream_name": "stream", "host_nbytes": "nbytes"}
    )
    frame = frame.sort_values("time", kind="stable").reset_index(drop=True)
    frame["total"] = frame.groupby("stream")["nbytes"].cumsum()
    frame["stale"] = frame["id"].isin(stale)
    return frame


@dataclass
class TraceComparison:
    """Two traces side by side. ``commands``: per kind of command (its kind, label,
    buffers and host array) the count and total run time in each; ``findings``: per
    finding (kind and the two commands, described without ids) the count in each. A
    ``change`` column holds after minus before."""

    commands: pandas.DataFrame
    findings: pandas.DataFrame


def compare_traces(before: AnalyzedTrace, after: AnalyzedTrace) -> TraceComparison:
    """How ``after`` differs from ``before``, by command and by finding."""
    needed("pandas", "the trace comparison")

    def commands(trace: AnalyzedTrace) -> pandas.DataFrame:
        frame = trace.to_pandas()
        frame = frame[frame["record"] == "command"].copy()
        frame["command"] = (
            (
                frame["kind"]
                + " "
                + frame["label"].fillna("")
                + " "
                + frame["buffer_names"].map(lambda names: ",".join(map(str, names)))
                + " "
                + frame["host_name"].fillna("")
            )
            .str.split()
            .str.join(" ")
        )
        frame["run_time"] = frame["finished"] - frame["started"]
        return frame.groupby("command").agg(count=("id", "size"), run_time=("run_time", "sum"))

    def findings(trace: AnalyzedTrace) -> pandas.DataFrame:
        frame = trace.findings_to_pandas()
        return frame.groupby(["kind", "earlier", "later"]).agg(count=("finding", "size"))

    def side_by_side(left: pandas.DataFrame, right: pandas.DataFrame) -> pandas.DataFrame:
        joined = left.join(right, how="outer", suffixes=("_before", "_after"))
        joined = joined.fillna(0).astype("int64")
        joined["change"] = joined["count_after"] - joined["count_before"]
        return joined.reset_index()

    return TraceComparison(
        side_by_side(commands(before), commands(after)),
        side_by_side(findings(before), findings(after)),
    )
