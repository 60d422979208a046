"""``DeviceConfig``: which device to create, parsed in one place for every caller
(``create_device``, ``compare``, the magics, the pytest plugin and the CLI).

The text form is ``BACKEND[:STAGING]``: ``"cpu"``, ``"cpu:submit"``, ``"dx:execute"``,
``"remote://HOST:PORT"`` or ``"remote://HOST:PORT:submit"``; ``"cuda:N"`` names GPU ``N``
(``"cuda:1:submit"``). Without a staging policy the backend's own default applies.
"""

from __future__ import annotations

import difflib
import inspect
from dataclasses import dataclass
from typing import Any

from luisa_nb.backends import load_backend
from luisa_nb.errors import ConfigurationError
from luisa_nb.kernels.checks import KernelChecks
from luisa_nb.runtime.device import Device
from luisa_nb.runtime.staging import StagingPolicy

REMOTE_PREFIX = "remote://"
CUDA_PREFIX = "cuda:"


@dataclass(frozen=True)
class DeviceConfig:
    """A backend, a staging policy (``None``: the backend's default), the checks of the
    device's kernels that set none, and options for the backend (``options``, as sorted
    key/value pairs)."""

    backend: str
    staging: StagingPolicy | None = None
    checks: KernelChecks = KernelChecks.BOUNDS
    options: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def parse(
        cls,
        value: str | DeviceConfig | tuple[str, str],
        *,
        staging: str | StagingPolicy | None = None,
        checks: bool | str | None = None,
        **options: Any,
    ) -> DeviceConfig:
        """A configuration from text (``"cpu:submit"``), a ``(backend, staging)`` pair or
        another configuration; keyword arguments override what ``value`` says."""
        if isinstance(value, DeviceConfig):
            config = value
        elif isinstance(value, tuple) and len(value) == 2:
            config = cls._from_text(f"{value[0]}:{value[1]}")
        elif isinstance(value, str):
            config = cls._from_text(value)
        else:
            raise ConfigurationError(
                f"a device is named by text such as 'cpu' or 'cpu:submit', got "
                f"{type(value).__name__} {value!r:.60}"
            )
        merged = {**dict(config.options), **options}
        return cls(
            config.backend,
            config.staging if staging is None else StagingPolicy.parse(staging),
            config.checks if checks is None else KernelChecks.parse(checks),
            tuple(sorted(merged.items())),
        )._checked_options()

    @classmethod
    def _from_text(cls, text: str) -> DeviceConfig:
        text = text.strip()
        head, separator, tail = text.rpartition(":")
        staging = None
        if separator and tail.strip().lower() in {policy.value for policy in StagingPolicy}:
            text, staging = head, StagingPolicy.parse(tail)
        options: dict[str, Any] = {}
        if text.startswith(REMOTE_PREFIX):
            options["address"] = text.removeprefix(REMOTE_PREFIX)
            if not options["address"]:
                raise ConfigurationError(
                    f"device {text!r} names no address; use remote://HOST:PORT"
                )
            text = "remote"
        elif text.startswith(CUDA_PREFIX) and text.removeprefix(CUDA_PREFIX).isdigit():
            options["device_index"] = int(text.removeprefix(CUDA_PREFIX))
            text = "cuda"
        elif ":" in text:
            name, _, policy = text.partition(":")
            close = difflib.get_close_matches(policy, [p.value for p in StagingPolicy], n=1)
            hint = f"; did you mean {name}:{close[0]}?" if close else "."
            raise ConfigurationError(
                f"device {text!r}: {policy!r} is not a staging policy{hint} Use BACKEND, "
                "BACKEND:submit or BACKEND:execute"
            )
        if not text:
            raise ConfigurationError("a device name is empty; use e.g. 'cpu' or 'cpu:submit'")
        return cls(text, staging, options=tuple(sorted(options.items())))

    def _checked_options(self) -> DeviceConfig:
        backend_class = load_backend(self.backend)
        try:
            inspect.signature(backend_class).bind(**self.option_dict)
        except TypeError as error:
            raise ConfigurationError(
                f"backend {self.backend!r} does not take these options ({error}); see its "
                "documentation"
            ) from None
        return self

    @property
    def option_dict(self) -> dict[str, Any]:
        return dict(self.options)

    @property
    def label(self) -> str:
        """The text form, e.g. ``cpu:submit``; also the pytest id of a ``luisa_device``."""
        name = self.backend
        address = self.option_dict.get("address")
        if name == "remote" and address:
            name = f"{REMOTE_PREFIX}{address}"
        elif name == "cuda" and "device_index" in self.option_dict:
            name = f"{CUDA_PREFIX}{self.option_dict['device_index']}"
        return name if self.staging is None else f"{name}:{self.staging.value}"

    def create(self) -> Device:
        """A new device of this configuration."""
        backend = load_backend(self.backend)(**self.option_dict)
        return Device(backend, self.staging, self.checks)

    def __str__(self) -> str:
        return self.label


def create_device(
    name: str = "cpu",
    *,
    staging: str | StagingPolicy | None = None,
    checks: bool | str | None = None,
    **options: Any,
) -> Device:
    """A device on backend ``name``: ``"cpu"``, ``"dx"``, ``"metal"``, ``"remote"`` (a local
    server started for it) or ``"remote://HOST:PORT"`` (a running server; pass ``token=``),
    or a backend another package registered. ``name`` may carry a staging policy, as in
    ``"cpu:submit"`` (see :class:`DeviceConfig`). ``checks`` (True, False or "nan"; None:
    True) is what kernels that set no ``checks`` of their own check; ``options`` go to the
    backend."""
    return DeviceConfig.parse(name, staging=staging, checks=checks, **options).create()
