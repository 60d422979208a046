"""The plugin is tested with pytester.

``pytest_plugins`` is only honoured in a top-level conftest, and this one is found while
collecting when the whole suite runs, so pytester is registered here instead.
"""

import pytest


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.has_plugin("pytester"):
        config.pluginmanager.import_plugin("pytester")
