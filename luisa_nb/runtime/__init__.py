"""Runtime layer: devices, buffers, streams, events, commands and kernels."""

from luisa_nb.runtime.accel import Accel, AccelBuildCommand, Mesh
from luisa_nb.runtime.bindless import BindlessArray
from luisa_nb.runtime.buffer import Buffer, BufferView
from luisa_nb.runtime.commands import (
    Command,
    CopyCommand,
    DispatchCommand,
    DownloadCommand,
    FillCommand,
    UploadCommand,
)
from luisa_nb.runtime.config import DeviceConfig, create_device
from luisa_nb.runtime.defaults import default_device, set_default_device
from luisa_nb.runtime.device import Device
from luisa_nb.runtime.image import Image
from luisa_nb.runtime.indirect import IndirectDispatchBuffer, IndirectDispatchCommand
from luisa_nb.runtime.kernel_objects import Kernel, kernel
from luisa_nb.runtime.naming import name
from luisa_nb.runtime.staging import StagingPolicy
from luisa_nb.runtime.stream import Event, Stream

__all__ = [
    "Accel",
    "AccelBuildCommand",
    "BindlessArray",
    "Buffer",
    "BufferView",
    "Command",
    "CopyCommand",
    "Device",
    "DeviceConfig",
    "DispatchCommand",
    "DownloadCommand",
    "Event",
    "FillCommand",
    "Image",
    "IndirectDispatchBuffer",
    "IndirectDispatchCommand",
    "Kernel",
    "Mesh",
    "StagingPolicy",
    "Stream",
    "UploadCommand",
    "create_device",
    "default_device",
    "kernel",
    "name",
    "set_default_device",
]
