"""``mx.symbol_doc``: extra documentation attached to symbolic operators
(a subclass of :class:`SymbolDoc` named ``<op>Doc``), the docstring builder,
and :meth:`SymbolDoc.get_output_shape` for examples."""

from ._doc_builder import build_doc

__all__ = ["SymbolDoc"]


class SymbolDoc:
    """Base class of the extra documentation of symbolic operators."""

    @staticmethod
    def get_output_shape(sym, **input_shapes):
        """``{output name: shape}`` of ``sym`` for the given input shapes."""
        _, outputs, _ = sym.infer_shape(**input_shapes)
        return dict(zip(sym.list_outputs(), outputs))


def _build_doc(func_name, desc, arg_names, arg_types, arg_desc, key_var_num_args=None, ret_type=None):
    """The docstring of the symbolic operator ``func_name``."""
    del key_var_num_args, ret_type
    return build_doc(func_name, desc, arg_names, arg_types, arg_desc, "Symbol", SymbolDoc.__subclasses__())
