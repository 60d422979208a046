"""The sweep's table, its list of cases that were not clean, and its JSON."""

from __future__ import annotations

import os
from collections import Counter

from .cases import AREAS
from .outcomes import CaseResult, Outcome

COLUMNS = (
    "area",
    "tried",
    "clean error or correct",
    "raw exception",
    "hang",
    "crash or silent",
)


def counts(results: list[CaseResult]) -> dict[str, Counter]:
    """Outcomes per area, in the order of :data:`AREAS` (areas that ran only)."""
    by_area: dict[str, Counter] = {}
    for result in results:
        by_area.setdefault(result.area, Counter())[result.outcome] += 1
    return {area: by_area[area] for area in AREAS if area in by_area}


def table(results: list[CaseResult]) -> str:
    """The Markdown table of outcomes, one row per area and a total."""
    rows = []
    total: Counter = Counter()
    for area, tally in counts(results).items():
        rows.append(_row(AREAS[area], tally))
        total += tally
    rows.append(_row("**total**", total))
    header = "| " + " | ".join(COLUMNS) + " |"
    rule = "|" + "|".join("---" for _ in COLUMNS) + "|"
    return "\n".join([header, rule, *rows])


def _row(title: str, tally: Counter) -> str:
    crash, silent = tally[Outcome.CRASH], tally[Outcome.SILENT]
    cells = (
        title,
        sum(tally.values()),
        tally[Outcome.CLEAN],
        tally[Outcome.RAW],
        tally[Outcome.HANG],
        f"{crash + silent} ({crash} crash, {silent} silent)" if crash + silent else 0,
    )
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def not_clean(results: list[CaseResult]) -> str:
    """One line per case that was not clean: outcome, case, what ended it."""
    lines = [
        f"{result.outcome.value:6}  {result.key}\n        {result.detail}"
        for result in results
        if result.outcome is not Outcome.CLEAN
    ]
    return "\n".join(lines)


def load_average() -> str:
    try:
        return ", ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def as_json(results: list[CaseResult], **about: object) -> dict[str, object]:
    return {
        **about,
        "table": {
            area: {outcome.value: tally[outcome] for outcome in Outcome}
            for area, tally in counts(results).items()
        },
        "results": [result.as_json() for result in results],
    }
