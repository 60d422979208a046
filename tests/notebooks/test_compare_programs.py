"""``compare(program, configs)``: configurations, differences, and the side-by-side view."""

from __future__ import annotations

import math

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.analysis import HazardKind
from luisa_nb.analysis.comparison import Run, diff_arrays
from luisa_nb.comparing import ViewableComparison, compare, parse_configs, using_device
from luisa_nb.errors import ConfigurationError, InvalidArgumentError, LuisaNbError
from luisa_nb.runtime import DeviceConfig
from luisa_nb.seed import expected_rows, run_seed
from luisa_nb.views.theme import MARK_BG


def seed_program(device):
    run = run_seed(device)  # records its own trace
    return {"z_data": run.z_data, "x": run.x}


def test_compare_the_seed_program_across_policies():
    configs = ["cpu:execute", "cpu:submit", "dx:submit", "metal"]
    comparison = compare(seed_program, configs, trace=False)
    assert comparison.configs == ["cpu:execute", "cpu:submit", "dx:submit", "metal"]
    for config in ("cpu:submit", "dx:submit", "metal"):
        x = comparison.difference("x", config)
        assert (x.equal, x.differing, x.size) == (False, 1024, 1024)
        assert x.first_indices == tuple((i,) for i in range(8))
        assert x.max_abs_error == pytest.approx(float(expected_rows()[-1]) - 123.0)
        assert comparison.difference("z_data", config).equal
    np.testing.assert_array_equal(comparison.run("cpu:execute").arrays["x"], expected_rows())
    assert not comparison.equal
    assert comparison.run("metal").device["staging"] == "submit"


def test_compare_traces_each_run_and_names_arrays_after_the_dict():
    def program(device):
        buffer = device.create_buffer(16, np.int32)
        host = np.arange(16, dtype=np.int32)
        buffer.copy_from(host)
        return {"device_copy": buffer, "source": host}

    comparison = compare(program, ["cpu:execute", "cpu:submit"])
    assert comparison.equal
    trace = comparison.run("cpu:submit").trace
    assert trace.command(trace.commands[0].id).host.name == "source"
    assert [info.name for info in trace.buffers.values()] == ["device_copy"]
    assert trace.hazards == []


def test_compare_makes_each_device_the_default_and_restores_it():
    before = lnb.default_device()
    seen = []

    def program(device):
        seen.append((lnb.default_device() is device, device.name, device.staging))
        return {}

    compare(program, ["cpu:execute", "dx:submit"])
    assert seen == [(True, "cpu", "execute"), (True, "dx", "submit")]
    assert lnb.default_device() is before


def test_compare_checks_what_the_program_returns():
    with pytest.raises(InvalidArgumentError, match="return a dict"):
        compare(lambda device: [1, 2], ["cpu:execute", "cpu:submit"])
    with pytest.raises(InvalidArgumentError, match="'rows' is a list"):
        compare(lambda device: {"rows": [1, 2]}, ["cpu:execute", "cpu:submit"])


REMOTE = (("address", "127.0.0.1:5555"),)


@pytest.mark.parametrize(
    ("text", "expected", "label"),
    [
        ("cpu:submit", DeviceConfig("cpu", "submit"), "cpu:submit"),
        (" dx:execute ", DeviceConfig("dx", "execute"), "dx:execute"),
        ("metal", DeviceConfig("metal", None), "metal"),
        (
            "remote://127.0.0.1:5555",
            DeviceConfig("remote", None, options=REMOTE),
            "remote://127.0.0.1:5555",
        ),
        (
            "remote://127.0.0.1:5555:submit",
            DeviceConfig("remote", "submit", options=REMOTE),
            "remote://127.0.0.1:5555:submit",
        ),
    ],
)
def test_compare_parses_configurations_as_device_configs(text, expected, label):
    config = parse_configs([text, "cpu"])[0]
    assert (config, config.label) == (expected, label)


