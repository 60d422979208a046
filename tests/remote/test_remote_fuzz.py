"""Fuzzed frames: random and mutated messages to a running server and to a session's
worker directly, random and mutated replies to a real client. The server stays up, keeps
answering correctly and keeps its memory; the client raises luisa_nb errors only, and
never hangs.

``LUISA_NB_FUZZ_EXAMPLES`` sets the number of examples of each test (default 150).
"""

import contextlib
import itertools
import json
import os
import socket
import threading
import time

import numpy as np
import pytest

zmq = pytest.importorskip("zmq")
hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import luisa_nb as lnb  # noqa: E402
from luisa_nb.backends.base import OperationFailed  # noqa: E402
from luisa_nb.backends.remote import RemoteBackend  # noqa: E402
from luisa_nb.errors import RemoteError  # noqa: E402
from luisa_nb.remote.protocol import (  # noqa: E402
    DIRECT_REQUESTS,
    OPERATIONS,
    PLAIN_USER,
    PROTOCOL_VERSION,
    encode,
)
from luisa_nb.remote.stream import MAX_FRAMES  # noqa: E402

from .helpers import RawClient, StreamClient, peak_rss_kib, worker_processes  # noqa: E402

EXAMPLES = int(os.environ.get("LUISA_NB_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
REPLY_SECONDS = 10.0  # far more than any answer takes: a silence this long is a hang
GROUPS = itertools.count(10)
TARGET_BYTES = 256
SERVER_GROWTH_MIB = 32  # the supervisor keeps nothing per message
WORKER_PEAK_MIB = 128  # a fork of the fork server (~30 MiB) and a few small buffers

# -- what a hostile client sends ---------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


def mostly(likely, unlikely, tenths: int = 8):
    """``likely`` ``tenths`` times in ten, else ``unlikely``: deep enough into the server
    to reach its operations, and wrong often enough to test every check on the way."""
    return st.integers(1, 10).flatmap(lambda n: likely if n <= tenths else unlikely)


huge = st.sampled_from([-1, 2**31, 2**40, 2**48, 2**48 + 1, 2**63, 2**64])
sizes = mostly(st.integers(0, TARGET_BYTES // 2), st.integers(0, 9000) | huge | json_values)
handles = st.integers(0, 6) | huge | json_values
fields_by_kind = {
    "offset": sizes,
    "nbytes": sizes,
    "payload": sizes,
    "dtype": mostly(st.sampled_from(["<f4", "<i8", "|b1"]), st.sampled_from(["object", "<f2"])),
    "hex": mostly(st.sampled_from(["00000000", "0000803f"]), st.sampled_from(["zz", "", "0" * 18])),
    "key": mostly(st.sampled_from(["0" * 32]), st.sampled_from(["f" * 31]) | json_values),
    "dims": mostly(st.lists(sizes, min_size=3, max_size=3), st.lists(sizes) | json_values),
    "buffers": mostly(st.lists(st.lists(sizes, min_size=3, max_size=3), max_size=2), json_values),
    "scalars": st.lists(st.integers() | st.floats() | st.booleans(), max_size=3) | json_values,
    "print_log": mostly(st.lists(sizes, min_size=2, max_size=2), json_values),
    "definition": st.none()
    | st.fixed_dictionaries(
        {
            "name": st.sampled_from(["lnb_k", "k", "lnb_$"]),
            "source": st.text(max_size=40),
            "buffers": st.lists(st.sampled_from(["<f4", "x"]), max_size=2),
            "scalars": st.lists(st.sampled_from(["int32", "x"]), max_size=2),
        }
    )
    | json_values,
}


@st.composite
def operations(draw, target):
    """A batch operation: mostly well-formed field by field and aimed at buffer handle
    ``target``, else short, else anything."""
    name = draw(mostly(st.sampled_from(list(OPERATIONS)), st.just("rm"), tenths=9))
    kinds = OPERATIONS.get(name, ("handle",))
    fields = {**fields_by_kind, "handle": mostly(st.just(target), handles)}
    operation = [name, *(draw(fields[kind]) for kind in kinds)]
    return draw(mostly(st.just(operation), st.just(operation[:-1]) | json_values))


@st.composite
def arguments(draw, op, group, target):
    if op == "allocate":
        return {"nbytes": draw(sizes)}
    ops = st.lists(operations(target), min_size=1, max_size=6)
    drawn = {
        "group": draw(mostly(st.just(group), st.integers(0, 3) | json_values, tenths=9)),
        "ops": draw(mostly(ops, json_values, tenths=9)),
        "frees": draw(mostly(st.just([]), st.lists(handles, max_size=2) | json_values)),
    }
    if draw(st.integers(0, 4)) == 4:  # the bytes in the session's window
        part = st.lists(sizes | st.integers(0, 40 << 20), min_size=2, max_size=2)
        drawn["window"] = draw(mostly(part, json_values))
    if draw(st.integers(0, 9)) == 9:  # shared regions the client let go
        drawn["unshare"] = draw(mostly(st.lists(handles, max_size=3), json_values))
    return drawn


@st.composite
def requests(draw, session, group, target):
    """The frames of one request: mostly a valid envelope, then maybe arguments, a payload
    and frames too many; now and then a field, a frame or the envelope broken. ``group``
    is a batch group not used before (after a failure, the rest of a group is skipped);
    ``target`` a buffer handle of ``TARGET_BYTES`` to aim operations at."""
    op = draw(
        mostly(st.sampled_from(["allocate", "batch", "batch"]), st.sampled_from(DIRECT_REQUESTS))
    )
    envelope = {"v": PROTOCOL_VERSION, "id": draw(st.integers(0, 9)), "session": session}
    envelope["op"] = draw(mostly(st.just(op), st.just("format_disk"), tenths=9))
    # Hypothesis draws the small end of a range most: the rare case is the large one
    if draw(st.integers(0, 19)) == 19:
        envelope["session"] = draw(st.sampled_from(["0123abcd" * 2, "XYZ", ""]))
    if draw(st.integers(0, 9)) == 9:
        envelope[draw(st.sampled_from(["v", "id", "session", "op"]))] = draw(json_values)
    frames = [encode(envelope)]
    if op in ("allocate", "batch", "share") or draw(st.booleans()):
        frames.append(encode(draw(arguments(op, group, target))))
        if draw(st.booleans()):
            frames.append(draw(st.binary(max_size=9000)))
    if draw(st.integers(0, 19)) == 19:
        frames.extend(draw(st.lists(st.binary(max_size=64), min_size=1, max_size=3)))
    corrupt = draw(st.integers(0, 9))
    if corrupt == 9:
        index = draw(st.integers(0, len(frames) - 1))
        # a share of the frame, not a byte count: a frame's length depends on the server's
        # handles and groups, which differ when Hypothesis replays an example
        kept = draw(st.integers(0, 100)) * len(frames[index]) // 100
        frames[index] = frames[index][:kept]
    elif corrupt == 8:
        frames[draw(st.integers(0, len(frames) - 1))] = draw(st.binary(max_size=200))
    return frames


def check_reply(client, frames) -> dict:
    """The server answers every message of a logged-in client, with a well-formed reply
    (its header is returned)."""
    client.socket.send_multipart(frames)
    deadline = time.monotonic() + REPLY_SECONDS
    while True:
        assert client.socket.poll(max(1, int((deadline - time.monotonic()) * 1000))), "no reply"
        reply = client.socket.recv_multipart()
        header = json.loads(reply[0])
        if not header.get("probe"):
            break
    assert header["v"] == PROTOCOL_VERSION and type(header["ok"]) is bool
    assert header["id"] is None or type(header["id"]) is int
    assert not header.get("ended"), header  # a worker crashed
    if "failed" in header:
        event("operation failed: " + " ".join(header["error"].split()[:3]))
    elif header["ok"]:
        event("answered" if "done" not in header else f"a batch of {header['done']} done")
    else:
        assert type(header["error"]) is str and header["error"]
        event("refused: " + " ".join(header["error"].split()[2:5]))
    return header


@pytest.fixture(scope="module")
def server_peak_before(process_server):
    """The server process's peak memory before the fuzzing, in MiB."""
    return peak_rss_kib(process_server[0].pid) / 1024


@pytest.fixture(scope="module")
def fuzz_client(process_server, server_peak_before):
    _, endpoint, token = process_server
    client = RawClient(endpoint, token)
    yield client
    client.close()


@FUZZ
@given(data=st.data())
def test_fuzzed_requests_get_answers_and_leave_the_server_well(process_server, fuzz_client, data):
    session = fuzz_client.session
    target = check_reply(fuzz_client, fuzz_client.request("allocate", nbytes=TARGET_BYTES))
    for _ in range(data.draw(st.integers(1, 3), label="requests")):
        check_reply(fuzz_client, data.draw(requests(session, next(GROUPS), target["handle"])))
    free = {"group": next(GROUPS), "ops": [], "frees": [target["handle"]]}
    check_reply(fuzz_client, [fuzz_client.request("batch")[0], encode(free)])


@pytest.fixture(scope="module")
def direct_client(fuzz_client):
    """A client of the fuzzed session that talks to its worker directly."""
    header, _ = fuzz_client.ask(fuzz_client.request("hello"), timeout=int(REPLY_SECONDS * 1000))
    client = StreamClient(header["local"]["worker"], fuzz_client.session)
    yield client
    client.close()


@FUZZ
@given(data=st.data())
def test_fuzzed_requests_to_the_worker_get_answers_and_leave_it_well(direct_client, data):
    session = direct_client.session
    target = check_reply(direct_client, direct_client.request("allocate", nbytes=TARGET_BYTES))
    for _ in range(data.draw(st.integers(1, 3), label="requests")):
        frames = data.draw(requests(session, next(GROUPS), target["handle"]))
        # the stream's format holds three frames at most (a header saying more is dropped
        # with its connection: test_remote_direct)
        check_reply(direct_client, frames[:MAX_FRAMES])
    free = {"group": next(GROUPS), "ops": [], "frees": [target["handle"]]}
    check_reply(direct_client, [direct_client.request("batch")[0], encode(free)])


def test_after_the_fuzzing_the_server_serves_correctly_in_bounded_memory(
    process_server, server_peak_before
):
    process, endpoint, token = process_server
    assert process.poll() is None
    workers = worker_processes(process.pid)
    assert len(workers) <= 2  # sessions that ended took their workers with them
    grown = peak_rss_kib(process.pid) / 1024 - server_peak_before
    assert grown < SERVER_GROWTH_MIB, f"the server's peak memory grew by {grown:.0f} MiB"
    for worker in workers:
        assert peak_rss_kib(worker) / 1024 < WORKER_PEAK_MIB
    device = lnb.create_device("remote://" + endpoint.removeprefix("tcp://"), token=token)
    data = np.arange(100_000, dtype=np.int64)
    buffer = device.create_buffer(data.size, np.int64)
    buffer.copy_from(data)
    buffer.view(10, 20).fill(-1)
    data[10:20] = -1
    assert np.array_equal(buffer.numpy(), data)
    device.backend.close()


@FUZZ
@given(prefix=st.binary(max_size=80), mechanism=st.sampled_from([b"NULL", b"PLAIN", b"CURVE"]))
def test_fuzzed_bytes_without_the_token_are_dropped(process_server, prefix, mechanism):
    _, endpoint, _ = process_server
    host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
    greeting = b"\xff" + bytes(8) + b"\x7f\x03\x00" + mechanism.ljust(20, b"\0") + bytes(32)
    with (
        socket.create_connection((host, int(port)), timeout=5) as connection,
        contextlib.suppress(OSError),  # the server hung up: what should happen
    ):
        connection.sendall(greeting[: len(prefix) % 65] + prefix)


# -- what a hostile (or broken) server answers ---------------------------------------------


class FakeServer:
    """A ROUTER that logs clients in with ``token``, answers hello, clock and allocate
    well, and answers a batch with ``mutate(correct reply frames)``, then correctly (a
    client must ignore a reply to nothing it waits for)."""

    def __init__(self, token: str) -> None:
        from zmq.auth.thread import ThreadAuthenticator

        self.context = zmq.Context()
        self.authenticator = ThreadAuthenticator(self.context)
        self.authenticator.start()
        self.authenticator.configure_plain(domain="*", passwords={PLAIN_USER: token})
        self.socket = self.context.socket(zmq.ROUTER)
        self.socket.plain_server = True
        self.socket.setsockopt(zmq.LINGER, 0)
        port = self.socket.bind_to_random_port("tcp://127.0.0.1")
        self.address = f"127.0.0.1:{port}"
        self.mutate = lambda frames: frames
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            if not self.socket.poll(50):
                continue
            identity, envelope, *data = self.socket.recv_multipart()
            header = json.loads(envelope)
            reply = {"v": PROTOCOL_VERSION, "id": header["id"], "ok": True}
            if header["op"] == "batch":
                frames = self._batch(reply, json.loads(data[0]))
                self.socket.send_multipart([identity, *self.mutate(frames)])
                self.socket.send_multipart([identity, *frames])
                continue
            if header["op"] == "hello":
                reply.update(backend="cpu", simulated=False, max_message_bytes=1 << 20)
                reply.update(pid=1, worker_pid=2, description="fake", staging_capacity=None)
            reply.update(time=time.perf_counter_ns(), handle=1)
            self.socket.send_multipart([identity, encode(reply)])

    @staticmethod
    def _batch(reply, arguments):
        operations = arguments["ops"]
        downloads = sum(op[3] for op in operations if op[0] == "download")
        reply["done"] = len(operations)
        return [encode(reply), bytes(16 * len(operations)), bytes(downloads)]

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.authenticator.stop()
        self.context.destroy(linger=0)


@st.composite
def mutations(draw):
    """A function that spoils a correct batch reply: its header's fields, its frames."""
    header_change = draw(
        st.none()
        | st.tuples(st.sampled_from(["ok", "id", "done", "failed", "error", "ended"]), json_values)
        | st.tuples(st.just("drop"), st.sampled_from(["ok", "id", "done", "v"]))
    )
    frame_change = draw(
        st.none()
        | st.tuples(st.just("truncate"), st.integers(0, 2), st.integers(0, 64))
        | st.tuples(st.just("random"), st.integers(0, 2), st.binary(max_size=64))
        | st.tuples(st.just("drop"), st.integers(1, 2), st.none())
        | st.tuples(st.just("add"), st.integers(0, 3), st.binary(max_size=16))
    )

    def mutate(frames):
        frames = list(frames)
        if header_change is not None:
            header = json.loads(frames[0])
            name, value = header_change
            if name == "drop":
                header.pop(value, None)
            else:
                header[name] = value
            frames[0] = encode(header)
        if frame_change is not None:
            kind, index, value = frame_change
            if kind == "truncate":
                frames[index] = frames[index][:value]
            elif kind == "random":
                frames[index] = value
            elif kind == "drop":
                del frames[index]
            else:
                frames.insert(index, value)
        return frames

    return mutate


@pytest.fixture(scope="module")
def fake_server():
    server = FakeServer("fake-token")
    yield server
    server.close()


@FUZZ
@given(mutate=mutations())
def test_fuzzed_replies_raise_luisa_nb_errors_only(fake_server, mutate):
    fake_server.mutate = mutate
    backend = RemoteBackend(fake_server.address, token="fake-token", timeout=REPLY_SECONDS)
    try:
        allocation = backend.allocate(64)
        out = np.zeros(16, np.uint8)
        backend.upload(allocation, 0, np.arange(16, dtype=np.uint8))
        backend.download(allocation, 16, out)
        backend.fill(allocation, 32, 16, np.ones(1, np.float32))
        started = time.monotonic()
        try:
            backend.flush()
            event("flushed")
        except (OperationFailed, RemoteError) as error:  # the contract: nothing else
            event(type(error).__name__)
        assert time.monotonic() - started < REPLY_SECONDS / 2
    finally:
        backend.close()
