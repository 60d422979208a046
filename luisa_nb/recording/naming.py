"""Readable names of records, streams, buffers and host ranges, shared by the Chrome
export and the analysis messages: ``#3 download z -> z_data``; and how a host array gets
its name: ``lnb.name(array, "z_data")``, else the variable of the user's code that holds
it when a command is made, else one that holds it when the trace stops. A name always
belongs to the array object itself (or the array it views), never to an address, which a
freed array hands on to the next one.
"""

from __future__ import annotations

import os
import sys
import weakref
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import CodeType, FrameType
from typing import TYPE_CHECKING

import numpy as np

from luisa_nb.recording.records import (
    CommandKind,
    CommandRecord,
    DeviceRange,
    HostRange,
    Record,
    SyncKind,
    SyncRecord,
)

if TYPE_CHECKING:
    from luisa_nb.recording.trace import Trace


def on_host(record: Record) -> bool:
    """Whether a view draws ``record`` on the host's row, not its stream's: a host-side
    wait (a synchronize of a stream, the device or an event)."""
    return not isinstance(record, CommandRecord) and (
        record.kind in (SyncKind.SYNCHRONIZE, SyncKind.EVENT_SYNCHRONIZE) or record.stream is None
    )


def drawn_streams(records: Iterable[Record]) -> list[int]:
    """The streams something is drawn on, in id order: a stream that only a host-side
    wait names (a device synchronize waits on every stream) gets no row of its own."""
    return sorted({r.stream for r in records if r.stream is not None and not on_host(r)})


def stream_name(trace: Trace, stream: int | None) -> str:
    info = trace.streams.get(stream) if stream is not None else None
    return info.name if info is not None and info.name else f"stream {stream}"


def times_reported(trace: Trace, stream: int) -> bool:
    """Whether the runtime of ``stream`` reported when each of its commands ran."""
    info = trace.streams.get(stream)
    return info is None or info.times_reported


def host_name(host: HostRange) -> str:
    return host.name or f"host@0x{host.address:x}"


