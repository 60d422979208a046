"""The cases of the CI sample that fail on today's code, with what is wrong, and one case
of each defect that the sample must hold whether or not its draw reaches it."""

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
)

ALLOCATION = (
    "a size whose bytes cannot be allocated reaches numpy, which raises MemoryError or "
    "ValueError ('Maximum allowed dimension exceeded') instead of a luisa_nb error"
)
MASKED_ARRAY = (
    "a masked array passes the host-array checks, then its bytes fail to reshape: ValueError"
)
MATRIX = (
    "an np.matrix passes the host-array checks, but reshape(-1) keeps it 2-d and the copy "
    "fails with ValueError from a memoryview assignment"
)
NOT_A_STREAM = "a stream= argument that is not a Stream is used as one: AttributeError"
FILL_CONVERTS = (
    "fill() converts its value with numpy and no check: None becomes NaN, '3' becomes 3.0, "
    "1.5 becomes 1 in an int buffer, 2 becomes True in a bool buffer"
)
KEYWORDS = "keyword arguments to Kernel.dispatch: TypeError from Python, not a kernel error"
NO_DISPATCH_SIZE = "a kernel called without dispatch_size: TypeError from Python"
HUGE_DISPATCH = (
    "after Ctrl-C in a huge compiled dispatch, synchronize() raises KeyboardInterrupt but the "
    "kernel keeps running, and the next synchronize() waits for it forever"
)
UNCHECKED_INDEX = "checks=False with an index far outside the buffer: the process dies by SIGSEGV"
UNCHECKED_REMOTE = (
    "checks=False with an index far outside the buffer on remote: the session's worker dies "
    "by SIGSEGV; the dispatch fails with RemoteError, but the device cannot be used after"
)
CALLBACK_WAITS = (
    "a callback that waits for its own stream (synchronize, close, numpy) deadlocks the "
    "stream's worker"
)
LOAD_PATHS = "load_trace hands bad paths to the OS: TypeError, OSError instead of TraceError"
SAVE_PATHS = "Trace.save hands bad paths to the OS: OSError, ValueError instead of TraceError"
HOST_ADDRESSES = "a saved trace file holds the host addresses of the arrays it recorded"
SCRIPT_STATES = (
    "a name holding '<!--<script>' in the JSON of a <script> element switches the browser's "
    "tokenizer to its double-escaped state: the element runs past its </script> and the "
    "page's scripts break"
)
SURROGATES = (
    "a name with a lone surrogate breaks the report: write_report raises UnicodeEncodeError "
    "(and matplotlib a TypeError for a stream's lane)"
)
FROM_LIST_CONVERTS = (
    "Buffer.from_list converts every value to the first one's type: 2.5 becomes 2, "
    "2 becomes True, with no error"
)
FROM_LIST_OVERFLOW = "Buffer.from_list with an int outside int32: OverflowError from numpy"
LUISA_STREAM = "luisa.synchronize, luisa.execute and stream= take any object: AttributeError"
SAVE_TO_ROOT = "%%luisa_trace --save / : ValueError from the temporary file's name"
REAL_LUISA_TWICE = (
    "%luisa_device luisa:NAME for a backend real luisa-python lacks is refused once, then "
    "accepted, and later %%luisa_trace cells raise AttributeError"
)

KNOWN_FAILURES: dict[str, str] = {
    "buffers: create_buffer(2**40) on cpu": ALLOCATION,
    "buffers: create_buffer(2**62) on cpu": ALLOCATION,
    "buffers: create_buffer(10**30) on cpu": ALLOCATION,
    "buffers: copy_from(masked array) on cpu": MASKED_ARRAY,
    "buffers: copy_from(np.matrix) on dx": MATRIX,
    "buffers: copy_from(stream='s') on cpu": NOT_A_STREAM,
    "buffers: fill(None) of float32 on cpu": FILL_CONVERTS,
    "buffers: fill(stream=True) on remote": NOT_A_STREAM,
    "kernels: add_one with a keyword argument on cpu": KEYWORDS,
    "kernels: add_one called with no dispatch_size on cpu": NO_DISPATCH_SIZE,
    "kernels: add_one called with stream='s' on cpu": NOT_A_STREAM,
    "kernels: Ctrl-C in a huge dispatch (c) on cpu": HUGE_DISPATCH,
    "kernels: stride 10**6 with checks=False in c mode on cpu": UNCHECKED_INDEX,
    "kernels: stride 10**6 with checks=False in c mode on remote": UNCHECKED_REMOTE,
    "streams: stream.synchronize() in a callback on cpu": CALLBACK_WAITS,
    "streams: device.close() in a callback on cpu": CALLBACK_WAITS,
    "streams: stream.synchronize() in a callback on remote": CALLBACK_WAITS,
    "streams: copy_to(sync=True) on the callback's stream in a callback on remote": CALLBACK_WAITS,
    "streams: stream.scope() in a callback on remote": CALLBACK_WAITS,
    "trace_files: load_trace(None)": LOAD_PATHS,
    "trace_files: load_trace(a missing file)": LOAD_PATHS,
    "trace_files: load_trace(a socket)": LOAD_PATHS,
    "trace_files: save(a file in a missing folder)": SAVE_PATHS,
    "trace_files: no host address in a saved trace of cpu": HOST_ADDRESSES,
    "trace_files: a buffer named '<!--<script>'": SCRIPT_STATES,
    "trace_files: a buffer named 'lone \\ud800 surrogate'": SURROGATES,
    "luisa_api: Buffer.from_list([2**40, 1])": FROM_LIST_OVERFLOW,
    "luisa_api: Buffer.from_list([1, 2.5, 3.7])": FROM_LIST_CONVERTS,
    "luisa_api: Buffer.from_list([True, 2])": FROM_LIST_CONVERTS,
    "luisa_api: Buffer(2**62, float)": ALLOCATION,
    "luisa_api: Image2D(2**20, 2**20, 4)": ALLOCATION,
    "luisa_api: synchronize('x')": LUISA_STREAM,
    "luisa_api: f(buffer) without dispatch_size": NO_DISPATCH_SIZE,
    "magics: a buffer named '<!--<script>' in the shell": SCRIPT_STATES,
    "magics: '%%luisa_trace --save /'": SAVE_TO_ROOT,
    "magics: %luisa_device luisa:nonsense twice": REAL_LUISA_TWICE,
}
"""The cases of the CI sample that fail today, by key, with what is wrong."""
