"""What the C kernels take from the C library, declared without its headers.

Parsing ``<stdint.h>``, ``<string.h>`` and ``<math.h>`` took about 9 ms of every kernel
build, more than the rest of the front end. GCC and Clang predefine the integer types'
macros and have a ``__builtin_`` form of every math function, so the prelude maps names to
those: a builtin becomes an instruction where one exists and a libm call otherwise, as
with the headers. Builds pass ``-Werror=implicit-function-declaration``, so a function
missing here stops the build instead of being called with a guessed signature.
"""

from __future__ import annotations

INTEGER_TYPES = """\
typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;
typedef __INTPTR_TYPE__ intptr_t;
#define INT32_MAX __INT32_MAX__
#define memcpy __builtin_memcpy
#define memset __builtin_memset"""

MATH_FUNCTIONS = (
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "cbrt",
    "ceil",
    "copysign",
    "cos",
    "cosh",
    "exp",
    "exp2",
    "expm1",
    "fabs",
    "floor",
    "fma",
    "fmax",
    "fmin",
    "fmod",
    "hypot",
    "log",
    "log10",
    "log1p",
    "log2",
    "pow",
    "round",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "trunc",
)
"""The math functions kernels call, each in its double and its float (``f``) form."""

MATH = "\n".join(
    [
        *(
            f"#define {name}{suffix} __builtin_{name}{suffix}"
            for name in MATH_FUNCTIONS
            for suffix in ("", "f")
        ),
        "#define isnan __builtin_isnan",
        "#define isinf __builtin_isinf",
        "#define INFINITY (__builtin_inff())",
        '#define NAN (__builtin_nanf(""))',
    ]
)

ALLOCATION = """\
void *calloc(__SIZE_TYPE__ count, __SIZE_TYPE__ size);
void free(void *pointer);"""


def c_prelude(*, math: bool, allocation: bool) -> str:
    """The declarations a kernel's C needs: integer types always, math functions with
    ``math``, ``calloc``/``free`` with ``allocation`` (kernels whose threads run as
    blocks)."""
    parts = [INTEGER_TYPES, *((MATH,) if math else ()), *((ALLOCATION,) if allocation else ())]
    return "\n\n".join(parts)
