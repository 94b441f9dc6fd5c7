"""Docstring building shared by :mod:`oxnet.ndarray_doc` and
:mod:`oxnet.symbol_doc` (MXNet's helpers for generated operator docs)."""

__all__ = ["build_doc"]


def build_doc(func_name, desc, arg_names, arg_types, arg_desc, kind, extra_classes):
    """A numpy-style docstring: ``desc``, a Parameters section from the
    three parallel lists, the output of type ``kind`` ('NDArray' or
    'Symbol'), then the docstring of an extra class named ``<func_name>Doc``
    among ``extra_classes`` if there is one."""
    lines = [desc, "", "Parameters", "----------"]
    for name, typ, text in zip(arg_names, arg_types, arg_desc):
        lines.append(f"{name} : {typ.replace('NDArray-or-Symbol', kind)}")
        if text:
            lines.append(f"    {text}")
    if kind == "NDArray":
        lines += ["out : NDArray, optional", "    The output NDArray to hold the result."]
    else:
        lines += ["name : string, optional.", "    Name of the resulting symbol."]
    lines += ["", "Returns", "-------", f"{'out' if kind == 'NDArray' else 'Symbol'} : {kind}",
              "    The result of this function."]
    for cls in extra_classes:
        if cls.__name__ == f"{func_name}Doc" and cls.__doc__:
            lines += ["", "\n".join(line.strip() for line in cls.__doc__.strip().splitlines())]
    return "\n".join(lines)
