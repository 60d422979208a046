"""luisa-python's ``luisa.autodiff``: ``with autodiff():`` blocks in kernels, with
``requires_grad``, ``backward``, ``grad``, ``detach``, ``one`` and ``zero`` (see
docs/kernels.md, "Automatic differentiation")."""

from __future__ import annotations

from luisa_nb.kernels.lang.autodiff import (
    autodiff,
    backward,
    detach,
    grad,
    one,
    requires_grad,
    zero,
)

__all__ = ["autodiff", "backward", "detach", "grad", "one", "requires_grad", "zero"]
