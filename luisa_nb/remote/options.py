"""A server's command line: the options of ``luisa-nb serve`` (importable without pyzmq:
the CLI builds its parser before it knows whether ``serve`` will run). The server module
builds a server from them."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from luisa_nb.remote.protocol import DEFAULT_MAX_MESSAGE_BYTES, TOKEN_VARIABLE

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


def stop_on_terminate() -> threading.Event:
    """Make SIGTERM stop a serving process as Ctrl-C does, so that ``Server.close()``
    stops the workers and removes the server's files. Returns an event that SIGTERM
    sets: pass it to ``Server.serve(stop=...)``, because the handler's
    ``KeyboardInterrupt`` is lost when the signal lands while Python runs a weakref
    callback or a ``__del__``. Python reports such a lost exception on stderr, which a
    client shares with the server it started; once SIGTERM came, those reports of a
    ``KeyboardInterrupt`` are dropped, since the event does the stopping."""
    requested = threading.Event()

    def interrupt(number: int, frame: Any) -> None:
        requested.set()
        raise KeyboardInterrupt

    report = sys.unraisablehook

    def lost(unraisable: Any) -> None:
        if not (requested.is_set() and isinstance(unraisable.exc_value, KeyboardInterrupt)):
            report(unraisable)

    sys.unraisablehook = lost
    signal.signal(signal.SIGTERM, interrupt)
    return requested
