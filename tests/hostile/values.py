"""Hostile values that several areas use: names, host arrays, numbers."""

from __future__ import annotations

import random

import numpy as np

HOSTILE_NAMES = (
    "<!--<script>",
    "</script>",
    "<script>alert(1)</script>",
    "<!--",
    "-->",
    "<!-->",
    "\"'><img src=x onerror=alert(1)>",
    "</style><b>bold</b>",
    "&amp; &lt; &#0; &",
    "a\u2028b\u2029c",
    "${alert(1)}`\\",
    "<![CDATA[x]]>",
    "{{ template }} %(name)s {0}",
    "right-to-left \u202e override",
    "zero\u200bwidth",
    "emoji 🧪 \U0010ffff",
    "tab\tand\nnewline",
    "\\u003c/script\\u003e",
    "x" * 10_000,
    "lone \ud800 surrogate",
    "<" * 300,
)
"""Names for buffers, host arrays and ranges that a page must show as text."""

NAME_FRAGMENTS = (
    "<!--",
    "-->",
    "<script>",
    "</script>",
    "<script ",
    "</SCRIPT >",
    "<style>",
    "</textarea>",
    "&",
    "&lt;",
    '"',
    "'",
    "`",
    "\\",
    "\u2028",
    "\u2029",
    "\ud83e",
    "\u202e",
    "\x7f",
    "é",
    "名",
    "name",
    " ",
    "/",
)


def random_name(rng: random.Random) -> str:
    """A name made of 1 to 8 hostile fragments, now and then repeated to a long one."""
    name = "".join(rng.choice(NAME_FRAGMENTS) for _ in range(rng.randint(1, 8)))
    return name * rng.choice((1, 1, 1, 50))


def sample_values(dtype: np.dtype, size: int, seed: int = 0) -> np.ndarray:
    """``size`` distinct-looking values of ``dtype`` (for round trips)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size).astype(np.bool_)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -(10**6)), min(info.max, 10**6), size, dtype=dtype)
    return (rng.standard_normal(size) * 1000).astype(dtype)


def host_array(kind: str, values: np.ndarray) -> object:
    """A host array (or a thing in its place) of ``kind`` standing for ``values``: see
    :data:`HOST_ARRAY_KINDS`."""
    return HOST_ARRAY_KINDS[kind](values.copy())


def _unaligned(values: np.ndarray) -> np.ndarray:
    raw = np.zeros(values.nbytes + 1, np.uint8)
    out = raw[1:].view(values.dtype)
    out[:] = values
    return out


def _read_only(values: np.ndarray) -> np.ndarray:
    values.flags.writeable = False
    return values


class _Subclass(np.ndarray):
    """An ndarray subclass that adds nothing."""


HOST_ARRAY_KINDS = {
    "matching": lambda v: v,
    "2-d C-contiguous": lambda v: v.reshape(1, -1),
    "read-only": _read_only,
    "read-only from bytes": lambda v: np.frombuffer(v.tobytes(), v.dtype),
    "unaligned": _unaligned,
    "ndarray subclass": lambda v: v.view(_Subclass),
    "np.matrix": lambda v: np.matrix(v),
    "masked array": lambda v: np.ma.masked_array(v, mask=np.arange(v.size) % 2 == 0),
    "masked array, nothing masked": lambda v: np.ma.masked_array(v),
    "every second element": lambda v: np.repeat(v, 2)[::2],
    "reversed": lambda v: v[::-1].copy()[::-1],
    "Fortran-ordered 2-d": lambda v: np.asfortranarray(np.stack([v, v]))[0:1].T,
    "broadcast": lambda v: np.broadcast_to(v[:1], v.shape),
    "0-d": lambda v: np.array(v[0]),
    "float64": lambda v: v.astype(np.float64),
    "int32": lambda v: v.astype(np.int32),
    "float16": lambda v: v.astype(np.float16),
    "complex64": lambda v: v.astype(np.complex64),
    "big-endian": lambda v: v.astype(v.dtype.newbyteorder(">")),
    "object dtype": lambda v: v.astype(object),
    "structured": lambda v: np.zeros(v.size, [("a", v.dtype)]),
    "datetime64": lambda v: np.zeros(v.size, "datetime64[s]"),
    "one element short": lambda v: v[:-1],
    "one element more": lambda v: np.append(v, v[:1]),
    "empty": lambda v: v[:0],
    "list": lambda v: v.tolist(),
    "tuple": lambda v: tuple(v.tolist()),
    "bytes": lambda v: v.tobytes(),
    "memoryview": lambda v: memoryview(v),
    "numpy scalar": lambda v: v[0],
    "None": lambda v: None,
}
"""How to make each kind of host array from the values it should hold."""

VALID_UPLOADS = frozenset(
    {
        "matching",
        "2-d C-contiguous",
        "read-only",
        "read-only from bytes",
        "unaligned",
        "ndarray subclass",
        "np.matrix",
    }
)
"""Kinds an upload must accept (with the buffer's dtype and size)."""

VALID_DOWNLOADS = frozenset(
    {"matching", "2-d C-contiguous", "unaligned", "ndarray subclass", "np.matrix"}
)
"""Kinds a download must accept."""

WRONG_HOST_ARRAYS = frozenset(
    {
        "float64",
        "int32",
        "float16",
        "complex64",
        "big-endian",
        "object dtype",
        "structured",
        "datetime64",
        "one element short",
        "one element more",
        "empty",
        "None",
        "numpy scalar",
        "bytes",
    }
)
"""Kinds an upload or download must reject (a luisa_nb error): wrong dtype, size or type.
The other kinds may be rejected, or accepted if the values arrive intact."""


def spelled(value: object) -> str:
    """``value`` as a case title writes it: large powers as ``2**40``, types by name,
    lists and tuples item by item, other values by a short repr."""
    if isinstance(value, list):
        return "[" + ", ".join(spelled(item) for item in value) + "]"
    if isinstance(value, tuple):
        items = ", ".join(spelled(item) for item in value)
        return f"({items},)" if len(value) == 1 else f"({items})"
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**16:
        sign, size = ("-" if value < 0 else ""), abs(value)
        if size.bit_count() == 1:
            return f"{sign}2**{size.bit_length() - 1}"
        if (size + 1).bit_count() == 1:
            return f"{sign}(2**{size.bit_length()} - 1)"
        if str(size).rstrip("0") == "1":
            return f"{sign}10**{len(str(size)) - 1}"
    text = repr(value)
    if " at 0x" in text:  # an address would make the title differ from run to run
        return f"a {type(value).__name__}"
    return text if len(text) <= 40 else text[:37] + "..."
