"""luisa-python's ``luisa.autodiff``, which luisa_nb lacks: the names exist, so a program
that imports them loads, and each raises :class:`~luisa_nb.errors.UnsupportedFeatureError`
when used (in a kernel, the compiler says the same at the line that uses it)."""

from __future__ import annotations

from luisa_nb.luisa.missing import Missing

_NAMES = ("autodiff", "requires_grad", "grad", "one", "zero", "backward", "detach")
FEATURE = "automatic differentiation"
globals().update({name: Missing(f"autodiff.{name}", FEATURE) for name in _NAMES})
__all__ = list(_NAMES)
