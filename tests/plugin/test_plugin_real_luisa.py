"""`--luisa-backend luisa:cpu`: the plugin's traces record real luisa-python, so that
`@pytest.mark.luisa_no_hazards` proves a luisa-python program free of the bug on
LuisaCompute itself."""

from __future__ import annotations

from tests.luisa.running import environment, require_real_luisa

PROGRAM_TESTS = """
import numpy as np
import pytest

import luisa


def transfers(sync):
    a, b = luisa.Buffer(64, float), luisa.Buffer(64, float)
    h1 = np.arange(64, dtype=np.float32)
    h2 = np.zeros(64, np.float32)
    a.copy_from(h1)
    a.copy_to(h2, sync=sync)
    b.copy_from(h2)


@pytest.mark.luisa_no_hazards
def test_download_then_upload_in_one_list(luisa_trace):
    transfers(sync=False)


@pytest.mark.luisa_no_hazards
def test_synchronized_download(luisa_trace):
    transfers(sync=True)


def test_on_a_luisa_nb_device(luisa_device):
    pass
"""


def test_real_luisa_under_the_plugin(pytester, monkeypatch):
    require_real_luisa()
    for name, value in environment().items():
        monkeypatch.setenv(name, value)
    pytester.makepyfile(test_real=PROGRAM_TESTS)
    result = pytester.runpytest_subprocess("--luisa-backend", "luisa:cpu", "-rs")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*traces record real luisa-python on cpu*",
            "*luisa_no_hazards: the trace of this test has 1 hazard*",
            "*STALE_UPLOAD*upload b <- h2*",
        ]
    )


def test_one_real_luisa_backend_per_session(pytester):
    pytester.makepyfile(test_real=PROGRAM_TESTS)
    result = pytester.runpytest_subprocess(
        "--luisa-backend", "luisa:cpu", "--luisa-backend", "luisa:cuda"
    )
    result.stderr.fnmatch_lines(["*initializes one backend per process*"])
    assert result.ret != 0
