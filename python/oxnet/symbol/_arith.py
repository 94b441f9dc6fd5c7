"""MXNet 1.x's hand-written element-wise functions of ``mx.sym`` that take a
Symbol or a number on either side: ``pow``/``power``, ``maximum``,
``minimum`` and ``hypot``. Two symbols use the same-shape operator (no
broadcasting, as in MXNet), a number uses the scalar form, two numbers are
computed in Python."""

import math
from numbers import Number

from .symbol import Symbol, compose_op


def _dispatch(fname, lhs, rhs, pair, scalar, rscalar, numbers):
    if isinstance(lhs, Symbol) and isinstance(rhs, Symbol):
        return compose_op(pair, pair.lower(), [lhs, rhs], {}, {})
    if isinstance(lhs, Symbol) and isinstance(rhs, Number):
        return compose_op(scalar, scalar.lower(), [lhs], {}, {"scalar": float(rhs)})
    if isinstance(lhs, Number) and isinstance(rhs, Symbol):
        return compose_op(rscalar, rscalar.lower(), [rhs], {}, {"scalar": float(lhs)})
    if isinstance(lhs, Number) and isinstance(rhs, Number):
        return numbers(lhs, rhs)
    raise TypeError(f"{fname}: types ({type(lhs)}, {type(rhs)}) not supported")


def pow(base, exp):  # pylint: disable=redefined-builtin
    """``base ** exp`` element-wise; either side may be a number (no broadcasting)."""
    return _dispatch("pow", base, exp, "_Power", "_PowerScalar", "_RPowerScalar", lambda a, b: a ** b)


def power(base, exp):
    """``base ** exp`` element-wise; either side may be a number (no broadcasting)."""
    return pow(base, exp)


def maximum(left, right):
    """Element-wise maximum; either side may be a number (no broadcasting)."""
    return _dispatch("maximum", left, right, "_Maximum", "_MaximumScalar", "_MaximumScalar",
                     lambda a, b: a if a > b else b)


def minimum(left, right):
    """Element-wise minimum; either side may be a number (no broadcasting)."""
    return _dispatch("minimum", left, right, "_Minimum", "_MinimumScalar", "_MinimumScalar",
                     lambda a, b: a if a < b else b)


def hypot(left, right):
    """``sqrt(left ** 2 + right ** 2)`` element-wise; either side may be a number
    (no broadcasting)."""
    return _dispatch("hypot", left, right, "_Hypot", "_HypotScalar", "_HypotScalar", math.hypot)


NAMES = ["pow", "power", "maximum", "minimum", "hypot"]
