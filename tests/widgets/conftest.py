"""Traces for the widget tests: the seed program (LuisaCompute #143) run under both
staging policies. Tests name records through these fixtures, never by number."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

import luisa_nb as lnb
from luisa_nb.recording import CommandKind
from luisa_nb.seed import run_seed


def _seed(staging: str) -> SimpleNamespace:
    """The seed traced with its kernel compiled already: a cold compile inside the trace
    would stretch it to tens of milliseconds, and the views' opening zoom would squeeze
    the commands into overlapping slivers, depending on which test ran first."""
    run_seed(lnb.create_device("cpu", staging=staging))
    trace = run_seed(lnb.create_device("cpu", staging=staging)).trace
    first_upload, dispatch, download, upload, copy = (c.id for c in trace.commands)
    assert [c.kind for c in trace.commands] == [
        CommandKind.UPLOAD,
        CommandKind.DISPATCH,
        CommandKind.DOWNLOAD,
        CommandKind.UPLOAD,
        CommandKind.COPY,
    ]
    (sync,) = (s.id for s in trace.syncs)
    return SimpleNamespace(
        trace=trace,
        first_upload=first_upload,
        dispatch=dispatch,
        download=download,
        upload=upload,
        copy=copy,
        sync=sync,
        ids=[first_upload, dispatch, download, upload, copy, sync],
    )


@pytest.fixture(scope="session")
def seed():
    """The seed under staging="submit": one STALE_UPLOAD, ``upload`` read host memory
    before ``download`` wrote it."""
    return _seed("submit")


@pytest.fixture(scope="session")
def seed_trace(seed):
    return seed.trace


@pytest.fixture(scope="session")
def execute_seed():
    """The seed under staging="execute": correct bytes, one LATENT_STALE_UPLOAD."""
    return _seed("execute")


@pytest.fixture
def open_page(browser):
    """Opens a static page (a path) in chromium at ``width`` px, once its views booted;
    ``page.errors`` collects its errors."""
    pages = []

    def open_(path: Path, width: int = 1280):
        page = browser.new_page(viewport={"width": width, "height": 900})
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        page.goto(path.as_uri())
        page.wait_for_selector(".lnb-root[data-ready='1']", timeout=20_000)
        page.errors = errors
        pages.append(page)
        return page

    yield open_
    for page in pages:
        page.close()
