"""Options of the luisa_nb pytest plugin: fixture ids, defaults, narrowing, usage errors."""

import pytest

from luisa_nb.backends import available_backends

DEVICE_TEST = """
def test_x(luisa_device):
    assert luisa_device.staging in ("execute", "submit")
"""


def test_default_runs_every_available_backend_under_both_policies(pytester):
    pytester.makepyfile(test_ids=DEVICE_TEST)
    result = pytester.runpytest_subprocess("--collect-only", "-q")
    expected = [
        f"test_ids.py::test_x[[]{backend}:{staging}[]]"
        for backend in available_backends()
        for staging in ("execute", "submit")
    ]
    result.stdout.fnmatch_lines(expected, consecutive=True)
    result.stdout.fnmatch_lines([f"{len(expected)} tests collected*"])


def test_options_narrow_the_devices_and_show_in_the_header(pytester):
    pytester.makepyfile(test_ids=DEVICE_TEST)
    result = pytester.runpytest_subprocess(
        "-v", "--luisa-backend", "cpu", "--luisa-staging", "submit"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["luisa_nb: backends cpu; staging submit", "test_ids.py::test_x[[]cpu:submit[]] PASSED*"]
    )
    result.stdout.no_fnmatch_line("*cpu:execute*")


def test_repeated_options_and_ini_defaults(pytester):
    pytester.makeini("[pytest]\nluisa_backends = cpu\nluisa_staging = execute\n")
    pytester.makepyfile(test_ids=DEVICE_TEST)
    result = pytester.runpytest_subprocess("-v")
    result.stdout.fnmatch_lines(["test_ids.py::test_x[[]cpu:execute[]] PASSED*"])
    result.assert_outcomes(passed=1)
    result = pytester.runpytest_subprocess(
        "-v", "--luisa-staging", "submit", "--luisa-staging", "execute"
    )
    result.stdout.fnmatch_lines(
        ["*test_x[[]cpu:submit[]] PASSED*", "*test_x[[]cpu:execute[]] PASSED*"]
    )


def test_a_test_can_parametrize_the_device_itself(pytester):
    pytester.makepyfile(
        test_own="""
        import pytest

        @pytest.mark.parametrize("luisa_device", ["cpu:submit"], indirect=True)
        def test_own(luisa_device):
            assert (luisa_device.name, luisa_device.staging) == ("cpu", "submit")
        """
    )
    result = pytester.runpytest_subprocess("-v")
    result.stdout.fnmatch_lines(["*test_own[[]cpu:submit[]] PASSED*"])
    result.assert_outcomes(passed=1)


def test_a_backend_named_with_a_policy_runs_under_that_policy_only(pytester):
    pytester.makepyfile(test_ids=DEVICE_TEST)
    result = pytester.runpytest_subprocess(
        "-v", "--luisa-backend", "cpu:submit", "--luisa-backend", "dx"
    )
    result.stdout.fnmatch_lines(
        [
            "luisa_nb: backends cpu:submit, dx; staging execute, submit",
            "*test_x[[]cpu:submit[]] PASSED*",
            "*test_x[[]dx:execute[]] PASSED*",
            "*test_x[[]dx:submit[]] PASSED*",
        ]
    )
    result.assert_outcomes(passed=3)


def test_a_device_parameter_is_read_as_device_config_reads_it(pytester):
    pytester.makepyfile(
        test_own="""
        import pytest

        from luisa_nb.runtime import DeviceConfig

        @pytest.mark.parametrize(
            "luisa_device", [("dx", "submit"), DeviceConfig.parse("metal:execute")], indirect=True
        )
        def test_own(luisa_device):
            assert luisa_device.name in ("dx", "metal")

        @pytest.mark.parametrize("luisa_device", ["cpu-submit"], indirect=True)
        def test_old_form(luisa_device):
            pass
        """
    )
    result = pytester.runpytest_subprocess("-v")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        ["*luisa_device parameter 'cpu-submit': no backend named 'cpu-submit'*'cpu:submit'*"]
    )


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ("nosuch", "*--luisa-backend 'nosuch': no backend named 'nosuch'. Available: cpu, *"),
        ("cpux", "*--luisa-backend 'cpux': no backend named 'cpux'; did you mean 'cpu'? *"),
    ],
)
def test_unknown_backend_is_a_usage_error_naming_the_available_ones(pytester, argument, message):
    pytester.makepyfile(test_ids=DEVICE_TEST)
    result = pytester.runpytest_subprocess("--luisa-backend", argument)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message.lstrip('*')}"])


def test_unknown_staging_policy_is_a_usage_error(pytester):
    result = pytester.runpytest_subprocess("--luisa-staging", "later")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*argument --luisa-staging: invalid choice: 'later'*"])


def test_help_shows_the_option_group_and_defaults(pytester):
    result = pytester.runpytest_subprocess("--help")
    words = " ".join(result.stdout.str().split())  # help text wraps with the terminal
    assert "luisa_nb devices, traces and hazard checks: --luisa-backend=NAME" in words
    assert "(default: every available backend, or the ini option luisa_backends)" in words
    assert "--luisa-staging=POLICY staging policy of luisa_device: execute or submit" in words
    assert "(default: execute and submit, or the ini option luisa_staging)" in words
    assert "luisa_backends (args): default of --luisa-backend" in words
