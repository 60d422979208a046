"""Headless Debian chromium (driven by Playwright) and a throwaway JupyterLab server, for
the browser tests and the widget benchmark (a test helper, not part of the package).
Playwright is imported only when a browser is launched."""

from __future__ import annotations

import importlib.util
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Playwright

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def missing_browser_reason(*, lab: bool = False) -> str | None:
    """Why browser tests cannot run here, or None when they can; with ``lab``, JupyterLab
    and ipykernel are needed too."""
    if importlib.util.find_spec("playwright") is None:
        return "playwright (Python) is not installed"
    if not Path(CHROMIUM).exists():
        return f"Debian chromium is not installed at {CHROMIUM}"
    for module in ("jupyterlab", "ipykernel") if lab else ():
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed"
    return None


def launch_chromium(playwright: Playwright) -> Browser:
    """Headless Debian chromium, started by ``playwright`` (from ``sync_playwright()``)."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass(frozen=True)
class LabServer:
    """A running JupyterLab server: its base URL, its token and its process."""

    base: str
    token: str
    process: subprocess.Popen

    def url(self, path: str) -> str:
        """The URL of ``path`` (e.g. ``lab/tree/x.ipynb``) on this server, token included."""
        return f"{self.base}/{path.lstrip('/')}?token={self.token}"


@contextmanager
def jupyter_lab(
    root: Path, *, settings: Path | None = None, timeout: float = 60
) -> Iterator[LabServer]:
    """JupyterLab serving ``root`` on 127.0.0.1 with a random token (user settings from
    ``settings`` if given; config, runtime and workspaces in a temporary folder), once it
    answers; raises RuntimeError, with the end of its log, if it does not within
    ``timeout`` seconds. Stopped, and its kernels with it, on exit."""
    port, token = free_port(), secrets.token_hex(16)
    with tempfile.TemporaryDirectory(prefix="luisa-nb-lab-", ignore_cleanup_errors=True) as temp:
        state = Path(temp)
        command = [
            sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
            "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}",
            "--ServerApp.allow_root=True", f"--ServerApp.root_dir={root}",
            f"--LabApp.workspaces_dir={state / 'workspaces'}", "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.expose_app_in_browser=True",
        ]  # fmt: skip
        if settings is not None:
            command.append(f"--LabApp.user_settings_dir={settings}")
        environment = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(state / "config"),
            "JUPYTER_RUNTIME_DIR": str(state / "runtime"),
        }
        log = state / "jupyter-lab.log"
        with log.open("w") as output:
            process = subprocess.Popen(
                command, cwd=root, env=environment, stdout=output, stderr=subprocess.STDOUT
            )
        server = LabServer(f"http://127.0.0.1:{port}", token, process)
        try:
            _wait_until_ready(server, timeout, log)
            yield server
        finally:
            _stop(server)


def _wait_until_ready(server: LabServer, timeout: float, log: Path) -> None:
    """Poll the server's status API until it answers 200, it exits, or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"jupyter lab exited with {server.process.returncode}:\n{log.read_text()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(server.url("api/status"), timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:  # URLError included: not listening yet
            pass
        time.sleep(0.25)
    raise RuntimeError(f"jupyter lab did not answer within {timeout} s:\n{log.read_text()[-3000:]}")


def _stop(server: LabServer) -> None:
    """Ask the server to shut down (it stops its kernels); terminate it, then kill it, if it
    cannot be asked or does not exit in time."""
    request = urllib.request.Request(
        f"{server.base}/api/shutdown",
        method="POST",
        headers={"Authorization": f"token {server.token}"},
    )
    try:
        urllib.request.urlopen(request, timeout=5).close()
        server.process.wait(timeout=15)
    except (OSError, subprocess.TimeoutExpired):
        server.process.terminate()
        try:
            server.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait(timeout=10)


def choose_hazard(page: Any, index: int) -> None:
    """Click hazard ``index`` of a static page's finding list: its place where it is the
    place's first occurrence, else its row in the place's list of occurrences."""
    entry = page.locator(f".lnb-hazard[data-hazard-index='{index}']")
    if entry.count():
        entry.first.click()
        return
    occurrence = page.locator(f".lnb-occurrence[data-hazard-index='{index}']")
    if not occurrence.count():
        hazards = "globalThis.__luisa_nb.pages[0].selection.hazards"
        group = page.evaluate(f"() => {hazards}[{index}].group")
        page.click(f".lnb-finding[data-group='{group}'] .lnb-expand")
    occurrence.click()


def run_cell(page, tries: int = 3) -> None:
    """Shift+Enter in the cell until its prompt shows it queued or ran: a key pressed
    while JupyterLab is still wiring up the editor is lost on a loaded machine, and a
    dialog it opens late would swallow the click."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    prompt = page.locator(".jp-Cell .jp-InputPrompt").first
    for _ in range(tries):
        accept_dialogs(page)
        try:
            page.click(".jp-Notebook .jp-Cell .cm-content", timeout=10_000)
        except PlaywrightTimeout:
            continue
        page.keyboard.press("Shift+Enter")
        for _ in range(40):
            if prompt.inner_text().strip() not in ("[ ]:", ""):
                return
            page.wait_for_timeout(250)
    raise AssertionError(f"the cell did not run after {tries} presses of Shift+Enter")


def accept_dialogs(page, most: int = 3) -> None:
    """Accept the dialogs (kernel, news) JupyterLab opens, up to ``most`` in a row."""
    for _ in range(most):
        if not page.locator(".jp-Dialog").count():
            return
        page.locator(".jp-Dialog .jp-mod-accept").first.click()
        page.wait_for_timeout(100)


def open_lab_notebook(page, url: str) -> None:
    """Open a notebook in JupyterLab and wait until its kernel is idle, accepting the
    dialogs (kernel, news) it may open first."""
    page.goto(url)
    page.wait_for_selector(".jp-Notebook .jp-Cell .cm-content", timeout=60_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)
    page.wait_for_timeout(500)
    accept_dialogs(page)


def run_all_cells(page: Any, url: str, timeout: float = 60) -> None:
    """Open the notebook at ``url`` in JupyterLab, wait until its kernel is idle, then run
    every cell through JupyterLab's own command (no key press to lose)."""
    page.goto(url, timeout=timeout * 1000)
    page.wait_for_function(
        "() => window.jupyterapp?.shell.currentWidget?.sessionContext?.session"
        "?.kernel?.status === 'idle'",
        timeout=timeout * 1000,
    )
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
