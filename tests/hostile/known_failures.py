"""One case of each defect the sweep has found, which the CI sample holds whether or not
its draw reaches it, and the cases of the sample known to fail, with what is wrong (none
now: a defect found later goes in with its reason until its fix lands)."""

from __future__ import annotations

REPRESENTATIVES = (
    "buffers: create_buffer(2**40) on cpu",
    "buffers: create_buffer(2**62) on cpu",
    "buffers: copy_from(masked array) on cpu",
    "buffers: copy_from(np.matrix) on dx",
    "buffers: copy_from(stream='s') on cpu",
    "buffers: fill(None) of float32 on cpu",
    "kernels: add_one with a keyword argument on cpu",
    "kernels: add_one called with no dispatch_size on cpu",
    "kernels: Ctrl-C in a huge dispatch (c) on cpu",
    "kernels: stride 10**6 with checks=False in c mode on cpu",
    "streams: stream.synchronize() in a callback on cpu",
    "streams: device.close() in a callback on cpu",
    "trace_files: load_trace(None)",
    "trace_files: load_trace(a missing file)",
    "trace_files: load_trace(a socket)",
    "trace_files: no host address in a saved trace of cpu",
    "trace_files: a buffer named '<!--<script>'",
    "trace_files: a buffer named 'lone \\ud800 surrogate'",
    "luisa_api: Buffer.from_list([2**40, 1])",
    "luisa_api: Buffer.from_list([1, 2.5, 3.7])",
    "luisa_api: synchronize('x')",
    "luisa_api: Image2D(2**20, 2**20, 4)",
    "magics: a buffer named '<!--<script>' in the shell",
    "magics: '%%luisa_trace --save /'",
    "magics: %luisa_device luisa:nonsense twice",
    "magics: '%%luisa_trace --backend \"cpu'",
    "magics: %%luisa_trace on a cell with a magic inside",
    "buffers: view(True, 4) on cpu",
)

KNOWN_FAILURES: dict[str, str] = {}
"""The cases of the CI sample that fail today, by key, with what is wrong."""
