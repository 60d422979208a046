"""The wire format of the remote backend, shared by client and server.

A request is a ZeroMQ multipart message of up to three frames:

1. the *envelope*, a small UTF-8 JSON object, the only part the server's supervisor
   reads (it routes the request by it)::

       {"v": 5, "id": <int>, "session": <hex str>, "op": <str>}

2. for ``allocate`` and ``batch``, the arguments, a JSON object read by the session's
   worker (``{"nbytes"}``, and ``"shared": true`` for a buffer in memory a direct
   client sends; ``{"group", "ops", "frees"}``, ``ops`` a list of lists, see
   :data:`OPERATIONS`);
3. for a batch with uploads, their bytes, one after the other (the *payload*).

``cancel`` and ``resume`` are the envelope alone: the supervisor answers them itself,
while the session's worker may be running a kernel, by setting and clearing the flag
that the worker's kernels poll (:mod:`~luisa_nb.remote.cancellation`).

A reply is a JSON header ``{"v": 5, "id": <the request's id or null>, "ok": <bool>, ...}``
with ``"error"`` when ``ok`` is false (and ``"ended": true`` when the session is gone);
a batch's reply adds the operations' times and, when downloads ran, their bytes one
after the other. Few frames per message keep relaying them cheap. Nothing is pickled.

A client on the server's host sends ``allocate`` and ``batch`` to the session's worker
over a Unix stream socket instead, the same frames length-prefixed
(:mod:`~luisa_nb.remote.stream`).

The token is not in the messages: clients log in with ZeroMQ's PLAIN mechanism (user
:data:`PLAIN_USER`, password the token) and the server checks it during the connection's
handshake, so a peer without it never gets a message read.
"""

from __future__ import annotations

import hashlib
import json
import re
from json.encoder import c_make_encoder, encode_basestring_ascii
from json.scanner import c_make_scanner
from typing import Any

PROTOCOL_VERSION = 5
PLAIN_USER = "luisa_nb"
ZAP_DOMAIN = "luisa_nb"
MAX_FRAME_BYTES = 16 << 20
"""The most bytes of any frame. ZeroMQ drops a connection that sends a bigger one before
the server sees it, logged in or not, so a peer without the token can make the server
hold at most this much, and only until its handshake times out."""
DEFAULT_MAX_MESSAGE_BYTES = MAX_FRAME_BYTES
MAX_ENVELOPE_BYTES = 1024
MAX_HEADER_BYTES = MAX_FRAME_BYTES
MAX_OPS_PER_BATCH = 65536
MAX_HANDLE = (1 << 53) - 1
MAX_BYTES = 1 << 48
MAX_SOURCE_BYTES = 4 << 20
MAX_KERNEL_PARAMETERS = 1024
TOKEN_VARIABLE = "LUISA_NB_REMOTE_TOKEN"
SESSION_PATTERN = re.compile(r"[0-9a-f]{8,64}")
ENTRY_PATTERN = re.compile(r"lnb_[A-Za-z0-9_]{1,200}")
KEY_PATTERN = re.compile(r"[0-9a-f]{32}")
MAX_PRINT_BYTES = 4 << 20
"""The most bytes of one printing dispatch's print log (its records travel back as hex)."""
MAX_VALUE_HEX = 2 << 20
"""The longest hex text of a by-value kernel argument (a vector, matrix, struct or array)."""
REQUESTS = ("hello", "clock", "allocate", "batch", "close", "cancel", "resume")
DIRECT_REQUESTS = (*REQUESTS, "share")
"""What a client on the server's host may send its session's worker: ``share`` carries a
file descriptor, as does a shared ``allocate``, which only the worker's Unix socket can
pass."""
CANCEL_REQUESTS = ("cancel", "resume")
OPERATIONS = {
    # name: the fields after the name, checked by check_operation
    "upload": ("handle", "offset", "nbytes", "payload"),
    "download": ("handle", "offset", "nbytes"),
    "readback": ("handle", "offset", "nbytes", "handle", "offset"),  # into a shared region
    "copy": ("handle", "offset", "handle", "offset", "nbytes"),
    "fill": ("handle", "offset", "nbytes", "dtype", "hex"),
    "dispatch": ("key", "dims", "buffers", "scalars", "definition"),
    "dispatch_printing": ("key", "dims", "buffers", "scalars", "definition", "print_log"),
}


class ProtocolError(Exception):
    """A message does not follow the protocol; the text says which part and why."""


