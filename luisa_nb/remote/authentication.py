"""The server's token check: a ZAP handler for ZeroMQ's PLAIN mechanism.

ZeroMQ asks it during each connection's handshake, before any message is read, whether
the PLAIN user and password the peer sent are :data:`PLAIN_USER` and the token; a peer
without them is disconnected and never has a message read.
"""

from __future__ import annotations

import hmac
import logging
import time

import zmq

from luisa_nb.remote.protocol import PLAIN_USER

logger = logging.getLogger("luisa_nb.remote.server")
ZAP_ENDPOINT = "inproc://zeromq.zap.01"
REFUSAL_LOG_SECONDS = 10.0
MAX_REMEMBERED_ADDRESSES = 1024


class TokenAuthenticator:
    """Answers the ZAP requests of ``context``'s sockets; call :meth:`answer` when
    ``socket`` is readable. A refusal is logged, at most once per address every
    ``REFUSAL_LOG_SECONDS`` (a client retries its handshake; a prober may retry forever)."""

    def __init__(self, context: zmq.Context, token: bytes) -> None:
        self._token = token
        self.refusals: dict[str, float] = {}
        self.socket = context.socket(zmq.REP)
        self.socket.bind(ZAP_ENDPOINT)

    def answer(self) -> None:
        request = self.socket.recv_multipart()
        # version, request id, domain, address, routing id, mechanism, credentials...
        allowed = (
            len(request) == 8
            and request[5] == b"PLAIN"
            and request[6] == PLAIN_USER.encode()
            and hmac.compare_digest(request[7], self._token)
        )
        if not allowed:
            self._log_refusal(request[3].decode(errors="replace") if len(request) > 3 else "")
        status = [b"200", b"OK"] if allowed else [b"400", b"wrong token"]
        request_id = request[1] if len(request) > 1 else b""
        self.socket.send_multipart([b"1.0", request_id, *status, b"", b""])

    def _log_refusal(self, address: str) -> None:
        now = time.monotonic()
        if now - self.refusals.get(address, -REFUSAL_LOG_SECONDS) < REFUSAL_LOG_SECONDS:
            return
        if len(self.refusals) >= MAX_REMEMBERED_ADDRESSES:
            self.refusals.clear()
        self.refusals[address] = now
        logger.warning(
            "refused a connection from %s: wrong token (more from there within %g s are "
            "refused without a log line)",
            address or "an unknown address",
            REFUSAL_LOG_SECONDS,
        )
