"""Reverse-mode automatic differentiation of ``with autodiff():`` blocks: a compiler stage
between typing and emission. The typer hands each block's typed statements to
:func:`~luisa_nb.kernels.autodiff.reverse.differentiate`, which returns plain IR (a forward
sweep, the adjoint sweep and the gradients), so every emitter runs it unchanged."""
