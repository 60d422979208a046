"""Expected against actual values: statistics, a heatmap of differences, and pages of
values as binary buffers. Shared by ``DiffView``, ``StagingInspector`` and the static page.

No widget code here: an :class:`ArrayDiff` is plain numpy, so the report and the tests
use it without a notebook.
"""

from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np

from luisa_nb.analysis.differences import differing_values, largest_errors
from luisa_nb.analysis.uploads import UploadCheck
from luisa_nb.errors import BufferMismatchError, ConfigurationError, HostDtypeError
from luisa_nb.png import encode_png
from luisa_nb.recording import CommandRecord, Trace
from luisa_nb.recording.naming import describe

DEFAULT_PAGE_SIZE = 256
FIRST_INDICES = 16
HEATMAP_MAX_ROWS = 128
HEATMAP_MAX_COLUMNS = 512
#: Elements per side a static page embeds (pages beyond need a kernel).
STATIC_ELEMENT_LIMIT = 1 << 16
PAGE_MODES = ("all", "differing")
EARLY_VERDICT = (
    "stale upload with equal bytes: it read host memory before the download wrote it; "
    "the old bytes happen to equal the new ones in this run, so the result is right by luck"
)

# numpy kind+itemsize -> the dtype the browser receives (a JS typed array exists for each)
_TRANSPORT = {
    "b1": "u1",
    "i1": "i1",
    "u1": "u1",
    "i2": "i2",
    "u2": "u2",
    "i4": "i4",
    "u4": "u4",
    "i8": "i8",
    "u8": "u8",
    "f2": "f4",
    "f4": "f4",
    "f8": "f8",
}


def as_values(value: Any, name: str) -> np.ndarray:
    """``value`` as a numpy array: arrays, sequences, or objects with ``.numpy()``
    (device buffers)."""
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.numpy()
    array = np.asarray(value)
    transport_dtype(array.dtype, name)
    return array


def transport_dtype(dtype: np.dtype, name: str = "array") -> str:
    """The little-endian dtype code (``"f4"``) that values of ``dtype`` travel as."""
    key = f"{dtype.kind}{dtype.itemsize}"
    if key not in _TRANSPORT:
        raise HostDtypeError(
            f"{name} has dtype {dtype}, which the diff view cannot show; pass a real numeric "
            "or bool array (for complex values compare .real and .imag separately)"
        )
    return _TRANSPORT[key]


PICTURE_SIZE = 256


def _json_number(value: float) -> float | str:
    """JSON has no inf or nan; they travel as the strings Python prints."""
    value = float(value)
    return value if math.isfinite(value) else repr(value)


