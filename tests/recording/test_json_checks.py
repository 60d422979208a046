"""JSON from a trace file: parsed within a nesting depth, checked against type hints."""

from __future__ import annotations

import sys
from typing import Any, Literal, TypedDict

import pytest

from luisa_nb.errors import TraceFormatError
from luisa_nb.recording.json_checks import check_json, json_depth, parse_json


@pytest.mark.parametrize(
    "text, depth",
    [
        (b"1", 0),
        (b'{"a": [1, {"b": []}]}', 4),
        (b'["[[[", "]]", {"x": "\\"[["}]', 2),
        (b'["\\\\", [[]]]', 3),
        (b"[" * 1000, 1000),
    ],
)
def test_json_depth_ignores_brackets_in_strings(text, depth):
    assert json_depth(text) == depth


def test_deep_json_is_refused_without_recursion():
    with pytest.raises(TraceFormatError, match="nests 100000 levels of arrays and objects"):
        parse_json(b"[" * 100_000 + b"]" * 100_000, "doc.json")


def _lines_run(function, *arguments) -> int:
    """How many lines of Python ``function(*arguments)`` runs: a count of work that does
    not depend on the machine's speed or load."""
    lines = 0

    def tracer(frame, event, _argument):
        nonlocal lines
        lines += event == "line"
        return tracer

    sys.settrace(tracer)
    try:
        function(*arguments)
    finally:
        sys.settrace(None)
    return lines


def test_scanning_unterminated_strings_stays_linear():
    with pytest.raises(TraceFormatError, match="not valid JSON"):
        parse_json(b'"\\"' * 300_000, "doc.json")
    small = _lines_run(json_depth, b'"\\"' * 300_000)
    large = _lines_run(json_depth, b'"\\"' * 4_800_000)  # 16 times as long
    assert large <= 16 * small


@pytest.mark.parametrize(
    "text, problem",
    [(b"\xff\xfe", "not valid JSON"), (b"[" + b"9" * 5000 + b"]", "not valid JSON"), (b"", "")],
)
def test_text_that_is_not_json_is_refused(text, problem):
    with pytest.raises(TraceFormatError, match=f"doc.json is {problem or 'not valid JSON'}"):
        parse_json(text, "doc.json")


class Range(TypedDict):
    start: int
    kind: Literal["read", "write"]


class Table(TypedDict, total=False):
    name: str
    ranges: list[Range]
    shape: tuple[int, ...]
    extra: dict[str, float | None]


def test_check_json_accepts_values_that_fit():
    value = {"name": "x", "ranges": [{"start": 2**63 - 1, "kind": "read"}], "extra": {"a": 1}}
    check_json(value, Table, where="doc.json")
    check_json({"shape": [1, 2], "extra": {"b": None, "c": 0.5}}, Table, where="doc.json")
    check_json([1, "x", None], list[Any], where="doc.json")


@pytest.mark.parametrize(
    "value, message",
    [
        (
            {"ranges": [{"start": 1, "kind": "read"}, {"start": "2", "kind": "read"}]},
            r"doc\.json: ranges\[1\]\.start holds '2' where int is expected",
        ),
        (
            {"ranges": [{"start": 2**63, "kind": "read"}]},
            r"ranges\[0\]\.start holds 9223372036854775808 where an int that fits in 64 bits",
        ),
        ({"ranges": [{"start": 1, "kind": "swap"}]}, r"kind holds 'swap' where one of 'read', "),
        ({"ranges": [{"start": True, "kind": "read"}]}, r"start holds True where int is"),
        ({"ranges": [{"start": 1}]}, r"ranges\[0\] lacks field\(s\) 'kind'"),
        ({"name": "x", "colour": 1}, r"doc\.json has unknown field\(s\) 'colour'; the file was"),
        ({"shape": [1, [2]]}, r"shape\[1\] holds an array of 1 items where int is expected"),
        ({"extra": {"a b": "1"}}, r"extra\['a b'\] holds '1' where float is expected"),
        (
            {"name": "x" * 5000, "ranges": [{"start": "9" * 5000, "kind": "read"}]},
            r"start holds '9999.*\.\.\. where",
        ),
        ([], r"doc\.json holds an array of 0 items where an object is expected"),
    ],
)
def test_check_json_names_the_path_of_the_bad_value(value, message):
    with pytest.raises(TraceFormatError, match=message) as caught:
        check_json(value, Table, where="doc.json")
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 300
