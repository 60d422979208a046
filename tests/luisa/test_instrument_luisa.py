"""Real LuisaCompute under the debugger: lnb.instrument_luisa() traces luisa-python and
finds #143 on its real CPU backend. Each scenario runs in its own process, since
luisa-python initializes once per process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.luisa.running import require_real_luisa, run_python

PROGRAM = Path(__file__).parent / "programs" / "instrumented.py"
INDEX = [float(i) for i in range(4)]


def run(*arguments: str) -> list[dict]:
    require_real_luisa()
    output = run_python(str(PROGRAM), *arguments)
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    assert lines[-1] == {"restored": True}, "uninstrument_luisa() left a wrapper behind"
    return lines[:-1]


@pytest.mark.parametrize("shadow", ["--shadow", "--no-shadow"])
def test_the_seed_program_is_stale_on_real_luisa_and_says_so(shadow):
    [result] = run("seed", shadow)
    assert result["x"] == [123.0] * 4
    assert result["commands"] == 8  # the uploads of x and y, the five of #143, x.numpy()
    assert result["devices"] == ["luisa:cpu"], "named after the backend luisa.init() chose"
    [hazard] = result["hazards"]
    assert hazard["kind"] == "STALE_UPLOAD"
    assert "upload z <- z_data read z_data[0:1024]" in hazard["message"]
    assert hazard["staged"] == [123.0] * 4
    assert hazard["expected"] == [0.0, 1001.0, 2002.0, 3003.0]
    assert "luisa.synchronize()" in hazard["fix"], "luisa-python's own call"
    assert "stream.synchronize()" not in hazard["fix"] and "staging" not in hazard["fix"]


def test_real_luisa_commands_are_marked_as_not_timed_in_a_saved_trace():
    """luisa-python 0.3.7 reports no command times: its stream says so through a save and
    load, the Arrow table has no start or finish for its commands, and the timeline draws
    each list (the seed's two uploads, then the five commands of #143 and x.numpy()) as
    one block."""
    [result] = run("seed")
    times = result["times"]
    assert times["reported"] == [False]
    assert times["arrow"] == [False] and times["arrow_started"] == ["None"]
    assert times["lanes"] == [None, "times not reported by this runtime"]
    assert sum(times["blocks"]) == result["commands"] and len(times["blocks"]) >= 2


def test_a_trace_ending_before_execute_records_the_upload_as_pending():
    [result] = run("pending")
    assert result["api"] == "luisa"
    assert result["commands"] == 0 and result["pending"] == ["upload (a)"]
    assert result["later"] == 0, "the next trace does not take the pending upload in"
    assert result["warnings"] == [
        "the trace recorded no commands: 1 command was not executed: call "
        "luisa.synchronize() or execute() before the trace ends"
    ]


def test_up_down_up_in_one_list_is_stale():
    [result] = run("list")
    assert result["stale"]
    assert [h["kind"] for h in result["hazards"]] == ["STALE_UPLOAD"]


def test_image_copies_are_traced_with_their_shape():
    [result] = run("images")
    assert result["stale"]
    assert result["shapes"] == [[8, 16, 4], [8, 16, 4]]
    [hazard] = result["hazards"]
    assert hazard["kind"] == "STALE_UPLOAD"
    assert hazard["staged"] == [0, 0, 0, 0]
    assert hazard["expected"] != [0, 0, 0, 0]


def test_a_download_into_an_array_dropped_before_synchronize_is_a_real_use_after_free():
    [result] = run("released")
    assert result["kept"] == [0.0, 1.0, 2.0, 3.0]
    [hazard] = result["hazards"]
    assert hazard["kind"] == "HOST_USE_AFTER_FREE"
    assert "download a -> out" in hazard["message"]
    assert "in read_later) while the runtime still held it" in hazard["message"]
    assert "luisa-python keeps no reference to a download's array" in hazard["message"]


@pytest.mark.parametrize("shadow", ["--shadow", "--no-shadow"])
def test_runs_of_uploads_share_one_readback_and_record_what_each_sent(shadow):
    """Three rounds of (a <- h, b <- g), h written before the submission, then a <- g, a
    kernel on a and a <- g again: one readback per run of a buffer's uploads of one
    array, taken before another array's upload into it or a kernel; each upload sent
    the bytes at the submission (5.0 for h), as a readback after every upload shows."""
    [result] = run("runs", shadow)
    assert result["readbacks"] == ([3, 3, 1, 1] if shadow == "--shadow" else [])
    assert result["sent"] == [[5.0, 5.0], [2.0, 2.0]] * 3 + [[2.0, 2.0]] * 2
    assert result["device"] == [2.0, 2.0]
    hazards = result["hazards"]
    assert [h["kind"] for h in hazards] == ["HOST_WRITE_IN_FLIGHT"] * 3
    assert [h["message"].split(":")[0] for h in hazards] == [
        f"#{number} upload a <- h" for number in (1, 3, 5)
    ]
    assert all(h["staged"] == [5.0] * 4 and h["expected"] == INDEX for h in hazards)


@pytest.mark.parametrize("shadow", ["--shadow", "--no-shadow"])
def test_reuploads_of_an_array_written_in_place_capture_its_bytes_at_each_upload(shadow):
    [result] = run("rewrites", shadow)
    assert result["enqueued"] == [[0.0, 0.0], [1.0, 1.0], [7.0, 7.0], [2.0, 2.0]]
    assert result["device"] == [2.0, 2.0]


def test_a_synchronous_download_before_the_reupload_is_clean():
    [result] = run("sync")
    assert not result["stale"]
    assert result["hazards"] == []


@pytest.mark.parametrize("scenario", ["lists", "slow lists"])
def test_three_lists_without_a_sync_are_reported_by_what_happened(scenario):
    """Racy on real luisa: the re-upload is stale when its list is submitted before the
    download has run. "slow lists" puts a long kernel before the download, so that it
    usually is; each run must be reported as what happened to its bytes."""
    outcomes = set()
    for result in run(scenario):
        kinds = [h["kind"] for h in result["hazards"]]
        assert kinds == (["STALE_UPLOAD"] if result["stale"] else ["LATENT_STALE_UPLOAD"])
        outcomes.add(result["stale"])
    if scenario == "slow lists":
        assert True in outcomes, "the long kernel should make at least one run stale"


NOTEBOOK = r"""
import json
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config
import luisa_nb as lnb

config = Config()
config.HistoryManager.hist_file = ":memory:"
shell = InteractiveShell.instance(config=config)
shell.run_line_magic("load_ext", "luisa_nb")
shell.run_line_magic("luisa_device", "luisa:cpu")
shell.run_cell('''
import numpy as np
import luisa
n = 256
z = luisa.Buffer(n, float)
h1 = np.arange(n, dtype=np.float32)
h2 = np.zeros(n, np.float32)
''')
shell.run_cell_magic("luisa_trace", "", '''
z.copy_from(h1)
z.copy_to(h2, sync=False)
z.copy_from(h2)
''')
trace = lnb.last_trace()
print(json.dumps({
    "devices": sorted({info.device for info in trace.buffers.values()}),
    "names": [info.name for info in trace.buffers.values()],
    "kinds": [hazard.kind.value for hazard in trace.hazards],
}), flush=True)
"""


def test_a_notebook_cell_of_real_luisa_is_traced_with_luisa_device():
    require_real_luisa()
    # luisa-python logs through a Python callback in this shell; the process still exits
    result = json.loads(run_python("-c", NOTEBOOK, timeout=60).strip().splitlines()[-1])
    assert result == {"devices": ["luisa:cpu"], "names": ["z"], "kinds": ["STALE_UPLOAD"]}
