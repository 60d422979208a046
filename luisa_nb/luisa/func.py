"""``@luisa.func``: a kernel whose calls join the stream's command list, compiled with
luisa-python's rules (``luisa_nb.kernels.rules.LUISA_RULES``: C's integer ``//`` and
``%``, a ``for`` variable's end value after its loop)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from luisa_nb.kernels.rules import LUISA_RULES
from luisa_nb.runtime import Kernel, Stream


class Func(Kernel):
    """A luisa-python function: ``f(*args, dispatch_size=n, stream=s)`` adds a dispatch to
    the stream's command list, which ``luisa.execute()``/``synchronize()`` submits."""

    def __init__(self, function: Callable[..., None]) -> None:
        super().__init__(function, rules=LUISA_RULES)

    def __call__(self, *args: Any, dispatch_size: Any, stream: Stream | None = None) -> None:
        command = self.dispatch_async(dispatch_size, *args)
        (stream or command.device.default_stream).add(command)


def func(function: Callable[..., None]) -> Func:
    """Decorate a luisa-python kernel function."""
    return Func(function)