def _unencodable(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


# The standard library's C encoder and scanner, made once: json.dumps and json.loads
# build them on every call, which costs more than encoding or reading a small message.
# The encoder's flags are json.dumps's defaults: keys unsorted, none skipped, NaN allowed.
_ENCODE = c_make_encoder(
    None, _unencodable, encode_basestring_ascii, None, ":", ",", False, False, True
)
_DECODER = json.JSONDecoder()
_SCAN = c_make_scanner(_DECODER)


def encode(header: dict[str, Any]) -> bytes:
    """``header`` as compact JSON (ASCII)."""
    return "".join(_ENCODE(header, 0)).encode()


def decode(
    frame: bytes | memoryview, what: str = "header", limit: int = MAX_HEADER_BYTES
) -> dict[str, Any]:
    """The JSON object in ``frame``; :class:`ProtocolError` for anything else."""
    if len(frame) > limit:
        raise ProtocolError(f"{what} of {len(frame)} bytes exceeds {limit}")
    try:
        text = str(frame, "utf-8")
        try:  # a message as our peers write it: one value, no whitespace around it
            header, end = _SCAN(text, 0)
        except StopIteration:
            end = -1
        if end != len(text):  # anything else: the full decoder accepts or explains it
            header = _DECODER.decode(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ProtocolError(f"{what} is not JSON: {error}") from None
    if type(header) is not dict:
        raise ProtocolError(f"{what} is a JSON {type(header).__name__}, not an object")
    return header


def kernel_key(definition: dict[str, Any]) -> str:
    """The hash that names a kernel definition on both sides."""
    text = json.dumps(definition, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def check_integer(value: Any, what: str, maximum: int = MAX_BYTES) -> int:
    if type(value) is not int or not 0 <= value <= maximum:
        raise ProtocolError(f"{what} must be an integer in [0, {maximum}], got {value!r}")
    return value


def check_request(header: dict[str, Any], requests: tuple[str, ...] = REQUESTS) -> None:
    """The envelope's fields: version, id, session and an op of ``requests``."""
    if header.get("v") != PROTOCOL_VERSION:
        raise ProtocolError(
            f"protocol version {header.get('v')!r} is not supported (server: {PROTOCOL_VERSION})"
        )
    check_integer(header.get("id"), "id", MAX_HANDLE)
    session = header.get("session")
    if type(session) is not str or not SESSION_PATTERN.fullmatch(session):
        raise ProtocolError("session must be 8 to 64 lowercase hex digits")
    if header.get("op") not in requests:
        raise ProtocolError(f"op {header.get('op')!r} is unknown; use one of {requests}")


def check_operation(operation: Any, payload_bytes: int) -> list[Any]:
    """One batch operation, its field types checked, and an upload's bytes inside the
    payload of ``payload_bytes`` (handles and ranges are checked against the session by
    the worker)."""
    if type(operation) is not list or not operation or operation[0] not in OPERATIONS:
        raise ProtocolError(f"operation {str(operation)[:80]} is not [name, ...fields]")
    name = operation[0]
    fields = OPERATIONS[name]
    if len(operation) != len(fields) + 1:
        raise ProtocolError(f"{name} takes {len(fields)} fields, got {len(operation) - 1}")
    for kind, value in zip(fields, operation[1:], strict=True):
        _FIELD_CHECKS[kind](value, name, kind)
    if name == "upload" and operation[4] + operation[3] > payload_bytes:
        raise ProtocolError(
            f"upload bytes [{operation[4]}, {operation[4] + operation[3]}) are outside the "
            f"payload of {payload_bytes} bytes"
        )
    return operation


def _check_size(value: Any, name: str, kind: str) -> None:
    check_integer(value, f"{name} {kind}")


def _check_payload_offset(value: Any, name: str, kind: str) -> None:
    check_integer(value, "upload payload offset")


def _check_dtype(value: Any, name: str, kind: str) -> None:
    if type(value) not in (str, dict):
        raise ProtocolError(f"fill dtype {str(value)[:40]!r} is not a dtype description")


def _check_hex(value: Any, name: str, kind: str) -> None:
    if type(value) is not str or len(value) > MAX_VALUE_HEX:
        raise ProtocolError(f"fill element must be hex text of at most {MAX_VALUE_HEX} digits")


def _check_key(value: Any, name: str, kind: str) -> None:
    if type(value) is not str or not KEY_PATTERN.fullmatch(value):
        raise ProtocolError("dispatch key must be 32 lowercase hex digits")


def _check_definition(value: Any, name: str, kind: str) -> None:
    if value is not None and type(value) is not dict:
        raise ProtocolError("dispatch definition must be an object or null")


def _check_dims(value: Any, name: str, kind: str) -> None:
    if type(value) is not list or len(value) != 3:
        raise ProtocolError("dispatch dims must be a list of 3 integers")
    for item in value:
        check_integer(item, "dispatch dim", (1 << 31) - 1)


def _check_kernel_buffers(value: Any, name: str, kind: str) -> None:
    if type(value) is not list or len(value) > MAX_KERNEL_PARAMETERS:
        raise ProtocolError("dispatch buffers must be a list of [handle, offset, nbytes]")
    for item in value:
        if type(item) is not list or len(item) != 3:
            raise ProtocolError("dispatch buffers must be a list of [handle, offset, nbytes]")
        for number in item:
            check_integer(number, "dispatch buffer field")


def _check_print_log(value: Any, name: str, kind: str) -> None:
    if type(value) is not list or len(value) != 2:
        raise ProtocolError("dispatch_printing print_log must be [record width, capacity]")
    for number in value:
        check_integer(number, "print log field", MAX_PRINT_BYTES)


def _check_scalars(value: Any, name: str, kind: str) -> None:
    if type(value) is not list or len(value) > MAX_KERNEL_PARAMETERS:
        raise ProtocolError("dispatch scalars must be a list of numbers and hex texts")
    for item in value:
        if type(item) is str:
            if len(item) > MAX_VALUE_HEX:
                raise ProtocolError(f"dispatch scalar of {len(item)} hex digits is too long")
        elif type(item) not in (bool, int, float) or (type(item) is int and item.bit_length() > 64):
            raise ProtocolError(
                f"dispatch scalar {item!r} is not a bool, 64-bit int, float or hex text"
            )


_FIELD_CHECKS = {
    # field kind of OPERATIONS: its check, given the value, the operation's name and the kind
    "handle": _check_size,
    "offset": _check_size,
    "nbytes": _check_size,
    "payload": _check_payload_offset,
    "dtype": _check_dtype,
    "hex": _check_hex,
    "key": _check_key,
    "dims": _check_dims,
    "buffers": _check_kernel_buffers,
    "scalars": _check_scalars,
    "definition": _check_definition,
    "print_log": _check_print_log,
}
