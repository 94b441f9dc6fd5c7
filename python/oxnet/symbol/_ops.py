"""Generates one function per registry operator for ``mx.sym``.

Each function takes symbols by position or by argument name, attributes as
keywords (any value; turned into MXNet's string form), ``name=`` and
``attr=``; missing inputs become variables ``<name>_<argument>``.
"""

from .. import _oxnet
from ..ndarray._ops import _docstring, add_to_submodule

_RESERVED = {"var", "Variable", "Group", "load", "load_json", "fromjson", "Symbol", "trace", "contrib"}


def _make(fname, op_name, attr_names, none_ok=()):
    """``none_ok``: attributes that take None (``axis=None``): an explicit None
    is passed on as MXNet's Python does, where for others it means "not given"."""
    from .symbol import Symbol, compose_op

    hint = fname.lower()

    def op(*args, **kwargs):
        name = kwargs.pop("name", None)
        attr = kwargs.pop("attr", None)
        kwargs.pop("out", None)
        positional = []
        params = {}
        attr_iter = iter(attr_names)
        for a in args:
            if isinstance(a, Symbol):
                if params:
                    raise TypeError(f"{fname}: symbols must come before positional attributes")
                positional.append(a)
            elif isinstance(a, (list, tuple)) and a and all(isinstance(x, Symbol) for x in a):
                positional.extend(a)
            elif a is None:
                continue
            else:
                key = next(attr_iter, None)
                if key is None:
                    raise TypeError(f"{fname}: too many positional arguments")
                params[key] = a
        named = {}
        for k, v in kwargs.items():
            if isinstance(v, Symbol):
                named[k] = v
            elif v is None and k in none_ok:
                params[k] = "None"
            else:
                params[k] = v
        return compose_op(op_name, hint, positional, named, params, name=name, attr=attr)

    op.__name__ = fname
    op.__qualname__ = fname
    op.__module__ = "oxnet.symbol"
    return op


def keep(names):
    """Marks ``names`` as written by hand in ``mx.sym``: :func:`refresh`
    leaves them alone (``sym.maximum`` takes symbols or numbers)."""
    _RESERVED.update(names)


def refresh(namespace):
    """Adds (or replaces) a function in ``namespace`` for every registry
    operator; one named ``_contrib_NAME`` (``_linalg_NAME``, ``_image_NAME``)
    also goes into the ``contrib`` (``linalg``, ``image``) module of
    ``namespace`` (when it has one) as ``NAME``, and one named ``_NAME`` into
    its ``_internal`` module."""
    internal = namespace.get("_internal")
    for name, aliases, doc, arguments, attrs, variadic in _oxnet.list_ops():
        docstring = _docstring(name, aliases, doc, arguments, attrs, variadic).replace("NDArray", "Symbol")
        attr_names = [a[0] for a in attrs]
        none_ok = frozenset(a[0] for a in attrs if "None" in a[1])
        for n in [name, *aliases]:
            if n in _RESERVED:
                continue
            f = _make(n, n, attr_names, none_ok)
            f.__doc__ = docstring
            namespace[n] = f
            if internal is not None and n.startswith("_"):
                setattr(internal, n, f)
            add_to_submodule(namespace, n, f)
