"""A server's command line: the options of ``luisa-nb serve`` (importable without pyzmq:
the CLI builds its parser before it knows whether ``serve`` will run), and the main
function of ``python -m luisa_nb.remote.server``, the process a client starts."""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import signal
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from luisa_nb.remote.protocol import DEFAULT_MAX_MESSAGE_BYTES, TOKEN_VARIABLE, encode

if TYPE_CHECKING:
    from luisa_nb.remote.server import Server

DEFAULT_PORT = 5557
DEFAULT_MAX_SESSIONS = 64


def add_serve_options(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--backend", default="cpu", help="local backend to serve (default: cpu)")
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default: 127.0.0.1, loopback only; any other address lets "
        "whoever reaches it with the token run code on this machine)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"TCP port; 0 picks a free one (default: {DEFAULT_PORT})",
    )
    parser.add_argument(
        "--token",
        help=f"the token clients must log in with (default: ${TOKEN_VARIABLE}, else a random one)",
    )
    parser.add_argument(
        "--max-message-bytes",
        type=int,
        default=DEFAULT_MAX_MESSAGE_BYTES,
        help=f"largest payload (upload bytes) of one message; clients split larger "
        f"transfers (default and most: {DEFAULT_MAX_MESSAGE_BYTES} bytes)",
    )
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=DEFAULT_MAX_SESSIONS,
        help=f"most clients served at once, each by a worker process of its own "
        f"(default: {DEFAULT_MAX_SESSIONS})",
    )
    return parser


def make_server(arguments: argparse.Namespace) -> Server:
    """A server with the options in ``arguments`` (bound, not serving yet)."""
    from luisa_nb.remote.server import Server

    token = arguments.token or os.environ.get(TOKEN_VARIABLE) or secrets.token_hex(16)
    return Server(
        arguments.backend,
        host=arguments.host,
        port=arguments.port,
        token=token,
        max_message_bytes=arguments.max_message_bytes,
        max_sessions=arguments.max_sessions,
    )


def stop_on_terminate() -> None:
    """Make SIGTERM stop a serving process as Ctrl-C does, so that ``Server.close()``
    stops the workers and removes the server's files."""
    signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(number: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """Serve: print one JSON line when ready. With ``--exit-with-parent`` (a client
    started this process), stop when that client is gone, and ignore Ctrl-C."""
    parser = argparse.ArgumentParser(prog="python -m luisa_nb.remote.server")
    add_serve_options(parser)
    parser.add_argument("--exit-with-parent", action="store_true")
    arguments = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="luisa_nb server: %(message)s")
    stop_on_terminate()
    parent = None
    if arguments.exit_with_parent:
        parent = os.getppid()
        # a terminal's Ctrl-C reaches the whole process group, this server included: it
        # is the client's to handle (it cancels its kernels here and keeps its device)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    server = make_server(arguments)
    print(encode({"endpoint": server.endpoint, "pid": os.getpid()}).decode(), flush=True)
    try:
        server.serve(parent_pid=parent)
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0
