"""Typing: a parsed kernel and its argument types to the typed IR (``ir.py``).

``typer.KernelTyper`` visits statements; each feature's expressions and calls are typed
in the mixin named after it (``vectors``, ``matrices``, ``aggregates``, ``images``,
``bindless``, ``atomics``, ``indirect``, ``builtin_calls``)."""
