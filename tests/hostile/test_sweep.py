"""A fixed sample of the hostile-input sweep, every area, in CI: each case must be clean.

The sample is :data:`SAMPLE_SIZE` cases drawn with :data:`SEED` (as
``python -m tests.hostile.sweep --cases 90 --seed 1`` draws them) plus one case of each
defect in :mod:`known_failures` that the draw missed. The cases that fail on today's code
are marked ``xfail(strict=True)`` with what is wrong; when a fix lands, its cases pass,
strict xfail fails, and the entry comes out of :data:`known_failures.KNOWN_FAILURES`.
All cases run once, on two workers, before the first test looks at its result.
"""

from __future__ import annotations

import pytest

from .cases import Case, generate, lookup
from .known_failures import KNOWN_FAILURES, REPRESENTATIVES
from .outcomes import CaseResult, Outcome
from .pool import run_cases
from .summary import table

SEED = 1
SAMPLE_SIZE = 90


def _chosen() -> list[Case]:
    drawn = generate(SEED, SAMPLE_SIZE)
    keys = {chosen.key for chosen in drawn}
    return drawn + [lookup(key) for key in REPRESENTATIVES if key not in keys]


CASES = _chosen()


@pytest.fixture(scope="module")
def results() -> dict[str, CaseResult]:
    done = run_cases(CASES, jobs=2)
    print(table(done))
    return {result.key: result for result in done}


def _param(chosen: Case) -> object:
    reason = KNOWN_FAILURES.get(chosen.key)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(chosen, id=chosen.key, marks=marks)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("chosen", [_param(chosen) for chosen in CASES])
def test_hostile_case_is_clean(results: dict[str, CaseResult], chosen: Case) -> None:
    result = results[chosen.key]
    assert result.outcome is Outcome.CLEAN, f"{result.outcome.value}: {result.detail}"


def test_the_sample_reaches_every_area() -> None:
    from .cases import AREAS

    assert {chosen.area for chosen in CASES} == set(AREAS)
    assert len({chosen.key for chosen in CASES}) == len(CASES)
