"""Records from JSON objects, rebuilt field by field from their dataclass type hints, so
that a damaged file fails with a :class:`~luisa_nb.errors.TraceFormatError` that names the
field, and nothing is ever unpickled."""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from enum import Enum
from functools import cache
from typing import Any

import numpy as np

from luisa_nb.errors import TraceFormatError
from luisa_nb.recording.error_text import DAMAGED, short_names, short_repr
from luisa_nb.recording.json_checks import check_json

# Dtypes the analysis reads host and buffer bytes as, written as numpy's dtype.str does.
_VALUE_DTYPE = re.compile(r"[<>|=]?[biuf][1-9][0-9]?")


def check_dtype(dtype: str, where: str, path: str) -> None:
    """``dtype`` is one the analysis can read bytes as: a plain bool or number type."""
    if not _VALUE_DTYPE.fullmatch(dtype) or not _is_dtype(dtype):
        raise TraceFormatError(
            f"{where}: {path} is {short_repr(dtype)}, not a bool, int, unsigned or float "
            f"dtype such as '<f4'; {DAMAGED}"
        )


def _is_dtype(text: str) -> bool:
    try:
        np.dtype(text)
    except TypeError:
        return False
    return True


@cache
def _fields(cls: type) -> dict[str, tuple[Any, bool]]:
    """The type hint of each saved (not transient) field of dataclass ``cls``, and whether
    the field is required."""
    hints = typing.get_type_hints(cls)
    return {
        field.name: (hints[field.name], _required(field))
        for field in dataclasses.fields(cls)
        if not field.metadata.get("transient")
    }


def _required(field: dataclasses.Field) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


def build(cls: type, data: Any, where: str, path: str) -> Any:
    """An instance of dataclass ``cls`` from its JSON object at ``path``, checking every
    field."""
    check_json(data, dict[str, Any], where=where, path=path)
    fields = _fields(cls)
    unknown = data.keys() - fields.keys()
    if unknown:
        raise TraceFormatError(
            f"{where}: {path} has unknown field(s) {short_names(sorted(unknown))} "
            f"for {cls.__name__}; the file was written by a newer or different luisa_nb, "
            "upgrade to open it"
        )
    values = {}
    for name, (hint, required) in fields.items():
        if name in data:
            values[name] = _convert(data[name], hint, where, f"{path}.{name}")
        elif required:
            raise TraceFormatError(
                f"{where}: {path} lacks field {name!r} of {cls.__name__}; {DAMAGED}"
            )
    return cls(**values)


def build_list(cls: type, data: list[Any], where: str, path: str) -> list[Any]:
    return [build(cls, item, where, f"{path}[{position}]") for position, item in enumerate(data)]


@cache
def _conversion(hint: Any) -> tuple[str, Any, tuple[Any, ...]]:
    """How :func:`_convert` treats ``hint``: its kind, origin and arguments (worked out
    once per hint; ``typing`` takes microseconds to answer)."""
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        kind = "union"
    elif isinstance(hint, type) and issubclass(hint, Enum):
        kind = "enum"
    elif dataclasses.is_dataclass(hint):
        kind = "dataclass"
    elif origin in (list, tuple):
        kind = "sequence"
    else:
        kind = "json"
    return kind, origin, arguments


def _convert(value: Any, hint: Any, where: str, path: str) -> Any:
    """``value`` (from JSON) as type ``hint``; raises TraceFormatError if it does not fit."""
    kind, origin, arguments = _conversion(hint)
    if kind == "json":
        check_json(value, hint, where=where, path=path)
        return float(value) if hint is float else value
    if kind == "union":
        options = [option for option in arguments if option is not type(None)]
        if value is None and len(options) < len(arguments):
            return None
        for option in options[:-1]:
            try:
                return _convert(value, option, where, path)
            except TraceFormatError:
                continue
        return _convert(value, options[-1], where, path)
    if kind == "enum":
        try:
            return hint(value)
        except (ValueError, TypeError):
            known = ", ".join(repr(member.value) for member in hint)
            raise TraceFormatError(
                f"{where}: {path} is {short_repr(value)}, not one of {known}; upgrade luisa_nb "
                "if the file is newer"
            ) from None
    if kind == "dataclass":
        return build(hint, value, where, path)
    check_json(value, list[Any], where=where, path=path)
    if origin is tuple and arguments and arguments[-1] is not Ellipsis:
        if len(value) != len(arguments):
            raise TraceFormatError(
                f"{where}: {path} holds {len(value)} items where {len(arguments)} are "
                f"expected; {DAMAGED}"
            )
        item_hints = arguments
    else:
        item_hints = (arguments[0] if arguments else Any,) * len(value)
    items = [
        _convert(item, item_hint, where, f"{path}[{position}]")
        for position, (item, item_hint) in enumerate(zip(value, item_hints, strict=True))
    ]
    return tuple(items) if origin is tuple else items