class ArrayDiff:
    """``expected`` against ``actual`` (same shape), element by element.

    ``differing`` (flat indices) overrides the element comparison, e.g. with an upload
    check's byte comparison. Otherwise elements differ where ``expected != actual``, with
    NaN equal to NaN. ``verdict`` replaces "all elements are equal" where equal values
    do not mean a correct program.
    """

    def __init__(
        self,
        expected: Any,
        actual: Any,
        *,
        names: tuple[str, str] = ("expected", "actual"),
        title: str = "",
        notes: list[str] | None = None,
        differing: np.ndarray | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        image: bool = False,
        verdict: str | None = None,
    ) -> None:
        expected = as_values(expected, names[0])
        actual = as_values(actual, names[1])
        if expected.shape != actual.shape:
            raise BufferMismatchError(
                f"{names[0]} has shape {expected.shape} and {names[1]} has shape "
                f"{actual.shape}; compare arrays of the same shape (reshape one of them)"
            )
        if page_size < 1:
            raise ConfigurationError(f"page_size={page_size} must be at least 1")
        self.names = names
        self.title = title
        self.notes = list(notes or [])
        self.verdict = verdict
        self.shape = tuple(int(n) for n in expected.shape)
        self.expected = np.ascontiguousarray(expected).reshape(-1)
        self.actual = np.ascontiguousarray(actual).reshape(-1)
        self.page_size = page_size
        if differing is None:
            differing = differing_values(self.expected, self.actual)
        self.differing = np.asarray(differing, np.intp).reshape(-1)
        self._errors = largest_errors(self.expected, self.actual, self.differing)
        self.image = image and len(self.shape) == 3 and self.shape[2] in (1, 2, 4)

    # -- statistics ----------------------------------------------------------------------

    @property
    def size(self) -> int:
        return int(self.expected.size)

    @property
    def count(self) -> int:
        """How many elements differ."""
        return int(self.differing.size)

    def unravel(self, flat: int) -> list[int]:
        """The index of element ``flat``: ``(x, y, channel)`` of a pixel in an image, else
        the array index."""
        if not self.shape:
            return []
        index = [int(i) for i in np.unravel_index(int(flat), self.shape)]
        return [index[1], index[0], index[2]] if self.image else index

    def first_indices(self, limit: int = FIRST_INDICES) -> list[list[int]]:
        return [self.unravel(i) for i in self.differing[:limit]]

    @property
    def max_abs_error(self) -> float | None:
        return None if self._errors is None else self._errors.absolute

    @property
    def max_rel_error(self) -> float | None:
        return None if self._errors is None else self._errors.relative

    def pages(self, mode: str) -> int:
        total = self.size if mode == "all" else self.count
        return max(1, -(-total // self.page_size))

    # -- view data -----------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        errors = None
        if self._errors is not None:
            absolute, abs_at, relative, rel_at = self._errors
            errors = {
                "max_abs": _json_number(absolute),
                "max_abs_index": self.unravel(abs_at),
                "max_rel": _json_number(relative),
                "max_rel_index": self.unravel(rel_at),
            }
        return {
            "available": True,
            "title": self.title,
            "notes": self.notes,
            "verdict": self.verdict,
            "names": list(self.names),
            "dtypes": [str(self.expected.dtype), str(self.actual.dtype)],
            "transport": [transport_dtype(self.expected.dtype), transport_dtype(self.actual.dtype)],
            "shape": list(self.shape),
            "size": self.size,
            "count": self.count,
            "first_indices": self.first_indices(),
            "first_flat": [int(i) for i in self.differing[:FIRST_INDICES]],
            "errors": errors,
            "page_size": self.page_size,
            "pages": {mode: self.pages(mode) for mode in PAGE_MODES},
            "heatmap": self.heatmap_layout(),
            "pictures": self.pictures() if self.image else None,
            "index_name": "pixel (x, y, channel)" if self.image else "index",
        }

    def pictures(self) -> dict[str, str]:
        """For an image (``(height, width, channels)``): PNG data URLs, channel by channel,
        of both sides (on one grey scale) and of their absolute difference (black: equal,
        white: the channel's largest difference), at most :data:`PICTURE_SIZE` pixels a
        side. Captions name the side and the channel: ``expected · channel 0 (R)``."""
        shape = self.shape
        step = max(1, -(-max(shape[0], shape[1]) // PICTURE_SIZE))
        expected = self.expected.reshape(shape)[::step, ::step].astype(np.float64)
        actual = self.actual.reshape(shape)[::step, ::step].astype(np.float64)
        expected, actual = np.nan_to_num(expected), np.nan_to_num(actual)
        pictures = {}
        for channel in range(shape[2]):
            sides = expected[..., channel], actual[..., channel]
            low = min(float(side.min()) for side in sides)
            high = max(float(side.max()) for side in sides)
            difference = np.abs(sides[0] - sides[1])
            label = f"channel {channel} ({_CHANNEL_NAMES[channel]})"
            for name, values, scale in (
                (self.names[0], sides[0] - low, high - low),
                (self.names[1], sides[1] - low, high - low),
                ("difference", difference, float(difference.max())),
            ):
                pictures[f"{name} · {label}"] = _grey_png(values, scale)
        return pictures

    def heatmap_layout(self) -> dict[str, int]:
        """The heatmap grid: data rows x columns, pooled into ``grid`` cells."""
        rows, columns = self._matrix_shape()
        grid_rows = min(rows, HEATMAP_MAX_ROWS)
        grid_columns = min(columns, HEATMAP_MAX_COLUMNS)
        return {
            "rows": rows,
            "columns": columns,
            "grid_rows": grid_rows,
            "grid_columns": grid_columns,
        }

    def _matrix_shape(self) -> tuple[int, int]:
        if len(self.shape) >= 2:
            return self.size // max(self.shape[-1], 1), self.shape[-1]
        return 1, self.size

    def heatmap(self) -> np.ndarray:
        """uint8 cells, row-major: 0 where no element differs, else 64..255 by the
        largest absolute difference in the cell (log scale; 255 for inf and nan)."""
        layout = self.heatmap_layout()
        rows, columns = layout["rows"], layout["columns"]
        grid = np.zeros((layout["grid_rows"], layout["grid_columns"]), np.uint8)
        if not self.count or not self.size:
            return grid
        error = np.zeros(self.size, np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            gaps = np.abs(
                self.actual[self.differing].astype(np.float64)
                - self.expected[self.differing].astype(np.float64)
            )
        gaps[~np.isfinite(gaps)] = np.inf
        gaps[gaps == 0] = np.finfo(np.float64).tiny  # differing bits, equal values (-0.0)
        error[self.differing] = gaps
        matrix = error.reshape(rows, columns)
        row_starts = np.linspace(0, rows, layout["grid_rows"], endpoint=False).astype(np.intp)
        column_starts = np.linspace(0, columns, layout["grid_columns"], endpoint=False)
        pooled = np.maximum.reduceat(matrix, row_starts, axis=0)
        pooled = np.maximum.reduceat(pooled, column_starts.astype(np.intp), axis=1)
        finite = pooled[np.isfinite(pooled) & (pooled > 0)]
        if finite.size:
            low, high = np.log(finite.min()), np.log(finite.max())
            span = high - low if high > low else 1.0
            with np.errstate(divide="ignore"):
                level = 64 + 191 * (np.log(pooled) - low) / span
            grid[:] = np.clip(np.nan_to_num(level, nan=0.0, neginf=0.0), 0, 255)
        grid[pooled == 0] = 0
        grid[np.isinf(pooled)] = 255
        return grid

    def page(self, mode: str, number: int) -> tuple[dict[str, Any], list[bytes]]:
        """Page ``number`` of ``mode`` ("all" elements or only "differing" ones): a
        message and three buffers (flat indices as f8, expected values, actual values)."""
        if mode not in PAGE_MODES:
            raise ValueError(f"page mode {mode!r} is not one of {PAGE_MODES}")
        pages = self.pages(mode)
        if not 0 <= number < pages:
            raise ValueError(f"page {number} of {mode!r} does not exist (0..{pages - 1})")
        low = number * self.page_size
        if mode == "all":
            indices = np.arange(low, min(low + self.page_size, self.size))
        else:
            indices = self.differing[low : low + self.page_size]
        message = {
            "type": "page",
            "mode": mode,
            "page": number,
            "pages": pages,
            "count": int(indices.size),
        }
        return message, [
            indices.astype("<f8").tobytes(),
            self._transport(self.expected[indices]),
            self._transport(self.actual[indices]),
        ]

    def embedded(self, limit: int = STATIC_ELEMENT_LIMIT) -> dict[str, bytes]:
        """The values a static page holds so it can page without a kernel: the first
        ``limit`` elements and the first ``limit`` differing ones."""
        head = slice(0, min(self.size, limit))
        differing = self.differing[:limit]
        return {
            "all_expected": self._transport(self.expected[head]),
            "all_actual": self._transport(self.actual[head]),
            "diff_indices": differing.astype("<f8").tobytes(),
            "diff_expected": self._transport(self.expected[differing]),
            "diff_actual": self._transport(self.actual[differing]),
        }

    @staticmethod
    def _transport(values: np.ndarray) -> bytes:
        return np.ascontiguousarray(values, "<" + transport_dtype(values.dtype)).tobytes()


_CHANNEL_NAMES = "RGBA"


def _grey_png(values: np.ndarray, scale: float) -> str:
    """``values`` (2-D, from 0 to ``scale``) as a grey PNG data URL."""
    grey = np.round(np.clip(values / scale if scale > 0 else values * 0, 0, 1) * 255)
    pixels = np.repeat(grey.astype(np.uint8)[..., None], 3, axis=2)
    return "data:image/png;base64," + base64.b64encode(encode_png(pixels)).decode()


def upload_array_diff(
    trace: Trace,
    check: UploadCheck,
    command: CommandRecord | None = None,
    page_size: int = DEFAULT_PAGE_SIZE,
    *,
    early: bool = False,
) -> ArrayDiff | None:
    """Staged against expected bytes of an upload, as typed values in the host array's
    shape when every element was captured; ``None`` when the bytes were not captured.
    ``early``: the upload read host memory before a download wrote it, so equal values
    are luck, not a correct program, and the verdict says so."""
    if check.expected is None or check.staged is None:
        return None
    command = command if command is not None else trace.command(check.command_id)
    host = command.host
    known = min(check.expected.size, check.staged.size)
    elements = host.nbytes // np.dtype(host.dtype).itemsize if host is not None else known
    notes = []
    if known < elements:
        notes.append(
            f"the trace holds the first {known} of {elements} elements "
            f"(capture={trace.metadata.capture!r}); trace with capture='full' to see all"
        )
    for source in check.sources:
        if source.command_id is not None:
            notes.append(
                f"elements {source.start}..{source.stop} should come from "
                f"#{source.command_id} (a download issued before this upload)"
            )
    shape = tuple(host.shape) if host is not None else (known,)
    image = _image_shape(trace, command)
    if image is not None and int(np.prod(image)) == elements:
        shape = image
    if known < elements and len(shape) >= 2:
        # a head of the bytes: show its whole leading rows, in the array's shape
        row = int(np.prod(shape[1:]))
        rows = known // row
        if rows:
            notes[0] = (
                f"the trace holds the first {rows} of {shape[0]} rows "
                f"(capture={trace.metadata.capture!r}); trace with capture='full' to see all"
            )
            known, shape = rows * row, (rows, *shape[1:])
            image = (rows, *image[1:]) if image is not None else None
    expected, staged = check.expected[:known], check.staged[:known]
    if int(np.prod(shape)) == known:
        expected, staged = expected.reshape(shape), staged.reshape(shape)
    differing = check.differing_indices[check.differing_indices < known]
    return ArrayDiff(
        expected,
        staged,
        names=("expected", "staged"),
        title=f"{describe(trace, command)}: staged bytes against stream order",
        notes=notes,
        differing=differing,
        page_size=page_size,
        image=image is not None,
        verdict=EARLY_VERDICT if early and not differing.size else None,
    )


def _image_shape(trace: Trace, command: CommandRecord) -> tuple[int, int, int] | None:
    """The ``(height, width, channels)`` of the image an upload writes whole, if it does."""
    for device in command.device_ranges:
        info = trace.buffers.get(device.buffer)
        if info is not None and info.image is not None and device.nbytes == info.nbytes:
            return tuple(info.image)
    return None


def unavailable(title: str, reason: str) -> dict[str, Any]:
    """The summary of a view with nothing to compare."""
    return {"available": False, "title": title, "notes": [reason]}
