"""Dtype descriptions and argument layouts: every kernel type travels and comes back as
the same dtype, the server packs arguments byte for byte as the client's executable
does, and a malformed description is refused with a reason."""

import numpy as np
import pytest

pytest.importorskip("zmq")

from luisa_nb.backends.remote import ServedDefinition
from luisa_nb.kernels import (
    ArrayType,
    KernelDefinition,
    StructType,
    argument_type,
    dispatch_id,
    dtype_of,
    float3,
    float3x3,
    int2,
)
from luisa_nb.kernels.checks import KernelChecks
from luisa_nb.kernels.type_system import MATRIX_TYPES, VECTOR_TYPES, ScalarType
from luisa_nb.remote.layouts import check_definition, describe_dtype, dtype_from
from luisa_nb.remote.protocol import ProtocolError
from tests.kernels.helpers import FakeBuffer

Inner = StructType(a=int, b=ArrayType(3, float), c=bool)
Outer = StructType(16, s=Inner, v=float3, m=float3x3, grid=ArrayType(2, ArrayType(3, int2)))
IMAGE_STORAGES = [np.uint8, np.int8, np.uint16, np.int16, np.int32, np.uint32, np.float32]
DTYPES = [
    *(scalar.dtype for scalar in ScalarType),
    *(np.dtype(storage) for storage in IMAGE_STORAGES),
    *(kind.dtype for kind in (*VECTOR_TYPES, *MATRIX_TYPES)),
    dtype_of(Inner),
    dtype_of(Outer),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_kernel_dtype_travels_unchanged(dtype):
    back = dtype_from(describe_dtype(dtype))
    assert back == dtype and back.itemsize == dtype.itemsize
    assert [back.fields[n][1] for n in back.names or ()] == [
        dtype.fields[n][1] for n in dtype.names or ()
    ]


def arguments_kernel(out, v, m, s, k, flag):
    i = dispatch_id().x
    out.write(i, v.x + m[1].y + s.v.z + k + float(flag))


@pytest.mark.parametrize("checks", [True, False])
def test_the_server_packs_arguments_as_the_clients_executable(checks):
    out = FakeBuffer(np.zeros(4, np.float32))
    value = Outer(v=float3(1, 2, 3), m=float3x3(4))
    scalars = [float3(0.5, 1.5, 2.5), float3x3(2), value, np.int64(-7), True]
    types = tuple(argument_type(a) for a in (out, *scalars))
    executable = KernelDefinition(arguments_kernel, mode="c").executable(
        types, KernelChecks.parse(checks)
    )
    served = ServedDefinition(executable)
    dtypes, layout = check_definition(served.definition)
    assert dtypes == [np.dtype(np.float32)]
    launch_scalars = [*scalars, 4] if checks else scalars
    dims, addresses = (4, 1, 1), [0x1000]
    expected = executable.pack(dims, addresses, launch_scalars)
    assert layout.pack(list(dims), addresses, served.scalar_values(launch_scalars)) == expected


def struct(*fields, itemsize=8):
    return {"itemsize": itemsize, "fields": [list(field) for field in fields]}


def nested(depth):
    description = "<f4"
    for _ in range(depth):
        description = struct(("x", 0, description), itemsize=4)
    return description


MALFORMED = {
    "object dtype": ("object", "dtype 'object' is not one of"),
    "big-endian": (">f4", "dtype '>f4' is not one of"),
    "a list": (["<f4"], "a struct dtype is"),
    "unknown key": ({"itemsize": 4, "fields": [], "align": 1}, "a struct dtype is"),
    "no fields": (struct(), "fields must be a non-empty list"),
    "zero size": (struct(("x", 0, "<f4"), itemsize=0), "itemsize must be an integer in [1,"),
    "huge": (struct(("x", 0, "<f4"), itemsize=1 << 40), "itemsize must be an integer"),
    "field outside": (struct(("x", 6, "<f4")), "offset of field x must be an integer in [0, 4]"),
    "negative offset": (struct(("x", -1, "<f4")), "offset of field x"),
    "bad name": (struct(("1x", 0, "<f4")), "field name '1x' is not a new identifier"),
    "same name": (struct(("x", 0, "<f4"), ("x", 4, "<f4")), "'x' is not a new identifier"),
    "short field": (struct(("x", 0)), "a struct field is [name, offset, dtype]"),
    "bad shape": (struct(("x", 0, ["<f4", 2])), "an array field is [dtype, [count, ...]]"),
    "empty array": (struct(("x", 0, ["<f4", [0]])), "array count must be an integer in [1,"),
    "huge array": (
        struct(("x", 0, ["<f8", [1 << 20, 1 << 20]])),
        "an array field holds at most",
    ),
    "too deep": (nested(9), "a dtype nests at most 8 structs deep"),
    "too many fields": (
        {"itemsize": 4, "fields": [[f"f{i}", 0, "|u1"] for i in range(5000)]},
        "a dtype has at most 4096 fields",
    ),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_malformed_dtype_descriptions_are_refused(case):
    description, reason = MALFORMED[case]
    with pytest.raises(ProtocolError) as caught:
        dtype_from(description)
    assert reason in str(caught.value)


def definition(**changes):
    return {"name": "lnb_k", "source": "", "buffers": ["<f4"], "scalars": ["int32"], **changes}


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"buffers": [">f4"]}, "kernel buffers: dtype '>f4' is not one of"),
        ({"buffers": "<f4"}, "kernel buffers and scalars must be lists"),
        ({"scalars": ["float16"]}, "a kernel scalar is one of bool, int32"),
        ({"scalars": [{"dtype": "<f4", "alignment": 3}]}, "scalar alignment 3 is not a power"),
        ({"scalars": [{"dtype": "<f4"}]}, "a kernel scalar is one of"),
        ({"name": "k"}, "kernel name must match"),
    ],
)
def test_malformed_definitions_are_refused(changes, reason):
    with pytest.raises(ProtocolError) as caught:
        check_definition(definition(**changes))
    assert reason in str(caught.value)


def test_scalar_values_must_fit_their_parameters():
    by_value = {"dtype": describe_dtype(float3.__lnb_type__.dtype), "alignment": 16}
    _, layout = check_definition(definition(scalars=["int32", by_value]))
    assert len(layout.pack([1, 1, 1], [0], [3, "00" * 16])) == layout._struct.size
    for scalars, reason in [
        ([3, "00" * 15], "kernel scalar 1 takes the hex of 16 bytes"),
        ([3, "zz" * 16], "kernel scalar 1 is not hex"),
        (["00", "00" * 16], "kernel scalar 0 takes a number, got text"),
        ([2**40, "00" * 16], "kernel scalars do not fit the kernel"),
    ]:
        with pytest.raises(ProtocolError, match=reason):
            layout.pack([1, 1, 1], [0], scalars)
