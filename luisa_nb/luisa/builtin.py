"""What ``from luisa.builtin import *`` gives a luisa-python program: the math functions
and the dispatch builtins."""

from luisa_nb.luisa import mathtypes
from luisa_nb.luisa.mathtypes import *  # noqa: F403

__all__ = list(mathtypes.__all__)
