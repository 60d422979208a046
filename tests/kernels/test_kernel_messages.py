"""Compile errors for luisa-python features luisa_nb lacks, and the articles of types in
messages."""

from __future__ import annotations

import numpy as np
import pytest

from luisa_nb.errors import KernelCompileError
from luisa_nb.kernels import KernelDefinition, argument_type
from luisa_nb.kernels.type_system import article

from .helpers import FakeBuffer, load_function

MISSING = """\
import luisa_nb.luisa as luisa
from luisa_nb.luisa import ProceduralPrimitive


def kernel_under_test(out):
    {statement}
"""


@pytest.mark.parametrize(
    ("statement", "column", "label", "feature"),
    [
        ("r = luisa.CommittedHit()", 9, "luisa.CommittedHit", "procedural primitives"),
        ("a = ProceduralPrimitive()", 9, "ProceduralPrimitive", "procedural primitives"),
        ("b = luisa.ByteBuffer", 9, "luisa.ByteBuffer", "byte buffers"),
    ],
)
def test_missing_features_name_the_feature(tmp_path, statement, column, label, feature):
    function = load_function(tmp_path, MISSING.format(statement=statement))
    types = (argument_type(FakeBuffer(np.zeros(1, np.float32))),)
    with pytest.raises(KernelCompileError) as caught:
        KernelDefinition(function, mode="python").executable(types)
    message = str(caught.value)
    assert f"snippet.py:6:{column}: {label!r} is part of {feature}" in message
    assert "unknown function" not in message


def test_types_take_their_article():
    assert [article(t) for t in ("int32", "uint32", "float3", "image[float4]", "int2")] == [
        "an int32",
        "a uint32",
        "a float3",
        "an image[float4]",
        "an int2",
    ]


def test_messages_say_an_int(tmp_path):
    source = "def kernel_under_test(out):\n    v = out.read(0) > 0\n    v = out.read(0)\n"
    function = load_function(tmp_path, source)
    types = (argument_type(FakeBuffer(np.zeros(1, np.int32))),)
    with pytest.raises(KernelCompileError, match="cannot assign an int32 value to 'v'"):
        KernelDefinition(function, mode="python").executable(types)
