"""Public names mean one thing each, and the lower layers import no higher one."""

from __future__ import annotations

import importlib
import json
import pkgutil
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


PUBLIC_API = [
    "AnalyzedTrace",
    "Buffer",
    "BufferView",
    "Comparison",
    "Device",
    "Event",
    "Hazard",
    "HazardKind",
    "IndirectDispatchBuffer",
    "Kernel",
    "LuisaNbError",
    "LuisaNbWarning",
    "Range",
    "Stream",
    "ViewableTrace",
    "__version__",
    "abs",
    "ceil",
    "clamp",
    "compare",
    "cos",
    "create_device",
    "default_device",
    "dispatch_id",
    "dispatch_size",
    "exp",
    "floor",
    "instrument_luisa",
    "kernel",
    "kernel_id",
    "last_trace",
    "load_ipython_extension",
    "load_trace",
    "log",
    "max",
    "min",
    "name",
    "pow",
    "range",
    "set_default_device",
    "show",
    "sin",
    "sqrt",
    "tan",
    "trace",
    "uninstrument_luisa",
    "unload_ipython_extension",
]


def test_dir_of_the_package_lists_exactly_the_public_api():
    assert dir(luisa_nb) == PUBLIC_API
    assert set(luisa_nb.__all__) == set(PUBLIC_API) - {
        "__version__",
        "abs",
        "max",
        "min",
        "pow",
        "range",
    }
    assert all(hasattr(luisa_nb, name) for name in PUBLIC_API)


def test_no_helper_of_the_package_module_leaks_into_its_namespace():
    for name in PUBLIC_API:  # public names load on first use
        getattr(luisa_nb, name)
    private = [
        name
        for name, value in vars(luisa_nb).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    ]
    assert sorted(private) == [name for name in PUBLIC_API if name != "__version__"]


def test_importing_the_luisa_layer_loads_no_analysis_view_or_notebook_module():
    """A luisa-python program (``import luisa_nb.luisa``) starts without the layers it
    does not use: they load when a public name of the package needs them. The typer and
    the code generators load with the first kernel that runs (a program that only defines
    kernels needs neither), Python mode with its first kernel, a trace's tables with the
    first trace, entry points of other backends when a device names one."""
    probe = "import json, sys, luisa_nb.luisa; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    unused = (
        "luisa_nb.analysis",
        "luisa_nb.views",
        "luisa_nb.widgets",
        "luisa_nb.ipython",
        "luisa_nb.kernels.python",
        "luisa_nb.kernels.typing",
        "luisa_nb.kernels.ir",
        "luisa_nb.kernels.c.emitter",
        "luisa_nb.kernels.autodiff",
        "luisa_nb.recording.trace",
        "IPython",
        "importlib.metadata",
    )
    assert [name for name in json.loads(done.stdout) if name.startswith(unused)] == []


def packages() -> list[types.ModuleType]:
    found = [luisa_nb]
    for info in pkgutil.walk_packages(luisa_nb.__path__, "luisa_nb."):
        if info.ispkg:
            found.append(importlib.import_module(info.name))
    return found


def test_no_package_attribute_hides_a_submodule_of_the_same_name():
    """``from luisa_nb.x import x`` in a package's ``__init__`` would make
    ``luisa_nb.x`` the function, and ``import luisa_nb.x`` then means two things."""
    hidden = []
    for package in packages():
        for info in pkgutil.iter_modules(package.__path__):
            value = vars(package).get(info.name)
            if value is not None and not isinstance(value, types.ModuleType):
                hidden.append(f"{package.__name__}.{info.name} is a {type(value).__name__}")
    assert hidden == [], "\n".join(hidden)


def test_the_walk_sees_every_package():
    names = {package.__name__ for package in packages()}
    assert {"luisa_nb", "luisa_nb.runtime", "luisa_nb.recording", "luisa_nb.testing"} <= names
