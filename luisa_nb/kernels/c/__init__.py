"""The C back end: the typed IR emitted as C (``emitter.CEmitter`` and one mixin per
feature, named after it), built by the system compiler (``toolchain``) and launched under
the fault guard (``executable``, ``launch_runs``)."""
