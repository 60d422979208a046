"""The session's default device, which kernels called without a buffer's device and
luisa_nb.luisa's implicit device use."""

from __future__ import annotations

from luisa_nb.errors import InvalidArgumentError
from luisa_nb.runtime.config import create_device
from luisa_nb.runtime.device import Device

_default_device: Device | None = None


def default_device() -> Device:
    """The session's default device: ``cpu`` unless :func:`set_default_device` chose one."""
    global _default_device
    if _default_device is None:
        _default_device = create_device("cpu")
    return _default_device


def set_default_device(device: Device) -> None:
    if not isinstance(device, Device):
        raise InvalidArgumentError(
            f"set_default_device needs a Device (from lnb.create_device), got "
            f"{type(device).__name__}"
        )
    global _default_device
    _default_device = device


def forget_default_device(device: Device) -> None:
    """If ``device`` is the default device, drop it: the next :func:`default_device` call
    makes a new ``cpu`` device. For code that closes a device it made the default."""
    global _default_device
    if _default_device is device:
        _default_device = None
