"""Which devices a test session runs on, and the devices themselves.

The pytest plugin turns ``--luisa-backend`` and ``--luisa-staging`` into a
:class:`DeviceSelection`; tests that ask for ``luisa_device`` run once per
:class:`~luisa_nb.runtime.DeviceConfig` of it (ids are the configuration's label, e.g.
``cpu:submit``), on devices a :class:`DevicePool` creates once per session.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from luisa_nb.backends import available_backends
from luisa_nb.errors import BackendNotFoundError, ConfigurationError
from luisa_nb.runtime import Device, DeviceConfig, StagingPolicy
from luisa_nb.runtime.real_luisa import real_luisa_backend

DEFAULT_STAGING = (StagingPolicy.EXECUTE, StagingPolicy.SUBMIT)


class SelectionError(ValueError):
    """A backend or staging policy asked for on the command line does not exist."""


def device_config(value: object) -> DeviceConfig:
    """The configuration of one ``luisa_device`` parameter: a :class:`DeviceConfig`, text
    such as ``"cpu:submit"`` or a ``("cpu", "submit")`` pair (see :meth:`DeviceConfig.parse`)."""
    try:
        return DeviceConfig.parse(value)
    except (ConfigurationError, BackendNotFoundError) as error:
        reason = str(error) if str(error).endswith((".", "?")) else f"{error}."
        raise SelectionError(
            f"luisa_device parameter {value!r}: {reason} Name a device as BACKEND:STAGING "
            "(e.g. 'cpu:submit'), a (backend, staging) pair or a DeviceConfig"
        ) from None


def _unique(values: Sequence[Any]) -> list[Any]:
    return list(dict.fromkeys(values))


def check_backends(names: Sequence[str]) -> list[DeviceConfig]:
    """The configuration of each of ``names`` (parsed by :meth:`DeviceConfig.parse`, so
    ``cpu`` and ``cpu:submit`` both work), without repeats; an unknown backend's error is
    the registry's own (it offers "did you mean" and lists the backends)."""
    configs = []
    for name in names:
        try:
            configs.append(DeviceConfig.parse(name))
        except (ConfigurationError, BackendNotFoundError) as error:
            raise SelectionError(f"--luisa-backend {name!r}: {error}") from None
    return _unique(configs)


def check_stagings(policies: Sequence[str]) -> list[StagingPolicy]:
    """Each of ``policies`` as a :class:`StagingPolicy`, without repeats."""
    try:
        return _unique([StagingPolicy.parse(policy) for policy in policies])
    except ConfigurationError as error:
        raise SelectionError(f"--luisa-staging: {error}") from None


class DeviceSelection:
    """The devices of a session: each backend asked for (``cpu``, or ``cpu:submit`` for
    one policy only) under each staging policy asked for. Backends asked for by name are
    checked at once; the default, every available backend, is found on first use."""

    def __init__(self, backends: Sequence[str] | None, stagings: Sequence[str] | None) -> None:
        names = list(backends or ())
        real = _unique([backend for name in names if (backend := real_luisa_backend(name))])
        if len(real) > 1:
            raise SelectionError(
                f"--luisa-backend names real luisa-python on {', '.join(real)}; luisa-python "
                "initializes one backend per process, so name one luisa:BACKEND"
            )
        self.real_luisa: str | None = real[0] if real else None
        """The backend of real luisa-python that traces record (``luisa:cpu``), if any."""
        names = [name for name in names if real_luisa_backend(name) is None]
        self._backends = check_backends(names) if names else ([] if real else None)
        self.stagings = check_stagings(stagings) if stagings else list(DEFAULT_STAGING)

    @property
    def backends(self) -> list[DeviceConfig]:
        if self._backends is None:
            self._backends = [DeviceConfig.parse(name) for name in available_backends()]
        return self._backends

    def params(self) -> list[DeviceConfig]:
        """One configuration per device; a backend named with a policy keeps that one."""
        configs = []
        for backend in self.backends:
            if backend.staging is not None:
                configs.append(backend)
            else:
                configs.extend(DeviceConfig.parse(backend, staging=s) for s in self.stagings)
        return _unique(configs)

    def describe(self) -> str:
        if self._backends is None:
            backends = "every available one"
        else:
            backends = ", ".join(config.label for config in self._backends) or "none"
        real = f"; traces record real luisa-python on {self.real_luisa}" if self.real_luisa else ""
        return f"backends {backends}; staging {', '.join(map(str, self.stagings))}{real}"


class DevicePool:
    """One device per configuration, created when first asked for."""

    def __init__(self) -> None:
        self._devices: dict[DeviceConfig, Device] = {}

    def get(self, config: DeviceConfig) -> Device:
        device = self._devices.get(config)
        if device is None:
            device = self._devices[config] = config.create()
        return device

    @staticmethod
    def settle(device: Device) -> None:
        """Wait for what a finished test left running; its failures were that test's."""
        with contextlib.suppress(Exception):
            device.synchronize()

    def close(self) -> None:
        for device in self._devices.values():
            self.settle(device)
            close = getattr(device, "close", None) or getattr(device.backend, "close", None)
            if callable(close):
                close()
        self._devices.clear()


class SessionDevices:
    """A test session's device selection and device pool (kept in ``config.stash``)."""

    def __init__(self, backends: Sequence[str] | None, stagings: Sequence[str] | None) -> None:
        self.selection = DeviceSelection(backends, stagings)
        self.pool = DevicePool()