def test_compare_takes_device_configs_with_options():
    token = DeviceConfig.parse("remote://127.0.0.1:5555", token="secret")
    configs = parse_configs([token, "cpu"])
    assert configs[0] == token and configs[0].option_dict["token"] == "secret"
    assert configs[0].label == "remote://127.0.0.1:5555"  # the token stays out of labels


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cpu:sumbit", "'sumbit' is not a staging policy; did you mean cpu:submit?"),
        ("cpu:later", "'later' is not a staging policy. Use BACKEND, BACKEND:submit or"),
        ("cdu:submit", "configuration 'cdu:submit': no backend named 'cdu'; did you mean 'cpu'?"),
        (":submit", "a device name is empty; use e.g. 'cpu' or 'cpu:submit'"),
        (" ", "a device name is empty"),
        (3, "a device is named by text such as 'cpu' or 'cpu:submit', got int 3"),
    ],
)
def test_compare_rejects_bad_configurations(text, message):
    with pytest.raises(ConfigurationError) as raised:
        parse_configs([text, "cpu"])
    assert message in str(raised.value)
    assert isinstance(raised.value, LuisaNbError) and isinstance(raised.value, ValueError)


def test_compare_needs_two_distinct_configurations():
    with pytest.raises(ConfigurationError, match="two or more"):
        parse_configs(["cpu:submit"])
    with pytest.raises(ConfigurationError, match="'cpu:submit' appears more than once"):
        parse_configs(["cpu:submit", "cpu:execute", "cpu:submit"])
    assert [c.label for c in parse_configs("cpu:execute dx")] == ["cpu:execute", "dx"]


def test_compare_differences_of_floats_ints_and_shapes():
    configs = ("a", "b")
    nan = np.array([1.0, np.nan, 3.0], np.float32)
    assert diff_arrays("v", nan, nan.copy(), configs).equal
    grid = np.zeros((2, 3), np.int32)
    changed = grid.copy()
    changed[1, 2] = 5
    difference = diff_arrays("grid", grid, changed, configs)
    assert (difference.differing, difference.first_indices) == (1, ((1, 2),))
    assert difference.max_abs_error == 5.0
    assert math.isinf(difference.max_relative_error)  # the reference is 0 there
    relative = diff_arrays("r", np.array([2.0, 4.0]), np.array([3.0, 4.0]), configs)
    assert relative.max_relative_error == pytest.approx(0.5)
    shapes = diff_arrays("s", np.zeros(3), np.zeros(4), configs)
    assert not shapes.equal and shapes.note == "float64[3] under a, float64[4] under b"
    missing = diff_arrays("m", np.zeros(3), None, configs)
    assert not missing.equal and missing.note == "missing under b"
    assert "2 of 2" not in str(relative) and "1 of 2 elements differ" in str(relative)


def test_compare_html_marks_differing_values_side_by_side():
    reference = np.arange(6, dtype=np.float32)
    other = reference.copy()
    other[[1, 4]] = -1.0
    comparison = ViewableComparison(
        [
            Run("cpu:execute", {"x<y>": reference, "same": reference}),
            Run("cpu:submit", {"x<y>": other, "same": reference}),
        ]
    )
    page = comparison._repr_html_()
    assert page.count(f"background:{MARK_BG.css()}") == 2  # the two differing values
    assert "x&lt;y&gt;" in page and "x<y>" not in page
    assert "2 of 6 differ" in page
    assert ">cpu:execute</th>" in page and ">cpu:submit</th>" in page
    assert "not traced" in page
    assert "x<y> [cpu:submit vs cpu:execute]: 2 of 6 elements differ (first at 1, 4)" in repr(
        comparison
    )


def test_compare_html_lists_each_runs_hazards():
    def program(device):
        host = np.zeros(64, np.float32)
        source = np.arange(64, dtype=np.float32)
        a = device.create_buffer(64, np.float32)
        b = device.create_buffer(64, np.float32)
        device.default_stream.submit(
            [a.copy_from_async(source), a.copy_to_async(host), b.copy_from_async(host)]
        )
        return {"b": b, "host": host}

    comparison = compare(program, ["cpu:execute", "cpu:submit"])
    page = comparison._repr_html_()
    assert ">LATENT_STALE_UPLOAD</span>" in page and ">STALE_UPLOAD</span>" in page
    assert [h.kind for h in comparison.run("cpu:submit").trace.hazards] == [HazardKind.STALE_UPLOAD]


def test_compare_using_device_restores_the_default_after_an_error():
    before = lnb.default_device()
    other = lnb.create_device("cpu", staging="submit")
    with pytest.raises(RuntimeError), using_device(other):
        assert lnb.default_device() is other
        raise RuntimeError
    assert lnb.default_device() is before
