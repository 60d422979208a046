"""What the extension shows below a cell: a summary of a trace (its hazards, and for each
stale upload the staged bytes beside the bytes stream order says it should have sent),
then the trace viewer of :mod:`luisa_nb.widgets` where it can be imported, else a table of
the commands with the moments they touched host memory. A comparison shows its
side-by-side table, then a ``DiffView`` widget per array that differs.

Every view here is an object with ``_repr_html_`` and a plain-text ``__repr__``, so it
renders in JupyterLab, in nbconvert output, on GitHub and in a terminal.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from luisa_nb.analysis import AnalyzedTrace, FindingGroup, HazardKind, pending_note
from luisa_nb.analysis.comparison import Comparison
from luisa_nb.recording.table import POLICIES
from luisa_nb.views.array_diff import upload_array_diff
from luisa_nb.views.comparison import comparison_html
from luisa_nb.views.fallbacks import findings_anchor
from luisa_nb.views.html import cell, command_table, escape, finding_table, table, theme_style
from luisa_nb.views.theme import MARK_STYLE
from luisa_nb.views.timeline import Analysis, build_timeline, finding_summary

DIFF_ROWS = 8
"""How many differing elements of a stale upload the summary lists."""
SUMMARY_FINDINGS = 3
"""How many places with findings the summary above the viewer lists; the viewer's
finding list holds every one ("and N more" links there)."""
SUMMARY_COMMANDS = 12
"""How many commands the summary lists where the viewer cannot be shown."""
DIFF_VIEWS = 4
"""How many DiffView widgets a comparison shows at most (one per differing array and
configuration); the table above them lists every array."""


class HazardTable:
    """The findings of a trace as a table, one row per place in the program: kind and
    count, commands, the first occurrence's message and its fix. ``limit`` rows at most;
    past them, "and N more" (a link to ``more_link`` where given)."""

    def __init__(
        self,
        findings: Sequence[FindingGroup],
        title: str = "hazards",
        *,
        limit: int | None = None,
        more_link: str = "",
    ) -> None:
        self.findings = list(findings)
        self.title = title
        self.limit = len(self.findings) if limit is None else limit
        self.more_link = more_link

    @property
    def occurrences(self) -> int:
        return sum(group.count for group in self.findings)

    def _count_text(self) -> str:
        places = len(self.findings)
        if self.occurrences == places:
            return str(places)
        return f"{self.occurrences} at {_count(places, 'place')} in the program"

    def _repr_html_(self) -> str:
        if not self.findings:
            return (
                f"{theme_style()}<p class='lnb-ipython-hazards'><b>{escape(self.title)}</b>: "
                "none found "
                "(no stale upload, host write in flight or device race).</p>"
            )
        rows = [finding_summary(index, group) for index, group in enumerate(self.findings)]
        return (
            f"{theme_style()}<div class='lnb-ipython-hazards'><b>{escape(self.title)}</b>: "
            f"{escape(self._count_text())}"
            f"{finding_table(rows, limit=self.limit, more_link=self.more_link)}</div>"
        )

    def __repr__(self) -> str:
        if not self.findings:
            return f"{self.title}: none found"
        lines = [f"{self.title}: {self._count_text()}"]
        lines.extend(f"  {group}" for group in self.findings[: self.limit])
        if len(self.findings) > self.limit:
            lines.append(f"  and {len(self.findings) - self.limit} more (see the trace viewer)")
        return "\n".join(lines)


class TraceSummary:
    """A trace in brief, about one screen whatever its size: what was recorded, the first
    places with findings (:data:`SUMMARY_FINDINGS`; ``more_link`` points to the viewer's
    list of every one), the staged-vs-expected elements of the first stale upload and,
    with ``commands=True``, the first commands with the moments they ran and touched host
    memory (microseconds after the trace started)."""

    def __init__(
        self,
        trace: AnalyzedTrace,
        *,
        commands: bool = True,
        title: str | None = None,
        more_link: str = "",
    ) -> None:
        self.trace = trace
        self.commands = commands
        self.title = title
        self.more_link = more_link

    def _heading(self) -> str:
        trace = self.trace
        devices = sorted({info.device for info in trace.streams.values()})
        codes = np.unique(trace.table.numbers["staging"]).tolist()  # no record per command
        stagings = sorted(POLICIES[code] for code in codes)
        where = f" on {', '.join(devices)}" if devices else ""
        staging = f", staging={'/'.join(stagings)}" if stagings else ""
        prefix = f"{self.title}: " if self.title else ""
        command_count, sync_count = trace.counts
        commands = _count(command_count, "command")
        syncs = _count(sync_count, "sync point")
        return (
            f"{prefix}trace of {commands} and {syncs}{where}{staging}, "
            f"capture={trace.metadata.capture}"
        )

    def _table(self) -> HazardTable:
        return HazardTable(self.trace.findings, limit=SUMMARY_FINDINGS, more_link=self.more_link)

    def _repr_html_(self) -> str:
        parts = [
            f"<div class='lnb-ipython-summary'><p><b>luisa_nb</b> {escape(self._heading())}</p>"
        ]
        note = pending_note(self.trace)
        if note is not None:
            parts.append(f"<p class='lnb-bad lnb-pending'><b>{escape(note)}</b></p>")
        parts.append(self._table()._repr_html_())
        stale = self._stale()
        if stale is not None:
            parts.append(_stale_upload_html(self.trace, stale))
        if self.commands:
            parts.append(_commands_html(self.trace))
        parts.append("</div>")
        return "".join(parts)

    def __repr__(self) -> str:
        note = pending_note(self.trace)
        lines = [self._heading(), *([note] if note else []), repr(self._table())]
        stale = self._stale()
        check = None if stale is None else _check(self.trace, stale)
        if check is not None and check.staged is not None and check.expected is not None:
            lines.append(
                f"  upload #{check.command_id} staged {check.differing_indices.size} "
                "element(s) that differ from what stream order says"
            )
        return "\n".join(lines)

    def _stale(self) -> FindingGroup | None:
        """The first place with stale uploads: its first occurrence's bytes are shown."""
        for group in self.trace.findings:
            if group.kind is HazardKind.STALE_UPLOAD:
                return group
        return None


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _check(trace: AnalyzedTrace, group: FindingGroup):
    try:
        return trace.upload(group.first.command_ids[-1])
    except KeyError:
        return None


