"""Traces for the widget tests: the seed program (LuisaCompute #143) run under both
staging policies. Record ids come from process-wide counters, so tests name records
through these fixtures, never by number."""

from __future__ import annotations

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
