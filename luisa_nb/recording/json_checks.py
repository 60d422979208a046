"""JSON from a file read as hostile input: parsed only when it nests shallowly enough
(:func:`parse_json`), then checked against a type hint (:func:`check_json`), which names
the path of the first value that does not fit."""

from __future__ import annotations

import json
import types
import typing
from functools import cache
from typing import Any

import numpy as np

from luisa_nb.errors import TraceFormatError
from luisa_nb.recording.error_text import DAMAGED, error_summary, short_names, short_repr

DEFAULT_JSON_DEPTH = 64
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
_SCAN_CHUNK_BYTES = 1 << 20
_QUOTE = ord('"')
# +1 for an opening bracket, -1 for a closing one, 0 for any other byte.
_BRACKET_STEPS = np.zeros(256, np.int8)
_BRACKET_STEPS[list(b"[{")] = 1
_BRACKET_STEPS[list(b"]}")] = -1


def json_depth(data: bytes | bytearray) -> int:
    """The deepest nesting of arrays and objects in JSON text, found without parsing.

    Brackets inside strings do not count: with escaped backslashes and quotes removed,
    a bracket is inside a string when an odd number of quotes precede it. On text that
    is not JSON the result may be too high, never lower than the depth a parser reaches
    before it fails.
    """
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    codes = np.frombuffer(data, np.uint8)
    deepest = depth = 0
    in_string = False
    for start in range(0, codes.size, _SCAN_CHUNK_BYTES):
        chunk = codes[start : start + _SCAN_CHUNK_BYTES]
        quotes = np.flatnonzero(chunk == _QUOTE)
        brackets = np.flatnonzero(_BRACKET_STEPS[chunk])
        outside = (np.searchsorted(quotes, brackets) + in_string) % 2 == 0
        steps = _BRACKET_STEPS[chunk[brackets[outside]]]
        if steps.size:
            levels = np.cumsum(steps, dtype=np.int64) + depth
            deepest = max(deepest, int(levels.max()))
            depth = int(levels[-1])
        in_string ^= bool(quotes.size % 2)
    return deepest


def parse_json(data: bytes | bytearray, where: str, max_depth: int = DEFAULT_JSON_DEPTH) -> Any:
    """``data`` (UTF-8 JSON) parsed; TraceFormatError if it is not JSON or nests deeper
    than ``max_depth`` arrays and objects (so parsing cannot exhaust the stack)."""
    depth = json_depth(data)
    if depth > max_depth:
        raise TraceFormatError(
            f"{where} nests {depth} levels of arrays and objects, more than the {max_depth} "
            f"a trace document may; {DAMAGED}"
        )
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError as error:
        raise TraceFormatError(
            f"{where} is not valid JSON ({error_summary(error)}); {DAMAGED}"
        ) from None


def member_path(path: str, key: str | int) -> str:
    """The path of ``key`` inside the value at ``path``: ``a.b``, ``a[3]``, ``a['x y']``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{short_repr(key, 40)}]"


def check_json(value: Any, expected: Any, *, where: str, path: str = "") -> None:
    """Check a parsed JSON ``value`` against the type ``expected``; raise TraceFormatError
    naming the path of the first value that does not fit.

    ``expected`` is written as a type hint: ``int`` (which must fit in 64 bits),
    ``float`` (a float, or such an int), ``str``, ``bool``, ``None``, ``Any``,
    ``Literal[...]``, unions, ``list[T]``, ``tuple[T, ...]`` and ``tuple[A, B]`` (JSON
    arrays), ``dict[str, T]``, and ``TypedDict`` classes (objects with exactly those
    keys; ``total=False`` makes keys optional).
    """
    if expected is Any:
        return
    if expected is int:
        fits = type(value) is int
        if fits and not INT64_MIN <= value <= INT64_MAX:
            _mismatch(value, "an int that fits in 64 bits", where, path)
    elif expected is str or expected is bool:
        fits = type(value) is expected
    elif expected is float:
        fits = type(value) is float or (type(value) is int and INT64_MIN <= value <= INT64_MAX)
    elif expected is None or expected is type(None):
        fits = value is None
    else:
        _check_composite(value, expected, where, path)
        return
    if not fits:
        _mismatch(value, json_type_name(expected), where, path)


@cache
def _hint_parts(expected: Any) -> tuple[Any, tuple[Any, ...]]:
    """``expected``'s origin and arguments (``typing`` takes microseconds to find them)."""
    return typing.get_origin(expected), typing.get_args(expected)


