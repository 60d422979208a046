"""A luisa-python program with indirect dispatch, as LuisaCompute's test-indirect.py
does it: one kernel sets the dispatch count, another records 16 entries (entry i: i
threads of kernel id i), and a third kernel, dispatched with the buffer as its size,
adds its dispatch size at its kernel id, so element i ends as i * i. A second run from
``dispatch_buffer_offset=15`` runs entry 15 only. Prints both results as rows."""

import sys

import numpy as np

import luisa
from luisa.builtin import *
from luisa.types import *

luisa.init(sys.argv[1] if len(sys.argv) > 1 else "cpu", support_gui=False)
dispatch_count = 16
kernel_dispatch_size = 64
dispatch_buffer = luisa.IndirectDispatchBuffer(dispatch_count)


@luisa.func
def accumulate(buffer):
    set_block_size(kernel_dispatch_size, 1, 1)
    buffer.atomic_fetch_add(kernel_id(), dispatch_size().x)


@luisa.func
def clear_indirect():
    set_block_size(1, 1, 1)
    dispatch_buffer.set_dispatch_count(16)


@luisa.func
def emplace_indirect():
    set_block_size(dispatch_count, 1, 1)
    i = dispatch_id().x
    dispatch_buffer.set_kernel(i, uint3(kernel_dispatch_size, 1, 1), uint3(i, 1, 1), i)


def run(**offset):
    buffer = luisa.Buffer(16, uint)
    buffer.copy_from(np.zeros(16, dtype=np.uint32))
    clear_indirect(dispatch_size=(1, 1, 1))
    emplace_indirect(dispatch_size=(dispatch_count, 1, 1))
    accumulate(buffer, dispatch_size=dispatch_buffer, **offset)
    result = np.zeros(16, dtype=np.uint32)
    buffer.copy_to(result)
    return " ".join(str(value) for value in result)


print("all", run())
print("offset", run(dispatch_buffer_offset=15))
