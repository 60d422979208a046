"""What kernels' data look like on the wire: numpy dtypes as JSON, and the argument
struct a served kernel is launched with.

A *dtype description* is JSON that names a buffer element or a by-value argument:

- a base type: ``"<f4"``, ``"|u1"``, ... (:data:`BASE_FORMATS`);
- a struct (vectors, matrices, luisa-python's structs and arrays are structs too):
  ``{"itemsize": n, "fields": [[name, offset, description], ...]}``;
- an array field: ``[description, [count, ...]]``.

:func:`describe_dtype` writes one on the client; :func:`dtype_from` reads one on the
server and checks everything (types, names, ranges, depth, size) before numpy sees it, so
a malformed one is a :class:`ProtocolError`. A kernel's scalar parameters are described
by :func:`describe_scalar`: a plain type's name, or a dtype with its alignment for a value
that travels as the hex of its bytes (vectors, matrices, structs, arrays). The argument
struct is laid out as ``kernels.c.emitter.argument_struct`` lays it out on the client.
"""

from __future__ import annotations

import math
import re
import struct
from typing import Any

import numpy as np

from luisa_nb.remote.protocol import (
    ENTRY_PATTERN,
    MAX_KERNEL_PARAMETERS,
    MAX_SOURCE_BYTES,
    ProtocolError,
)

BASE_FORMATS = {
    "|b1": "?", "|i1": "b", "|u1": "B", "<i2": "h", "<u2": "H", "<i4": "i", "<u4": "I",
    "<i8": "q", "<u8": "Q", "<f4": "f", "<f8": "d",
}  # fmt: skip
"""Base types by their numpy ``dtype.str``, with their ``struct`` codes."""
SCALAR_NAMES = {
    "bool": "?", "int32": "i", "uint32": "I", "int64": "q", "uint64": "Q",
    "float32": "f", "float64": "d",
}  # fmt: skip
"""What a plain scalar parameter is called on the wire (its dtype's name), with its
``struct`` code; its value travels as a JSON number."""
MAX_DEPTH = 8
MAX_FIELDS = 4096
MAX_ITEMSIZE = 1 << 20
MAX_ALIGNMENT = 256
FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def describe_dtype(dtype: np.dtype) -> Any:
    """The description of ``dtype`` (a base type, or a struct of them, with array fields)."""
    if dtype.fields is None:
        return dtype.str
    fields = []
    for name in dtype.names:
        field, offset = dtype.fields[name][:2]
        if field.subdtype is None:
            fields.append([name, offset, describe_dtype(field)])
        else:
            base, shape = field.subdtype
            fields.append([name, offset, [describe_dtype(base), list(shape)]])
    return {"itemsize": dtype.itemsize, "fields": fields}


def dtype_from(description: Any) -> np.dtype:
    """The dtype a description names, every part checked first."""
    return _Reader().dtype(description, 0)


class _Reader:
    """Reads one description, counting its fields against :data:`MAX_FIELDS`."""

    def __init__(self) -> None:
        self.fields = 0

    def dtype(self, description: Any, depth: int) -> np.dtype:
        if type(description) is str:
            if description not in BASE_FORMATS:
                raise ProtocolError(
                    f"dtype {description[:20]!r} is not one of {', '.join(BASE_FORMATS)}"
                )
            return np.dtype(description)
        if type(description) is not dict or set(description) != {"itemsize", "fields"}:
            raise ProtocolError(
                "a struct dtype is {'itemsize': n, 'fields': [[name, offset, dtype]]}"
            )
        if depth >= MAX_DEPTH:
            raise ProtocolError(f"a dtype nests at most {MAX_DEPTH} structs deep")
        itemsize = _integer(description["itemsize"], "struct itemsize", 1, MAX_ITEMSIZE)
        fields = description["fields"]
        if type(fields) is not list or not fields:
            raise ProtocolError("struct fields must be a non-empty list")
        self.fields += len(fields)
        if self.fields > MAX_FIELDS:
            raise ProtocolError(f"a dtype has at most {MAX_FIELDS} fields")
        names, formats, offsets = [], [], []
        for field in fields:
            if type(field) is not list or len(field) != 3:
                raise ProtocolError("a struct field is [name, offset, dtype]")
            name, offset, kind = field
            if type(name) is not str or not FIELD_NAME.fullmatch(name) or name in names:
                raise ProtocolError(f"struct field name {str(name)[:40]!r} is not a new identifier")
            field_dtype = self.field_dtype(kind, depth + 1)
            _integer(offset, f"offset of field {name}", 0, itemsize - field_dtype.itemsize)
            names.append(name)
            formats.append(field_dtype)
            offsets.append(offset)
        spec = {"names": names, "formats": formats, "offsets": offsets, "itemsize": itemsize}
        return np.dtype(spec)

    def field_dtype(self, kind: Any, depth: int) -> np.dtype:
        """A field's dtype: a description, or ``[description, shape]`` for an array."""
        if type(kind) is not list:
            return self.dtype(kind, depth)
        if len(kind) != 2 or type(kind[1]) is not list or not 1 <= len(kind[1]) <= MAX_DEPTH:
            raise ProtocolError("an array field is [dtype, [count, ...]]")
        element = self.dtype(kind[0], depth)
        shape = [_integer(count, "array count", 1, MAX_ITEMSIZE) for count in kind[1]]
        if element.itemsize * math.prod(shape) > MAX_ITEMSIZE:
            raise ProtocolError(f"an array field holds at most {MAX_ITEMSIZE} bytes")
        return np.dtype((element, tuple(shape)))


