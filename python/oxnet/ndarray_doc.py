"""``mx.ndarray_doc``: extra documentation attached to operator functions
(a subclass of :class:`NDArrayDoc` named ``<op>Doc`` adds its docstring to
``mx.nd.<op>``'s), and the docstring builder."""

from ._doc_builder import build_doc

__all__ = ["NDArrayDoc"]


class NDArrayDoc:
    """Base class of the extra documentation of imperative operators."""


def _build_doc(func_name, desc, arg_names, arg_types, arg_desc, key_var_num_args=None, ret_type=None):
    """The docstring of the imperative operator ``func_name``."""
    del key_var_num_args, ret_type
    return build_doc(func_name, desc, arg_names, arg_types, arg_desc, "NDArray", NDArrayDoc.__subclasses__())
