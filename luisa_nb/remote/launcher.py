"""Starting and stopping the server process that ``create_device("remote")`` uses.

The server runs ``python -m luisa_nb.remote.server`` on 127.0.0.1 and a free port, with
a random token passed in its environment (not on its command line, where other users
could read it). It prints one JSON line when ready; it exits when stopped, and on its
own when the process that started it is gone, so no server outlives its client (and no
session worker outlives its server).
"""

from __future__ import annotations

import json
import os
import secrets
import select
import subprocess
import sys
import time

from luisa_nb.errors import RemoteError
from luisa_nb.remote.protocol import TOKEN_VARIABLE

STOP_SECONDS = 5.0


class LocalServer:
    """A server process serving ``backend``; ``endpoint`` and ``token`` reach it."""

    def __init__(self, backend: str, timeout: float) -> None:
        self.token = secrets.token_hex(16)
        command = [
            sys.executable, "-m", "luisa_nb.remote.server", "--backend", backend,
            "--host", "127.0.0.1", "--port", "0", "--exit-with-parent",
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            env={**os.environ, TOKEN_VARIABLE: self.token},
        )
        try:
            ready = json.loads(self._first_line(timeout))
            self.endpoint = ready["endpoint"]
        except BaseException:
            self.stop()
            raise

    def _first_line(self, timeout: float) -> bytes:
        stdout = self.process.stdout
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            readable, _, _ = select.select([stdout], [], [], 0.05)
            if readable:
                line = stdout.readline()
                if line:
                    return line
            if self.process.poll() is not None:
                raise RemoteError(
                    f"the remote server process exited with code {self.process.returncode} "
                    f"before it was ready; run `python -m luisa_nb.remote.server --port 0` "
                    f"to see why"
                )
        raise RemoteError(f"the remote server process was not ready within {timeout:g} s")

    def stop(self) -> None:
        """Stop the process (terminate, then kill) and reap it."""
        process = self.process
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stdout is not None:
            process.stdout.close()
