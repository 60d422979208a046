"""A real IPython shell with the luisa_nb extension loaded, and the ``browser`` marker."""

from __future__ import annotations

import pytest
from notebook_support import EXTENSION, Shell

import luisa_nb


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "browser: drives Debian chromium through Playwright against JupyterLab "
        "(deselect with -m 'not browser')",
    )


@pytest.fixture
def ipython():
    """A real ``InteractiveShell`` with the extension loaded; unloaded afterwards, and the
    default device restored."""
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    previous = luisa_nb.default_device()
    shell.run_line_magic("load_ext", EXTENSION)
    try:
        yield Shell(shell)
    finally:
        shell.run_line_magic("unload_ext", EXTENSION)
        luisa_nb.set_default_device(previous)
