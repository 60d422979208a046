"""Many traces as one Parquet dataset: ``FOLDER/commands/NAME.parquet`` (the rows of
:meth:`~luisa_nb.recording.trace.Trace.to_arrow`) and ``FOLDER/findings/NAME.parquet``
(:meth:`~luisa_nb.analysis.AnalyzedTrace.findings_to_arrow`), each with a ``trace`` column
holding NAME, so that DuckDB, pandas or Spark read all traces as two tables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from luisa_nb.analysis.frames import findings_arrow
from luisa_nb.errors import ConfigurationError
from luisa_nb.recording.atomic_files import atomic_write
from luisa_nb.recording.file_paths import MISSING_FOLDER, checked_path, file_errors
from luisa_nb.recording.frames import needed, trace_arrow

if TYPE_CHECKING:
    from luisa_nb.analysis import AnalyzedTrace

TABLES = ("commands", "findings")


def export_parquet(
    traces: Mapping[str, AnalyzedTrace], folder: str | os.PathLike[str]
) -> list[Path]:
    """Write each trace's two tables under ``folder`` (made if missing), named by the
    mapping's keys; returns the files written. A name that is not a plain file name
    raises :class:`~luisa_nb.errors.ConfigurationError` before anything is written."""
    pa = needed("pyarrow", "the Parquet export")
    parquet = needed("pyarrow.parquet", "the Parquet export")
    for name in traces:
        if not name or Path(name).name != name or name in (".", ".."):
            raise ConfigurationError(
                f"trace name {name!r} is not a plain file name; name each trace by its file's stem"
            )
    doing = "write the Parquet dataset to"
    root = checked_path(folder, doing)
    written = []
    for name, trace in traces.items():
        for table_name, table in (
            ("commands", trace_arrow(trace)),
            ("findings", findings_arrow(trace, trace.hazards)),
        ):
            table = table.append_column("trace", pa.array([name] * table.num_rows, pa.string()))
            target = root / table_name / f"{name}.parquet"
            with file_errors(target, doing, MISSING_FOLDER):
                target.parent.mkdir(parents=True, exist_ok=True)
                with atomic_write(target) as file:
                    parquet.write_table(table, file)
            written.append(target)
    return written
