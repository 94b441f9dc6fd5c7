"""Generates one Python function per registry operator.

Each function passes its arrays and keyword attributes straight to the
engine (``_oxnet.invoke``); its docstring comes from the registry. Operators
registered later (custom functions, loaded libraries) are added by calling
:func:`refresh` again.
"""

from .. import _oxnet

_RESERVED = {"array", "zeros", "ones", "full", "empty", "arange", "waitall", "random", "invoke", "NDArray", "contrib"}


def _docstring(name, aliases, doc, arguments, attrs, variadic):
    lines = [doc.strip() or f"The `{name}` operator.", "", "Parameters", "----------"]
    if variadic:
        lines.append("*data : NDArray\n    The input arrays.")
    for arg in arguments:
        lines.append(f"{arg} : NDArray\n    Input `{arg}`.")
    for attr_name, kind, default, attr_doc in attrs:
        suffix = ", required" if default is None else f", optional, default={default}"
        lines.append(f"{attr_name} : {kind}{suffix}\n    {attr_doc}")
    lines.append("out : NDArray, optional\n    Write the result into this array.")
    if aliases:
        lines += ["", "Aliases: " + ", ".join(aliases)]
    return "\n".join(lines)


def _make(name, handle, docstring):
    invoke = _oxnet.invoke

    def op(*args, **kwargs):
        return invoke(handle, args, kwargs)

    op.__name__ = name
    op.__qualname__ = name
    op.__doc__ = docstring
    op.__module__ = "oxnet.ndarray"
    return op


def keep(names):
    """Marks ``names`` as written by hand in ``mx.nd``: :func:`refresh`
    leaves them alone (they call several operators, e.g. ``nd.maximum``
    takes arrays or numbers)."""
    _RESERVED.update(names)


# operators named PREFIX + NAME also go into a submodule as NAME
SUBMODULES = {"_contrib_": "contrib", "_linalg_": "linalg", "_image_": "image"}


def refresh(namespace):
    """Adds (or replaces) a function in ``namespace`` for every registry
    operator; one named ``_contrib_NAME`` (``_linalg_NAME``, ``_image_NAME``)
    also goes into the ``contrib`` (``linalg``, ``image``) module of
    ``namespace`` (when it has one) as ``NAME``, and one named ``_NAME`` into
    its ``_internal`` module."""
    internal = namespace.get("_internal")
    for name, aliases, doc, arguments, attrs, variadic in _oxnet.list_ops():
        handle = _oxnet.op_handle(name)
        docstring = _docstring(name, aliases, doc, arguments, attrs, variadic)
        for n in [name, *aliases]:
            if n in _RESERVED:
                continue
            namespace[n] = _make(n, handle, docstring)
            if internal is not None and n.startswith("_"):
                setattr(internal, n, namespace[n])
            add_to_submodule(namespace, n, namespace[n])


def add_to_submodule(namespace, name, function):
    """Puts ``function`` into the submodule of ``namespace`` its ``name``'s
    prefix names (see ``SUBMODULES``), without the prefix, unless the
    submodule lists that name in its ``HAND_WRITTEN`` (a Python wrapper with
    MXNet's signature, e.g. ``contrib.adamw_update`` taking a number)."""
    for prefix, module in SUBMODULES.items():
        sub = namespace.get(module)
        if name.startswith(prefix) and sub is not None:
            short = name[len(prefix):]
            if short not in getattr(sub, "HAND_WRITTEN", ()):
                setattr(sub, short, function)