def _stale_upload_html(trace: AnalyzedTrace, group: FindingGroup) -> str:
    check = _check(trace, group)
    if check is None:
        return ""
    if check.staged is None or check.expected is None:
        return (
            f"<p>upload #{check.command_id}: the bytes were not captured: "
            f"{escape(trace.uncaptured_reason())}.</p>"
        )
    indices = check.differing_indices
    first = [int(index) for index in indices[:DIFF_ROWS]]
    shown = upload_array_diff(trace, check)  # names an element in the array's shape
    header, labels = "index", [str(index) for index in first]
    if shown is not None and all(index < shown.size for index in first):
        header = "pixel (x, y, channel)" if shown.image else "index"
        labels = [str(tuple(shown.unravel(index))) for index in first]
    rows = [
        "<tr>"
        + cell(label, numeric=True)
        + cell(escape(check.expected[index]), numeric=True)
        + cell(escape(check.staged[index]), numeric=True, style=MARK_STYLE)
        + "</tr>"
        for index, label in zip(first, labels, strict=True)
    ]
    others = (
        f" (the first of {group.count} stale uploads at this place; the viewer shows each)"
        if group.count > 1
        else ""
    )
    return (
        f"<div class='lnb-ipython-staged'>upload #{check.command_id}{others} staged "
        f"<b>{indices.size}</b> element(s) that differ from what stream order says; the "
        f"first {min(DIFF_ROWS, indices.size)}:"
        f"{table([header, 'expected', 'staged'], rows, numeric=(True, True, True))}</div>"
    )


def _commands_html(trace: AnalyzedTrace) -> str:
    data = build_timeline(trace, Analysis.of(trace))
    return (
        "<details class='lnb-ipython-commands' open><summary>commands and sync points (times "
        "in µs after the trace started; commands named by a hazard are highlighted)</summary>"
        f"{command_table(data, limit=SUMMARY_COMMANDS)}</details>"
    )


def trace_viewer() -> Callable[[AnalyzedTrace], object] | None:
    """``luisa_nb.widgets.show`` where the widgets can be imported, else ``None``."""
    try:
        from luisa_nb.widgets import show
    except ImportError:
        return None
    return show


def show_trace(trace: AnalyzedTrace, *, title: str | None = None) -> None:
    """Display ``trace`` below the running cell: its summary, then the trace viewer (or,
    without the widgets, the table of commands)."""
    from IPython.display import display

    viewer = trace_viewer()
    with _collection_paused():
        if viewer is None:
            display(TraceSummary(trace, title=title))
            return
        anchor = findings_anchor()
        display(TraceSummary(trace, commands=False, title=title, more_link=f"#{anchor}"))
        viewer(trace, anchor=anchor)


@contextmanager
def _collection_paused() -> Iterator[None]:
    """No cyclic garbage collection meanwhile. Analysing and showing a big trace makes
    objects by the hundred thousand while the trace's own records are alive, and each full
    collection would walk them all (a quarter of the time of a 20,000-command trace);
    what becomes garbage meanwhile is collected after."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def diff_view_class() -> type | None:
    """``luisa_nb.widgets.DiffView`` where the widgets (and ipywidgets) can be imported."""
    try:
        from luisa_nb.widgets import DiffView
    except ImportError:
        return None
    return DiffView


def show_comparison(comparison: Comparison) -> None:
    """Display ``comparison``: the side-by-side table, then a DiffView of each array that
    differs from the reference (at most :data:`DIFF_VIEWS`)."""
    from IPython.display import display

    display({"text/plain": repr(comparison), "text/html": comparison_html(comparison)}, raw=True)
    view = diff_view_class()
    if view is None:
        return
    differing = [d for d in comparison.differences if not d.equal and d.note is None]
    for difference in differing[:DIFF_VIEWS]:
        reference = comparison.runs[0].arrays[difference.name]
        other = comparison.run(difference.config).arrays[difference.name]
        title = f"{difference.name}: {difference.config} against {difference.reference_config}"
        names = (difference.reference_config, difference.config)
        try:
            widget = view(reference, other, names=names, title=title)
        except (TypeError, ValueError):  # a dtype the view cannot show; the table has it
            continue
        display(widget)
    if len(differing) > DIFF_VIEWS:
        print(f"{len(differing) - DIFF_VIEWS} more differing array(s): see the table above")