def device_name(trace: Trace, device: DeviceRange) -> str:
    """The buffer's name, with an element slice when ``device`` is not the whole buffer."""
    info = trace.buffers.get(device.buffer)
    name = info.name if info is not None and info.name else f"buffer{device.buffer}"
    if info is None or (device.offset == 0 and device.nbytes == info.nbytes):
        return name
    itemsize = np.dtype(info.dtype).itemsize
    start = device.offset // itemsize
    stop = -(-(device.offset + device.nbytes) // itemsize)
    return f"{name}[{start}:{stop}]"


def describe(trace: Trace, record: Record) -> str:
    """A one-line description such as ``#3 download z -> z_data``."""
    if isinstance(record, SyncRecord):
        return describe_sync(trace, record)
    reads = [device_name(trace, r) for r in record.device_ranges if not r.access.writes]
    writes = [device_name(trace, r) for r in record.device_ranges if r.access.writes]
    host = host_name(record.host) if record.host is not None else "host"
    kind = record.kind
    if kind is CommandKind.UPLOAD:
        text = f"upload {_names(writes)} <- {host}"
    elif kind is CommandKind.DOWNLOAD:
        text = f"download {_names(reads)} -> {host}"
    elif kind is CommandKind.COPY:
        text = f"copy {_names(reads)} -> {_names(writes)}"
    elif kind is CommandKind.FILL:
        text = f"fill {_names(writes)}"
    else:
        kernel, scalars, size = split_dispatch_label(record.label)
        arguments = [*dict.fromkeys(device_name(trace, r) for r in record.device_ranges)]
        text = f"dispatch {kernel}({', '.join([*arguments, *scalars])}){size}"
    return f"#{record.id} {text}"


SCALAR_TEXT_LIMIT = 16
"""How many characters of a scalar argument's repr a dispatch label keeps."""


def dispatch_label(kernel: str, scalars: Sequence[tuple[str, object]], dims: Sequence[int]) -> str:
    """What a trace records of a dispatch: the kernel's name, its scalar arguments (each
    repr cut to :data:`SCALAR_TEXT_LIMIT` characters) and its size without trailing 1s:
    ``vecadd(n=1024, scale=0.5) [1024]``."""
    size = list(dims)
    while len(size) > 1 and size[-1] == 1:
        size.pop()
    values = ", ".join(f"{name}={_short_repr(value)}" for name, value in scalars)
    arguments = f"({values})" if values else ""
    return f"{kernel}{arguments} [{', '.join(map(str, size))}]"


def split_dispatch_label(label: str) -> tuple[str, list[str], str]:
    """``(kernel, scalar arguments, " [size]")`` of a label :func:`dispatch_label` made;
    a bare kernel name (older traces) has no arguments and no size."""
    head, size = label, ""
    if label.endswith("]") and " [" in label:
        head, size = label.rsplit(" [", 1)
        size = f" [{size}"
    kernel, _, rest = head.partition("(")
    scalars = rest[:-1].split(", ") if rest.endswith(")") else []
    return kernel or "kernel", scalars, size


def _short_repr(value: object) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    elif isinstance(value, np.ndarray):
        value = value.tolist()
    text = repr(value)
    if len(text) > SCALAR_TEXT_LIMIT:
        text = text[: SCALAR_TEXT_LIMIT - 1] + "…"
    return text


def _names(names: list[str]) -> str:
    return ", ".join(dict.fromkeys(names)) or "?"


def describe_sync(trace: Trace, record: SyncRecord) -> str:
    stream = stream_name(trace, record.stream)
    if record.kind is SyncKind.SYNCHRONIZE:
        return f"synchronize {stream}" if record.stream is not None else "synchronize device"
    if record.kind is SyncKind.SIGNAL:
        return f"signal event {record.event} on {stream}"
    if record.kind is SyncKind.WAIT:
        return f"wait event {record.event} on {stream}"
    if record.kind is SyncKind.EVENT_SYNCHRONIZE:
        return f"synchronize event {record.event}"
    return f"callback on {stream}"


_given_names: dict[int, tuple[weakref.ref, str]] = {}
_PACKAGE = Path(__file__).resolve().parents[1]
_PACKAGE_FOLDER = str(_PACKAGE) + os.sep
_LIBRARY_FOLDERS = tuple(str(_PACKAGE / folder) for folder in ("runtime", "recording", "luisa"))


def give_name(array: np.ndarray, name: str) -> None:
    """Name ``array`` in every trace, wherever it is held (a list, a dict, an attribute)."""
    key = id(array)
    _given_names[key] = (weakref.ref(array, lambda _, key=key: _given_names.pop(key, None)), name)


def given_name(array: np.ndarray) -> str | None:
    entry = _given_names.get(id(array))
    return entry[1] if entry is not None and entry[0]() is array else None


def user_frame() -> FrameType | None:
    """The innermost frame outside luisa_nb's runtime: the user's code."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_LIBRARY_FOLDERS):
        frame = frame.f_back
    return frame


def user_namespaces() -> tuple[Mapping[str, object], ...]:
    """The locals and globals of :func:`user_frame`."""
    frame = user_frame()
    return () if frame is None else (frame.f_locals, frame.f_globals)


def python_data_address(array: np.ndarray) -> int:
    """The address of ``array``'s first byte (:data:`data_address` is this, or the same in
    C: numpy builds a dict of nine entries for ``__array_interface__``, ~2 µs)."""
    return array.__array_interface__["data"][0]


try:
    from luisa_nb.recording._row_appender import data_address
except ImportError:  # not built (no C compiler or Python headers at install)
    data_address = python_data_address


def array_name(array: np.ndarray, namespaces: Iterable[Mapping[str, object]]) -> str | None:
    """``array``'s given name or the variable holding it; for a view, those of the array
    it views, with the view's flat element range unless it covers that array
    (``z_data[512:1024]``)."""
    namespaces = tuple(namespaces)
    name = given_name(array) or variable_name(array, namespaces)
    if name is not None or array.base is None:  # named, or it views no other array
        return name
    return owner_name(owners(array)[1:], data_address(array), array.nbytes, namespaces)


def owners(array: np.ndarray) -> list[np.ndarray]:
    """``array`` and the arrays it views, innermost first."""
    chain = []
    owner: object = array
    while isinstance(owner, np.ndarray):
        chain.append(owner)
        owner = owner.base
    return chain


def memory_owner(array: np.ndarray) -> np.ndarray | None:
    """The array that owns ``array``'s memory, which is freed when that array is; ``None``
    when the memory belongs to an object that is not an array (bytes, a memory map)."""
    outermost = owners(array)[-1]
    return outermost if outermost.base is None else None


def code_site(frame: FrameType) -> str | None:
    """Where ``frame`` is (:func:`code_line`), or ``None`` for luisa_nb's own code."""
    code = frame.f_code
    if code.co_filename.startswith(_PACKAGE_FOLDER):
        return None
    return code_line(code, frame.f_lineno)


def code_line(code: CodeType, line: int) -> str:
    """``"file:line in function"``."""
    return f"{code.co_filename}:{line} in {code.co_name}"


def owner_name(
    candidates: Iterable[np.ndarray],
    address: int,
    nbytes: int,
    namespaces: tuple[Mapping[str, object], ...],
) -> str | None:
    """The name of the bytes ``[address, address + nbytes)`` after the first of
    ``candidates`` (arrays holding them) that has a name."""
    for owner in candidates:
        name = given_name(owner) or variable_name(owner, namespaces)
        if name is None:
            continue
        start_address = data_address(owner)
        if address == start_address and nbytes == owner.nbytes:
            return name
        start = (address - start_address) // owner.itemsize
        return f"{name}[{start}:{start + nbytes // owner.itemsize}]"
    return None


def variable_name(value: object, namespaces: Iterable[Mapping[str, object]]) -> str | None:
    """The first public variable of ``namespaces`` that holds ``value`` itself."""
    for namespace in namespaces:
        for name, held in namespace.items():
            if held is value and not name.startswith("_"):
                return name
    return None
