import pytest


@pytest.fixture(autouse=True, scope="session")
def _kernel_cache(tmp_path_factory):
    """Build kernels into a cache folder of this test session, not the user's cache."""
    patch = pytest.MonkeyPatch()
    patch.setenv("LUISA_NB_CACHE_DIR", str(tmp_path_factory.mktemp("kernel-cache")))
    yield
    patch.undo()


@pytest.fixture(scope="module")
def browser():
    """Headless Debian chromium, one per test module; skips with the reason where it
    cannot run."""
    from helpers.browser import launch_chromium, missing_browser_reason

    if reason := missing_browser_reason():
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def submit_device():
    """A ``cpu:submit`` device, shared by a module's tests: uploads read the host at submit."""
    import luisa_nb as lnb

    made = lnb.create_device("cpu:submit")
    yield made
    made.close()
