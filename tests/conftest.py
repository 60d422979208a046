import pytest


@pytest.fixture(autouse=True, scope="session")
def _kernel_cache(tmp_path_factory):
    """Build kernels into a cache folder of this test session, not the user's cache."""
    patch = pytest.MonkeyPatch()
    patch.setenv("LUISA_NB_CACHE_DIR", str(tmp_path_factory.mktemp("kernel-cache")))
    yield
    patch.undo()
