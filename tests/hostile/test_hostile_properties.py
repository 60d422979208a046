"""Hostile use drawn with Hypothesis: callbacks that call back into the runtime, Ctrl-C in
huge dispatches, and hostile names through save, load and the report.

Each example runs as a case of the hostile sweep in a worker process (:mod:`.pool`), so a
deadlock or a crash fails one example, within its time limit, instead of the test run.
The properties that fail on today's code are ``xfail(strict=True)``, with what is wrong;
they stop at their first failing example (no shrinking: each is a time limit long).

``LUISA_NB_HYPOTHESIS_EXAMPLES=N`` runs ``N`` examples per test, drawn at random, instead of
a fixed few (as in ``tests/runtime/test_random_programs.py``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from .areas import kernels, streams, trace_files
from .cases import Case, case
from .known_failures import CALLBACK_WAITS, HUGE_DISPATCH, SCRIPT_STATES, SURROGATES
from .outcomes import Outcome
from .pool import WorkerPool
from .values import NAME_FRAGMENTS

EXAMPLES = int(os.environ.get("LUISA_NB_HYPOTHESIS_EXAMPLES", "0")) or None
LOCAL_BACKENDS = ("cpu", "dx", "metal")
"""Backends of the Ctrl-C properties: Ctrl-C of a remote kernel is a case of the sweep."""
NAMED = ("buffer", "host array", "range", "stream")


def _settings(examples: int, *, shrink: bool = True) -> settings:
    phases = [Phase.explicit, Phase.generate] + ([Phase.shrink] if shrink else [])
    return settings(
        max_examples=EXAMPLES or examples,
        derandomize=EXAMPLES is None,
        database=None,
        deadline=None,
        phases=phases,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    with WorkerPool(jobs=1) as workers:
        yield workers


def _assert_clean(pool: WorkerPool, chosen: Case) -> None:
    (result,) = pool.run([chosen])
    assert result.outcome is Outcome.CLEAN, f"{result.key}: {result.outcome.value}: {result.detail}"


# -- callbacks that call back into the runtime --------------------------------------------

backends = st.sampled_from(("cpu", "dx", "metal", "remote"))


@pytest.mark.timeout(300)
def test_callbacks_may_submit_query_and_synchronize_other_streams(pool: WorkerPool) -> None:
    @_settings(15)
    @given(
        backend=backends,
        calls=st.lists(st.sampled_from(streams.CALLS_IN_CALLBACKS), min_size=1, max_size=5),
    )
    def check(backend: str, calls: list[str]) -> None:
        title = f"callbacks calling {calls} on {backend}"
        _assert_clean(pool, case(streams.callback_chain, title, backend, tuple(calls)))

    check()


@pytest.mark.timeout(300)
@pytest.mark.xfail(strict=True, reason=CALLBACK_WAITS)
def test_a_callback_waiting_for_its_own_stream_gets_a_clean_error(pool: WorkerPool) -> None:
    @_settings(10, shrink=False)
    @given(backend=backends, call=st.sampled_from(streams.WAITS_IN_CALLBACKS))
    def check(backend: str, call: str) -> None:
        chosen = case(streams.wait_in_callback, f"{call} in a callback on {backend}", backend,
                      call, timeout=5, isolated=True)  # fmt: skip
        _assert_clean(pool, chosen)

    check()


# -- Ctrl-C in huge dispatches ------------------------------------------------------------

huge_dispatches = st.tuples(
    st.integers(2**20, 2**31 - 1), st.integers(2**20, 2**31 - 1), st.integers(1, 8)
)
"""At least 2**40 threads: hours of compiled kernel."""
delays = st.floats(0.05, 0.6)


def _interrupt_case(backend: str, mode: str, dims: tuple, delay: float, timeout: float) -> Case:
    title = f"Ctrl-C {delay:.2f} s into a dispatch of {dims} ({mode}) on {backend}"
    return case(kernels.interrupt_kernel, title, backend, "huge dispatch", mode, dims, delay,
                timeout=timeout, isolated=True)  # fmt: skip


@pytest.mark.timeout(300)
def test_ctrl_c_stops_a_huge_dispatch_in_python_mode(pool: WorkerPool) -> None:
    @_settings(5)
    @given(backend=st.sampled_from(LOCAL_BACKENDS), dims=huge_dispatches, delay=delays)
    def check(backend: str, dims: tuple, delay: float) -> None:
        _assert_clean(pool, _interrupt_case(backend, "python", dims, delay, timeout=10))

    check()


@pytest.mark.timeout(300)
@pytest.mark.xfail(strict=True, reason=HUGE_DISPATCH)
def test_ctrl_c_stops_a_huge_compiled_dispatch(pool: WorkerPool) -> None:
    @_settings(8, shrink=False)
    @given(backend=st.sampled_from(LOCAL_BACKENDS), dims=huge_dispatches, delay=delays)
    def check(backend: str, dims: tuple, delay: float) -> None:
        _assert_clean(pool, _interrupt_case(backend, "c", dims, delay, timeout=8))

    check()


# -- hostile names ------------------------------------------------------------------------


def _has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(character) <= 0xDFFF for character in text)


characters = st.characters(blacklist_categories=("Cs",))
fragments = [fragment for fragment in NAME_FRAGMENTS if not _has_surrogate(fragment)]
names = st.lists(
    st.sampled_from(fragments) | st.text(characters, max_size=6), min_size=1, max_size=8
).map("".join)
"""Names of hostile fragments and any characters but surrogates."""


def _name_case(named: str, name: str) -> Case:
    return case(trace_files.hostile_name, f"a {named} named {name!r:.60}", named, name)


@pytest.mark.timeout(300)
def test_names_come_back_from_a_file_and_show_as_text(pool: WorkerPool) -> None:
    @_settings(20)
    @given(named=st.sampled_from(NAMED), name=names.filter(lambda n: n and "<!--" not in n))
    def check(named: str, name: str) -> None:
        _assert_clean(pool, _name_case(named, name))

    check()


@pytest.mark.timeout(300)
@pytest.mark.xfail(strict=True, reason=SCRIPT_STATES)
def test_names_that_open_a_comment_and_a_script_show_as_text(pool: WorkerPool) -> None:
    opener = st.sampled_from(["<!--<script>", "<!--<script ", "<!-- <SCRIPT/", "<!--<script\t"])

    @_settings(5, shrink=False)
    @given(named=st.sampled_from(NAMED), parts=st.tuples(names, opener, names))
    def check(named: str, parts: tuple[str, str, str]) -> None:
        _assert_clean(pool, _name_case(named, "".join(parts)))

    check()


@pytest.mark.timeout(300)
@pytest.mark.xfail(strict=True, reason=SURROGATES)
def test_names_with_lone_surrogates_show_as_text(pool: WorkerPool) -> None:
    surrogate = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)

    @_settings(5, shrink=False)
    @given(named=st.sampled_from(NAMED), parts=st.tuples(names, surrogate, names))
    def check(named: str, parts: tuple[str, str, str]) -> None:
        _assert_clean(pool, _name_case(named, "".join(parts)))

    check()
