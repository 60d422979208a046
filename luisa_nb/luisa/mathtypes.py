"""luisa-python's ``luisa.mathtypes``: the vector and matrix types of the kernel language
and their ``make_*`` constructors. Kernel functions (``length``, ``dispatch_id`` ...) are
not exported here, as in luisa-python: a kernel names them without an import, and a
star import must not hide Python's ``round``, ``abs`` or ``min`` in the program."""

from luisa_nb import kernels

__all__ = [
    name
    for name in kernels.__all__
    if name.startswith("make_")
    or (
        isinstance(getattr(kernels, name), type) and hasattr(getattr(kernels, name), "__lnb_type__")
    )
]
globals().update({name: getattr(kernels, name) for name in __all__})
