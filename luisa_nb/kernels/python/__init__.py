"""Python mode: the kernel function itself run once per thread on numpy values, with the
checks, rules and value semantics of compiled kernels."""
