"""Many protobuf messages of one shape, encoded at once with numpy.

A trace of a million commands becomes millions of small messages; building each with
protobuf's classes costs about 10 µs, so the export would take minutes. Here a message
shape is built a field at a time as columns: each field is a run of byte segments (the
tag, a length prefix, the value), one row per message, left-aligned in a matrix with a
length per row. Joining the segments row by row gives each message's bytes. Field
numbers and wire types are the caller's, read from the ``.proto`` definitions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

VARINT, FIXED64, LENGTH_DELIMITED = 0, 1, 2


def varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each value (taken as uint64: a negative int64 becomes its two's complement, as
    protobuf encodes it) as a varint, left-aligned in a byte matrix as wide as the
    longest, and each one's length."""
    values = np.asarray(values).astype(np.uint64, copy=False)
    largest = int(values.max(initial=0))
    width = max(1, -(-largest.bit_length() // 7))
    if largest < 2**32:  # half the memory traffic: this is most of a trace's fields
        values = values.astype(np.uint32)
    groups = np.empty((len(values), width), np.uint8)
    lengths = np.ones(len(values), np.int64)
    for position in range(width):
        group = (values >> (7 * position)).astype(np.uint8) & 0x7F
        groups[:, position] = group
        lengths[group != 0] = position + 1
    groups[np.arange(width) < (lengths - 1)[:, None]] |= 0x80
    return groups, lengths


def _key(number: int, wire_type: int) -> np.ndarray:
    groups, lengths = varints(np.array([number << 3 | wire_type]))
    return groups[0, : lengths[0]]


class MessageRows:
    """``count`` messages of one shape. Each field method adds one field to every row,
    or to the rows where ``present`` is true."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._segments: list[tuple[np.ndarray, np.ndarray]] = []

    def _add(self, data: np.ndarray, lengths: np.ndarray | int, present: np.ndarray | None) -> None:
        lengths = np.broadcast_to(np.asarray(lengths, np.int64), (self.count,))
        if present is not None:
            lengths = np.where(present, lengths, 0)
        self._segments.append((data, lengths))

    def _tag(self, number: int, wire_type: int, present: np.ndarray | None) -> None:
        key = _key(number, wire_type)
        data = np.broadcast_to(key, (self.count, len(key)))
        self._add(data, len(key), present)

    def varint(self, number: int, values: np.ndarray | int, present: np.ndarray | None = None):
        """A varint field (int32, int64, uint32, uint64, bool, enum); ``values`` is one per
        row, or one for all."""
        self._tag(number, VARINT, present)
        if np.ndim(values) == 0:
            groups, lengths = varints(np.array([values]))
            self._add(np.broadcast_to(groups, (self.count, groups.shape[1])), lengths[0], present)
        else:
            self._add(*varints(values), present)

    def fixed64(self, number: int, values: np.ndarray, present: np.ndarray | None = None):
        """A ``fixed64`` field (one element of a repeated one, unpacked)."""
        self._tag(number, FIXED64, present)
        data = np.ascontiguousarray(values, "<u8").view(np.uint8).reshape(self.count, 8)
        self._add(data, 8, present)

    def text(self, number: int, values: Sequence[str], present: np.ndarray | None = None):
        """A string field; ``values`` has an entry for every row."""
        encoded = [value.encode() for value in values]
        lengths = np.fromiter(map(len, encoded), np.int64, self.count)
        data = np.zeros((self.count, int(lengths.max(initial=0))), np.uint8)
        data[np.arange(data.shape[1]) < lengths[:, None]] = np.frombuffer(
            b"".join(encoded), np.uint8
        )
        self._length_delimited(number, data, lengths, present)

    def message(self, number: int, inner: MessageRows, present: np.ndarray | None = None):
        """An embedded message field; ``inner`` has a row for every row of this one. Its
        segments are taken over as they are, so nesting costs no copy of their bytes."""
        self._tag(number, LENGTH_DELIMITED, present)
        self._add(*varints(inner.lengths()), present)
        for data, lengths in inner._segments:
            self._add(data, lengths, present)

    def _length_delimited(
        self, number: int, data: np.ndarray, lengths: np.ndarray, present: np.ndarray | None
    ) -> None:
        self._tag(number, LENGTH_DELIMITED, present)
        self._add(*varints(lengths), present)
        self._add(data, lengths, present)

    def lengths(self) -> np.ndarray:
        """Each message's length in bytes."""
        return sum((lengths for _, lengths in self._segments), np.zeros(self.count, np.int64))

    def encoded(self) -> tuple[np.ndarray, np.ndarray]:
        """The messages' bytes one after another, and where each starts, with the end as a
        last entry."""
        data = np.hstack([segment for segment, _ in self._segments]).astype(np.uint8)
        used = np.hstack(
            [np.arange(segment.shape[1]) < lengths[:, None] for segment, lengths in self._segments]
        )
        offsets = np.zeros(self.count + 1, np.int64)
        np.cumsum(self.lengths(), out=offsets[1:])
        return data[used], offsets


def merged(blocks: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> bytes:
    """Several :meth:`MessageRows.encoded` results ``(bytes, offsets, keys)``, each in the
    order of its ``keys`` (one sortable number per message), merged into one run in key
    order. Copies whole runs of consecutive messages, so merging a few messages into
    millions costs little."""
    keys = np.concatenate([block_keys for *_, block_keys in blocks])
    sources = np.concatenate([np.full(len(k), b) for b, (*_, k) in enumerate(blocks)])
    rows = np.concatenate([np.arange(len(k)) for *_, k in blocks])
    order = np.argsort(keys, kind="stable")
    sources, rows = sources[order], rows[order]
    breaks = np.flatnonzero((np.diff(sources) != 0) | (np.diff(rows) != 1)) + 1
    starts = np.concatenate([[0], breaks])
    stops = np.concatenate([breaks, [len(order)]])
    pieces = []
    for start, stop in zip(starts.tolist(), stops.tolist(), strict=True):
        data, offsets, _ = blocks[sources[start]]
        first, last = rows[start], rows[stop - 1]
        pieces.append(data[offsets[first] : offsets[last + 1]].tobytes())
    return b"".join(pieces)