def check_definition(value: Any) -> tuple[list[np.dtype], ArgumentLayout]:
    """A kernel definition, ``{"name", "source", "buffers", "scalars"}`` (buffers as dtype
    descriptions, scalars as :func:`describe_scalar` writes them): its buffers' dtypes and
    the layout of its arguments."""
    if type(value) is not dict or set(value) != {"name", "source", "buffers", "scalars"}:
        raise ProtocolError("kernel definition needs exactly name, source, buffers, scalars")
    if type(value["name"]) is not str or not ENTRY_PATTERN.fullmatch(value["name"]):
        raise ProtocolError("kernel name must match lnb_[A-Za-z0-9_]+")
    source = value["source"]
    if type(source) is not str or len(source) > MAX_SOURCE_BYTES:
        raise ProtocolError(f"kernel source must be a string of at most {MAX_SOURCE_BYTES} chars")
    buffers, scalars = value["buffers"], value["scalars"]
    if type(buffers) is not list or type(scalars) is not list:
        raise ProtocolError("kernel buffers and scalars must be lists")
    if len(buffers) + len(scalars) > MAX_KERNEL_PARAMETERS:
        raise ProtocolError(f"a kernel takes at most {MAX_KERNEL_PARAMETERS} parameters")
    try:
        dtypes = [dtype_from(description) for description in buffers]
    except ProtocolError as error:
        raise ProtocolError(f"kernel buffers: {error}") from None
    return dtypes, ArgumentLayout(len(buffers), scalars)


def describe_scalar(dtype: np.dtype, alignment: int | None) -> Any:
    """A scalar parameter: its dtype's name, or for a vector, matrix, struct or array
    (passed as bytes, aligned to ``alignment``) ``{"dtype": description, "alignment": n}``."""
    if alignment is None:
        return dtype.name
    return {"dtype": describe_dtype(dtype), "alignment": alignment}


class ArgumentLayout:
    """Packs a served kernel's argument struct: three int64 dims, one address per buffer,
    then its scalars (plain ones from JSON numbers, the others from the hex of their
    bytes), each at its C alignment."""

    def __init__(self, buffer_count: int, scalars: list[Any]) -> None:
        layout = f"@3q{'P' * buffer_count}"
        self.value_sizes: list[int | None] = []
        """Per scalar: ``None`` for a JSON number, else the byte count of its hex value."""
        for scalar in scalars:
            if type(scalar) is str and scalar in SCALAR_NAMES:
                layout += SCALAR_NAMES[scalar]
                self.value_sizes.append(None)
                continue
            if type(scalar) is not dict or set(scalar) != {"dtype", "alignment"}:
                raise ProtocolError(
                    f"a kernel scalar is one of {', '.join(SCALAR_NAMES)} or "
                    f"{{'dtype': ..., 'alignment': n}}"
                )
            alignment = _integer(scalar["alignment"], "scalar alignment", 1, MAX_ALIGNMENT)
            if alignment & (alignment - 1):
                raise ProtocolError(f"scalar alignment {alignment} is not a power of 2")
            itemsize = dtype_from(scalar["dtype"]).itemsize
            layout += "x" * (-struct.calcsize(layout) % alignment) + f"{itemsize}s"
            self.value_sizes.append(itemsize)
        self._struct = struct.Struct(f"{layout}0q")

    def pack(self, dims: list[int], addresses: list[int], scalars: list[Any]) -> bytes:
        """The argument struct; a value that does not fit its parameter is a
        :class:`ProtocolError`."""
        values = []
        for position, (value, size) in enumerate(zip(scalars, self.value_sizes, strict=True)):
            if size is None:
                if type(value) is str:
                    raise ProtocolError(f"kernel scalar {position} takes a number, got text")
                values.append(value)
                continue
            if type(value) is not str or len(value) != 2 * size:
                got = str(value)[:40]
                raise ProtocolError(
                    f"kernel scalar {position} takes the hex of {size} bytes, got {got!r}"
                )
            try:
                values.append(bytes.fromhex(value))
            except ValueError:
                raise ProtocolError(f"kernel scalar {position} is not hex") from None
        try:
            return self._struct.pack(*dims, *addresses, *values)
        except struct.error as error:
            raise ProtocolError(f"kernel scalars do not fit the kernel: {error}") from None


def _integer(value: Any, what: str, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        raise ProtocolError(f"{what} must be an integer in [{low}, {high}], got {str(value)[:40]}")
    return value
