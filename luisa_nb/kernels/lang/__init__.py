"""The kernel language: the types and builtins a kernel's author writes (vectors, matrices,
structs and arrays, block-shared arrays, luisa-python's scalar names, ``dispatch_id()`` and
the math functions). They are plain Python values outside kernels; the compiler recognises
them by identity."""
