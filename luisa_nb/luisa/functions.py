"""``@luisa.func``: a kernel whose calls join the stream's command list, compiled with
luisa-python's rules (``luisa_nb.kernels.rules.LUISA_RULES``: C's integer ``//`` and
``%``, a ``for`` variable's end value after its loop)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from luisa_nb.errors import InvalidArgumentError, UnsupportedFeatureError
from luisa_nb.kernels.rules import LUISA_RULES
from luisa_nb.luisa.buffers import BufferType, buffer_type_of
from luisa_nb.luisa.image import TextureType, texture_type_of
from luisa_nb.runtime import IndirectDispatchBuffer, Kernel, Stream
from luisa_nb.runtime.kernel_objects import MAX_DISPATCH_COUNT
from luisa_nb.runtime.stream import check_stream


class Func(Kernel):
    """A luisa-python function: ``f(*args, dispatch_size=n, stream=s)`` adds a dispatch to
    the stream's command list, which ``luisa.execute()``/``synchronize()`` submits.
    Parameters annotated with ``BufferType``/``Texture2DType``/``Texture3DType`` are
    checked, as luisa-python checks them; other annotations are not."""

    def __init__(self, function: Callable[..., None]) -> None:
        super().__init__(function, rules=LUISA_RULES)

    def __call__(
        self,
        *args: Any,
        dispatch_size: Any = None,
        stream: Stream | None = None,
        dispatch_buffer_offset: int = 0,
        max_dispatch_size: int = MAX_DISPATCH_COUNT,
        **keywords: Any,
    ) -> None:
        """Add a dispatch over ``dispatch_size`` threads to the stream's command list; with
        an ``IndirectDispatchBuffer`` as the size, one per entry from
        ``dispatch_buffer_offset`` on (at most ``max_dispatch_size``), as in luisa-python."""
        if dispatch_size is None or keywords:
            raise self._call_error(dispatch_size, keywords)
        if stream is not None:
            check_stream(stream, f"kernel {self.name!r}")
        for position, name, expected in self._resource_parameters:
            if position < len(args) and resource_type_of(args[position]) != expected:
                got = resource_type_of(args[position]) or type(args[position]).__name__
                raise InvalidArgumentError(
                    f"{self.name}: argument {name!r} is annotated {expected!r}, got {got!r}; "
                    f"pass a resource of that type or change the annotation"
                )
        if isinstance(dispatch_size, IndirectDispatchBuffer):
            command = self.dispatch_indirect_async(
                dispatch_size, *args, offset=dispatch_buffer_offset, max_count=max_dispatch_size
            )
        else:
            command = self.dispatch_async(dispatch_size, *args)
        (stream or command.device.default_stream).add(command)

    def save(self, argtypes: tuple, name: str | None = None, *args: Any, **kwargs: Any) -> None:
        """luisa-python's ahead-of-time save of a compiled shader, which luisa_nb lacks."""
        raise UnsupportedFeatureError(
            f"{self.name}.save (ahead-of-time shader files) is not supported by luisa_nb; the "
            f"program needs real LuisaCompute (luisa-python) for it"
        )

    @functools.cached_property
    def _resource_parameters(self) -> list[tuple[int, str, BufferType | TextureType]]:
        """``(position, name, annotation)`` of each parameter annotated with a buffer or
        image type (string annotations evaluated, as luisa-python's ``inspect`` sees
        them, where they can be)."""
        try:
            signature = inspect.signature(self.__wrapped__, eval_str=True)
        except Exception:  # an annotation that does not evaluate annotates no image
            signature = inspect.signature(self.__wrapped__)
        parameters = signature.parameters.values()
        return [
            (position, parameter.name, parameter.annotation)
            for position, parameter in enumerate(parameters)
            if isinstance(parameter.annotation, (BufferType, TextureType))
        ]


def resource_type_of(value: Any) -> BufferType | TextureType | None:
    """The ``BufferType``, ``Texture2DType`` or ``Texture3DType`` of a buffer or image;
    None for anything else."""
    return buffer_type_of(value) or texture_type_of(value)


def func(function: Callable[..., None]) -> Func:
    """Decorate a luisa-python kernel function."""
    return Func(function)
