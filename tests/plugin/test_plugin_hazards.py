"""The luisa_trace fixture, the luisa_no_hazards marker, and traces saved on failure."""

import re
from pathlib import Path

import luisa_nb as lnb
from luisa_nb.analysis import HazardKind

SEED_TESTS = """
import numpy as np
import pytest

import luisa_nb as lnb

N = 1024


def seed_program(device):
    x = device.create_buffer(N, name="x")
    y = device.create_buffer(N, name="y")
    z = device.create_buffer(N, name="z")
    x.copy_from(np.arange(N, dtype=np.float32))
    y.copy_from(np.float32(1000.0) * np.arange(N, dtype=np.float32))

    @lnb.kernel
    def vecadd(buf_z):
        tid = lnb.dispatch_id().x
        buf_z.write(tid, x.read(tid) + y.read(tid))

    z_data = np.full(N, 123.0, np.float32)
    stream = device.default_stream
    stream.submit(
        [
            z.copy_from_async(z_data),
            vecadd.dispatch_async(N, z),
            z.copy_to_async(z_data),
            z.copy_from_async(z_data),
            z.copy_to_buffer_async(x),
        ]
    )
    stream.synchronize()


@pytest.mark.luisa_no_hazards
def test_clean(luisa_device):
    buffer = luisa_device.create_buffer(16)
    data = np.arange(16, dtype=np.float32)
    buffer.copy_from(data)
    luisa_device.synchronize()
    assert np.array_equal(buffer.numpy(), data)


@pytest.mark.luisa_no_hazards(kinds=["STALE_UPLOAD"])
def test_seed_stale(luisa_device):
    seed_program(luisa_device)


@pytest.mark.luisa_no_hazards
def test_seed_any(luisa_device):
    seed_program(luisa_device)
"""


def _saved_traces(output: str) -> list[Path]:
    return [Path(path) for path in re.findall(r"^trace saved to (\S+)$", output, re.MULTILINE)]


def test_marker_passes_clean_tests_and_fails_the_seed_with_hazards_in_words(pytester):
    pytester.makepyfile(test_seed=SEED_TESTS)
    result = pytester.runpytest_subprocess("--luisa-backend", "cpu", "-v")
    result.stdout.fnmatch_lines_random(
        [
            "*test_clean[[]cpu:execute[]] PASSED*",
            "*test_clean[[]cpu:submit[]] PASSED*",
            "*test_seed_stale[[]cpu:execute[]] PASSED*",
            "*test_seed_stale[[]cpu:submit[]] FAILED*",
            "*test_seed_any[[]cpu:execute[]] FAILED*",
            "*test_seed_any[[]cpu:submit[]] FAILED*",
        ]
    )
    result.assert_outcomes(passed=3, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*_ test_seed_stale[[]cpu:submit[]] _*",
            "luisa_no_hazards: the trace of this test has 1 hazard of kind STALE_UPLOAD:",
            "STALE_UPLOAD: #* upload z <- z_data read z_data[[]0:1024[]] * before "
            "#* download z -> z_data wrote it, so it sent the old bytes",
            "    fix: synchronize after #* before uploading, or use staging='execute'",
            "*- luisa_nb trace -*",
            "trace saved to *luisa-trace.lnbtrace",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*_ test_seed_any[[]cpu:execute[]] _*",
            "luisa_no_hazards: the trace of this test has 1 hazard:",
            "LATENT_STALE_UPLOAD: #* upload z <- z_data reads z_data[[]0:1024[]]*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*= luisa_nb traces of failed tests =*",
            "test_seed.py::test_seed_stale[[]cpu:submit[]]: *luisa-trace.lnbtrace",
        ]
    )
    saved = _saved_traces(result.stdout.str())
    assert len(saved) == 3 and len(set(saved)) == 3
    trace = lnb.load_trace(saved[0])
    assert [h.kind for h in trace.hazards] == [HazardKind.STALE_UPLOAD]
    assert [c.kind.value for c in trace.commands][-5:] == [
        "upload",
        "dispatch",
        "download",
        "upload",
        "copy",
    ]
    assert trace.metadata.capture == "full"


def test_luisa_trace_records_the_test_and_is_saved_when_it_fails(pytester):
    pytester.makepyfile(
        test_traced="""
        import numpy as np
        import pytest

        from luisa_nb.recording import recorder

        def test_records(luisa_trace, luisa_device):
            assert recorder.active_trace() is luisa_trace
            assert luisa_trace.metadata.capture == "full"
            host = np.zeros(8, np.float32)
            luisa_device.create_buffer(8).copy_to(host)
            assert len(luisa_trace.commands) == 1

        def test_fails(luisa_trace, luisa_device):
            host = np.zeros(8, np.float32)
            luisa_device.create_buffer(8).copy_to(host)
            assert host[0] == 1.0, "on purpose"

        def test_fails_untraced():
            assert False, "no trace here"

        @pytest.mark.luisa_no_hazards("NOT_A_KIND")
        def test_bad_kind():
            pass
        """
    )
    result = pytester.runpytest_subprocess(
        "--luisa-backend", "cpu", "--luisa-staging", "execute", "-rf"
    )
    result.assert_outcomes(passed=1, failed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: on purpose*",
            "*- luisa_nb trace -*",
            "trace saved to *luisa-trace.lnbtrace",
            "open it with luisa_nb.load_trace(path)",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*_ ERROR at setup of test_bad_kind _*",
            "luisa_no_hazards: 'NOT_A_KIND' is not a hazard kind; use some of STALE_UPLOAD*",
        ]
    )
    [saved] = _saved_traces(result.stdout.str())
    assert "test_fails" in saved.parent.name
    trace = lnb.load_trace(saved)
    [download] = trace.commands
    assert download.kind.value == "download"
    assert download.host.name == "host"
    [hazard] = trace.hazards  # the buffer was never written: zeros here, garbage on a GPU
    assert hazard.kind.value == "UNINITIALIZED_READ"
    assert hazard.command_ids == (download.id,)
    assert (hazard.device.offset, hazard.device.nbytes) == (0, 32)


def test_a_test_tracing_itself_conflicts_with_the_marker(pytester):
    pytester.makepyfile(
        test_nested="""
        import pytest
        import luisa_nb as lnb

        @pytest.mark.luisa_no_hazards
        def test_nested():
            with lnb.trace():
                pass
        """
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*a trace is already recording*"])
