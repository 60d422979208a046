"""Which devices a test session runs on, and the devices themselves.

The pytest plugin turns ``--luisa-backend`` and ``--luisa-staging`` into a
:class:`DeviceSelection`; tests that ask for ``luisa_device`` run once per
:class:`DeviceParam` of it, on devices a :class:`DevicePool` creates once per session.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

from luisa_nb.backends import available_backends, load_backend
from luisa_nb.errors import BackendNotFoundError
from luisa_nb.runtime import STAGING_POLICIES, Device, create_device

DEFAULT_STAGING = ("execute", "submit")


class SelectionError(ValueError):
    """A backend or staging policy asked for on the command line does not exist."""


@dataclass(frozen=True)
class DeviceParam:
    """One ``luisa_device`` parameter: a backend name and a staging policy."""

    backend: str
    staging: str

    @property
    def id(self) -> str:
        return f"{self.backend}-{self.staging}"

    @classmethod
    def parse(cls, value: object) -> DeviceParam:
        """A parameter from a :class:`DeviceParam`, ``"cpu-submit"``, or ``("cpu", "submit")``."""
        if isinstance(value, DeviceParam):
            return value
        if isinstance(value, str):
            backend, _, staging = value.rpartition("-")
            if backend and staging in STAGING_POLICIES:
                return cls(backend, staging)
        if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, str) for v in value):
            return cls(*value)
        raise SelectionError(
            f"luisa_device parameter {value!r} is not 'BACKEND-STAGING' (e.g. 'cpu-submit') or "
            f"a (backend, staging) pair"
        )


def _unique(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(values))


def check_backends(names: Sequence[str]) -> list[str]:
    """``names`` without repeats, after checking each is a backend that loads here; the
    error is the registry's own (it offers "did you mean" and lists the backends)."""
    for name in names:
        try:
            load_backend(name)
        except BackendNotFoundError as error:
            raise SelectionError(f"--luisa-backend {name!r}: {error}") from None
    return _unique(names)


def check_stagings(policies: Sequence[str]) -> list[str]:
    for policy in policies:
        if policy not in STAGING_POLICIES:
            raise SelectionError(
                f"--luisa-staging {policy!r} is not a staging policy; use "
                f"{' or '.join(STAGING_POLICIES)}"
            )
    return _unique(policies)


class DeviceSelection:
    """The backends and staging policies of a session. Backends asked for by name are
    checked at once; the default, every available backend, is found on first use."""

    def __init__(self, backends: Sequence[str] | None, stagings: Sequence[str] | None) -> None:
        self._backends = check_backends(backends) if backends else None
        self.stagings = check_stagings(stagings) if stagings else list(DEFAULT_STAGING)

    @property
    def backends(self) -> list[str]:
        if self._backends is None:
            self._backends = available_backends()
        return self._backends

    def params(self) -> list[DeviceParam]:
        return [DeviceParam(b, s) for b in self.backends for s in self.stagings]

    def describe(self) -> str:
        backends = ", ".join(self._backends) if self._backends else "every available one"
        return f"backends {backends}; staging {', '.join(self.stagings)}"


class DevicePool:
    """One device per backend and staging policy, created when first asked for."""

    def __init__(self) -> None:
        self._devices: dict[DeviceParam, Device] = {}

    def get(self, param: DeviceParam) -> Device:
        device = self._devices.get(param)
        if device is None:
            device = self._devices[param] = create_device(param.backend, staging=param.staging)
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
