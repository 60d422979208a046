"""What the luisa_nb pytest plugin (:mod:`luisa_nb.pytest_plugin`) keeps and does: the
devices a session tests on, and the trace a test records."""

from luisa_nb.testing.devices import (
    DEFAULT_STAGING,
    DevicePool,
    DeviceSelection,
    SelectionError,
    SessionDevices,
    device_config,
)
from luisa_nb.testing.hazard_check import (
    TRACE_FILE_NAME,
    TracedTest,
    hazard_kinds,
    hazard_report,
    locals_at_return,
    unwanted_hazards,
)

__all__ = [
    "DEFAULT_STAGING",
    "TRACE_FILE_NAME",
    "DevicePool",
    "DeviceSelection",
    "SelectionError",
    "SessionDevices",
    "TracedTest",
    "device_config",
    "hazard_kinds",
    "hazard_report",
    "locals_at_return",
    "unwanted_hazards",
]
