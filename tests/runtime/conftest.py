import pytest

import luisa_nb as lnb


@pytest.fixture(params=["execute", "submit"])
def staging(request):
    return request.param


@pytest.fixture
def device(staging):
    return lnb.create_device("cpu", staging=staging)
