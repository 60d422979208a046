"""Public names mean one thing each, and the lower layers import no higher one."""

from __future__ import annotations

import json
import subprocess
import sys
import types

import luisa_nb
import luisa_nb.recording as recording


def test_the_trace_function_and_the_recording_package_do_not_hide_each_other():
    assert isinstance(recording, types.ModuleType) and recording.Trace.__name__ == "Trace"
    assert callable(luisa_nb.trace) and not isinstance(luisa_nb.trace, types.ModuleType)
    with luisa_nb.trace() as trace:
        pass
    assert isinstance(trace, recording.Trace)


def test_the_recording_layer_loads_no_runtime_backend_or_analysis():
    probe = (
        "import json, sys, types\n"
        "package = types.ModuleType('luisa_nb')\n"
        f"package.__path__ = [{str(luisa_nb.__path__[0])!r}]\n"
        "sys.modules['luisa_nb'] = package\n"
        "import luisa_nb.recording, luisa_nb.recording.storage, luisa_nb.recording.chrome\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    higher = ("luisa_nb.runtime", "luisa_nb.backends", "luisa_nb.analysis", "luisa_nb.widgets")
    assert [name for name in loaded if name.startswith(higher)] == []
