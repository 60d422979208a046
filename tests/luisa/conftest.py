import pytest

import luisa_nb.luisa as luisa

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
