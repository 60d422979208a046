"""Small C helper functions the emitter adds on demand, one per (operation, type).

They give C the semantics of Python mode (NumPy scalars): floor division and modulo
round toward negative infinity, integer division by zero gives 0 instead of a trap,
``min``/``max`` of floats propagate NaN. ``div`` and ``rem`` are C's truncating integer
``/`` and ``%`` (luisa-python's ``//`` and ``%``), with the same guards: a zero divisor
gives 0, and ``INT_MIN / -1`` wraps (the build uses -fwrapv) instead of trapping.
"""

from __future__ import annotations

from luisa_nb.kernels.type_system import ScalarType

SIGNED_FLOORDIV = """\
{prefix} {T} lnb_floordiv_{name}({T} a, {T} b) {{
    if (b == 0) return 0;
    if (b == -1) return -a;
    {T} q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}}"""

SIGNED_MOD = """\
{prefix} {T} lnb_mod_{name}({T} a, {T} b) {{
    if (b == 0 || b == -1) return 0;
    {T} r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}}"""

UNSIGNED_FLOORDIV = """\
{prefix} {T} lnb_floordiv_{name}({T} a, {T} b) {{
    return b == 0 ? 0 : a / b;
}}"""

UNSIGNED_MOD = """\
{prefix} {T} lnb_mod_{name}({T} a, {T} b) {{
    return b == 0 ? 0 : a % b;
}}"""

SIGNED_DIV = """\
{prefix} {T} lnb_div_{name}({T} a, {T} b) {{
    if (b == 0) return 0;
    if (b == -1) return -a;
    return a / b;
}}"""

SIGNED_REM = """\
{prefix} {T} lnb_rem_{name}({T} a, {T} b) {{
    if (b == 0 || b == -1) return 0;
    return a % b;
}}"""

UNSIGNED_DIV = """\
{prefix} {T} lnb_div_{name}({T} a, {T} b) {{
    return b == 0 ? 0 : a / b;
}}"""

UNSIGNED_REM = """\
{prefix} {T} lnb_rem_{name}({T} a, {T} b) {{
    return b == 0 ? 0 : a % b;
}}"""

FLOAT_MOD = """\
{prefix} {T} lnb_mod_{name}({T} a, {T} b) {{
    {T} r = fmod{f}(a, b);
    if (b == 0) return r;
    if (r != 0) return ((b < 0) != (r < 0)) ? r + b : r;
    return copysign{f}(0, b);
}}"""

FLOAT_FLOORDIV = """\
{prefix} {T} lnb_floordiv_{name}({T} a, {T} b) {{
    if (b == 0) return a / b;
    {T} m = fmod{f}(a, b);
    {T} d = (a - m) / b;
    if (m != 0 && ((b < 0) != (m < 0))) d -= 1;
    if (d == 0) return copysign{f}(0, a / b);
    {T} f = floor{f}(d);
    return (d - f > 0.5{f}) ? f + 1 : f;
}}"""

INTEGER_POW = """\
{prefix} {T} lnb_pow_{name}({T} base, {T} exponent) {{
    {T} result = 1;
    if (exponent < 0) return (base == 1 || base == -1) ? ((exponent & 1) ? base : 1) : 0;
    while (exponent != 0) {{
        if (exponent & 1) result *= base;
        base *= base;
        exponent >>= 1;
    }}
    return result;
}}"""

INTEGER_ABS = """\
{prefix} {T} lnb_abs_{name}({T} a) {{
    return a < 0 ? -a : a;
}}"""

INTEGER_MIN = """\
{prefix} {T} lnb_min_{name}({T} a, {T} b) {{
    return b < a ? b : a;
}}"""

INTEGER_MAX = """\
{prefix} {T} lnb_max_{name}({T} a, {T} b) {{
    return b > a ? b : a;
}}"""

FLOAT_MIN = """\
{prefix} {T} lnb_min_{name}({T} a, {T} b) {{
    return (a != a || a <= b) ? a : b;
}}"""

FLOAT_MAX = """\
{prefix} {T} lnb_max_{name}({T} a, {T} b) {{
    return (a != a || a >= b) ? a : b;
}}"""

FLOAT_ABS = """\
{prefix} {T} lnb_abs_{name}({T} a) {{
    return fabs{f}(a);
}}"""


FLOAT_FUNCTION_TEMPLATES = {
    "rsqrt": "return 1 / sqrt{f}(a);",
    "fract": "return a - floor{f}(a);",
    "exp10": "return pow{f}(10, a);",
    "sign": "return copysign{f}(1, a);",
    "fmod": "return a - b * trunc{f}(a / b);",
    "floormod": "return a - b * floor{f}(a / b);",
    "step": "return b < a ? 0 : 1;",
    "lerp": "return a + c * (b - a);",
    "smoothstep": (
        "{T} t = (c - a) / (b - a);\n"
        "    t = t < 0 ? 0 : (t > 1 ? 1 : t);\n"
        "    return t * t * (3 - 2 * t);"
    ),
}
FLOAT_FUNCTION_ARITIES = {"step": 2, "fmod": 2, "floormod": 2, "lerp": 3, "smoothstep": 3}
MATH_HELPERS = ("floordiv", "mod", "abs", "rsqrt", "fract", "exp10", "sign", "fmod")


def float_function_template(operation: str) -> str:
    """A one-line float helper (luisa-python builtins C lacks): rsqrt, fract, lerp, ..."""
    names = ("a", "b", "c")[: FLOAT_FUNCTION_ARITIES.get(operation, 1)]
    parameters = ", ".join(f"{{T}} {name}" for name in names)
    body = FLOAT_FUNCTION_TEMPLATES[operation]
    return f"{{prefix}} {{T}} lnb_{operation}_{{name}}({parameters}) {{{{\n    {body}\n}}}}"


def helper_template(operation: str, scalar_type: ScalarType) -> str:
    """The template of helper ``operation`` ("floordiv", "mod", "div", "pow", ...) for a
    type."""
    if operation in FLOAT_FUNCTION_TEMPLATES:
        return float_function_template(operation)
    if scalar_type.is_float:
        return {
            "floordiv": FLOAT_FLOORDIV,
            "mod": FLOAT_MOD,
            "min": FLOAT_MIN,
            "max": FLOAT_MAX,
            "abs": FLOAT_ABS,
        }[operation]
    signed = scalar_type.is_signed
    return {
        "floordiv": SIGNED_FLOORDIV if signed else UNSIGNED_FLOORDIV,
        "mod": SIGNED_MOD if signed else UNSIGNED_MOD,
        "div": SIGNED_DIV if signed else UNSIGNED_DIV,
        "rem": SIGNED_REM if signed else UNSIGNED_REM,
        "pow": INTEGER_POW,
        "min": INTEGER_MIN,
        "max": INTEGER_MAX,
        "abs": INTEGER_ABS,
    }[operation]


def needs_math(operation: str, scalar_type: ScalarType) -> bool:
    """Whether the helper calls math functions (declared by the prelude's math part)."""
    return scalar_type.is_float and operation in (*MATH_HELPERS, "floormod")
