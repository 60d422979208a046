"""The conformance suite, run as a user runs it: on cpu, and on backends another package
registers through the entry point group ``luisa_nb.backends``, one of them with
LuisaCompute #143's bug on purpose."""

import pytest

TEST_BACKENDS = '''
"""Backends registered by a distribution that exists only in this test's directory."""

from luisa_nb.backends.cpu import CpuBackend
from luisa_nb.recording import CommandKind


class UploadsFirstBackend(CpuBackend):
    """#143 on purpose: it claims to stage uploads in stream order (default staging
    "execute"), but runs each command list's uploads before its other commands, so an
    upload reads host memory before the downloads listed ahead of it have written it."""

    name = "uploads_first"
    default_staging = "execute"

    def schedule(self, commands):
        uploads = [c for c in commands if c.kind is CommandKind.UPLOAD]
        return uploads + [c for c in commands if c.kind is not CommandKind.UPLOAD]


class FencedBackend(CpuBackend):
    """A correct backend that reads back after the fence from 4 KiB of staging memory."""

    name = "fenced"
    readback = "fence"
    staging_capacity = 4096
'''

ENTRY_POINTS = """\
[luisa_nb.backends]
uploads_first = lnb_test_backends:UploadsFirstBackend
fenced = lnb_test_backends:FencedBackend
"""


@pytest.fixture
def test_backends(pytester):
    """Install the distribution ``lnb-test-backends`` into the pytester directory, which
    ``runpytest_subprocess`` puts on ``PYTHONPATH``: a module and a ``.dist-info`` folder
    whose ``entry_points.txt`` importlib.metadata reads."""
    pytester.makepyfile(lnb_test_backends=TEST_BACKENDS)
    info = pytester.mkdir("lnb_test_backends-1.0.dist-info")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lnb-test-backends\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return pytester


def test_the_suite_passes_on_cpu(pytester):
    result = pytester.runpytest_subprocess(
        "--pyargs", "luisa_nb.conformance", "--luisa-backend", "cpu", "-q", "-rs"
    )
    result.assert_outcomes(passed=436, skipped=4)
    result.stdout.fnmatch_lines(["*backend 'cpu' has unbounded staging memory*"])


def test_a_correct_backend_from_an_entry_point_passes_with_finite_staging(test_backends):
    result = test_backends.runpytest_subprocess(
        "--pyargs", "luisa_nb.conformance", "--luisa-backend", "fenced", "-q"
    )
    result.assert_outcomes(passed=440)


def test_a_backend_with_the_bug_fails_naming_the_stale_upload(test_backends):
    result = test_backends.runpytest_subprocess(
        "--pyargs", "luisa_nb.conformance", "--luisa-backend", "uploads_first", "-q"
    )
    outcomes = result.parseoutcomes()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert outcomes["failed"] > 100
    result.stdout.fnmatch_lines(
        [
            "*_ test_program[[]uploads_first:execute-copy_only[]] _*",
            "conformance program 'copy_only' on backend 'uploads_first' (staging='execute'): "
            "2 problem(s)",
            "- #* upload b <- h2 went stale: 64 of 64 elements differ from what stream order "
            "says it sends (indices 0, 1, 2, 3, 4, 5, ...: sent [[]*[]], expected [[]*[]]), under "
            "staging='execute' where every upload must send what stream order says; the "
            "analysis says:",
            "    STALE_UPLOAD: #* upload b <- h2 read h2[[]0:64[]] * before #* download a -> h2 "
            "wrote it, so it sent the old bytes*",
            "    fix: *",
            "- buffer 'b' differs from stream order at 64 of 64 elements (indices 0, 1, 2, *",
            "the program:",
            "  1. submit to main: [[]upload a[[]0:64[]] <- h1[[]0:64[]], download a[[]0:64[]] -> "
            "h2[[]0:64[]], upload b[[]0:64[]] <- h2[[]0:64[]][]]",
        ]
    )
    result.stdout.fnmatch_lines(
        ["FAILED *test_conformance_seed.py::test_seed[[]uploads_first:execute[]] - *"]
    )