def _check_composite(value: Any, expected: Any, where: str, path: str) -> None:
    origin, arguments = _hint_parts(expected)
    if origin is typing.Literal:
        if not any(type(value) is type(option) and value == option for option in arguments):
            _mismatch(value, json_type_name(expected), where, path)
    elif origin in (typing.Union, types.UnionType):
        _check_union(value, arguments, where, path)
    elif origin in (list, tuple) and isinstance(value, list):
        _check_array(value, origin, arguments, where, path)
    elif origin is dict and isinstance(value, dict):
        item_type = arguments[1] if arguments else Any
        if item_type is not Any:
            for key, item in value.items():
                check_json(item, item_type, where=where, path=member_path(path, key))
    elif typing.is_typeddict(expected) and isinstance(value, dict):
        _check_object(value, expected, where, path)
    else:
        _mismatch(value, json_type_name(expected), where, path)


def json_type_name(expected: Any) -> str:
    """``expected`` (a hint accepted by :func:`check_json`) in words."""
    origin = typing.get_origin(expected)
    arguments = typing.get_args(expected)
    if expected is None or expected is type(None):
        return "null"
    if origin is typing.Literal:
        return "one of " + ", ".join(map(repr, arguments))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(json_type_name(option) for option in arguments)
    if origin in (list, tuple):
        return "an array"
    if origin is dict or typing.is_typeddict(expected):
        return "an object"
    return getattr(expected, "__name__", str(expected))


def _check_union(value: Any, options: tuple[Any, ...], where: str, path: str) -> None:
    if value is None and type(None) in options:
        return
    candidates = [option for option in options if option is not type(None)]
    if len(candidates) == 1:
        check_json(value, candidates[0], where=where, path=path)
        return
    for option in candidates:
        try:
            check_json(value, option, where=where, path=path)
            return
        except TraceFormatError:
            continue
    _mismatch(value, " or ".join(map(json_type_name, options)), where, path)


def _check_array(value: list, origin: type, arguments: tuple, where: str, path: str) -> None:
    if origin is tuple and arguments and arguments[-1] is not Ellipsis:
        if len(value) != len(arguments):
            _mismatch(value, f"an array of {len(arguments)} items", where, path)
        item_types = arguments
    elif not arguments or arguments[0] is Any:
        return
    else:
        item_types = [arguments[0]] * len(value)
    for index, (item, item_type) in enumerate(zip(value, item_types, strict=True)):
        check_json(item, item_type, where=where, path=member_path(path, index))


@cache
def _typed_dict_hints(expected: Any) -> dict[str, Any]:
    return typing.get_type_hints(expected)


def _check_object(value: dict, expected: Any, where: str, path: str) -> None:
    hints = _typed_dict_hints(expected)
    location = f"{where}: {path}" if path else where
    unknown = sorted(set(value) - set(hints))
    if unknown:
        raise TraceFormatError(
            f"{location} has unknown field(s) {short_names(unknown)}; the file was written by a "
            "newer or different luisa_nb, upgrade to open it"
        )
    missing = sorted(set(expected.__required_keys__) - set(value))
    if missing:
        raise TraceFormatError(f"{location} lacks field(s) {short_names(missing)}; {DAMAGED}")
    for key, item in value.items():
        check_json(item, hints[key], where=where, path=member_path(path, key))


def _mismatch(value: Any, expected: str, where: str, path: str) -> typing.NoReturn:
    location = f"{where}: {path}" if path else where
    raise TraceFormatError(
        f"{location} holds {short_repr(value)} where {expected} is expected; {DAMAGED}"
    )
