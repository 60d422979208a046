import pytest

import luisa_nb.luisa as luisa
from luisa_nb.kernels.rules import LUISA_RULES
from luisa_nb.luisa.functions import Func
from luisa_nb.runtime import Kernel

DEVICES = ["cpu:execute", "cpu:submit", "dx", "metal"]


@pytest.fixture(params=DEVICES)
def device_name(request):
    """A luisa session on each backend, under each policy for ``cpu``."""
    luisa.del_device()
    luisa.init(request.param)
    yield request.param
    luisa.del_device()


@pytest.fixture
def fresh_session():
    """No luisa session before or after the test."""
    luisa.del_device()
    yield
    luisa.del_device()


@pytest.fixture(params=["c", "python"])
def kernel_mode(request, monkeypatch):
    """``luisa.func`` kernels compiled to C, or run in Python mode."""
    if request.param == "python":

        def python_mode(self, function):
            Kernel.__init__(self, function, mode="python", rules=LUISA_RULES)

        monkeypatch.setattr(Func, "__init__", python_mode)
    return request.param
