"""The CUDA back end: the C emitter's output in CUDA C++'s dialect, compiled by NVRTC."""
