"""MXNet 1.x's deprecated Python operators ``PythonOp``, ``NumpyOp`` and
``NDArrayOp`` (exported by :mod:`oxnet.operator`).

An instance's ``get_symbol(*inputs, name=...)`` (or calling it) gives a
symbol that runs its ``forward(in_data, out_data)`` and
``backward(out_grad, in_data, out_data, in_grad)``: on numpy arrays for
``NumpyOp``, on NDArrays for ``NDArrayOp``. oxnet runs them as custom
operators (:class:`~oxnet.operator.CustomOp`), registered once per
instance, so they differentiate and bind like any other operator. New code
should write a ``CustomOp`` directly.
"""

import itertools
import warnings

_instance_ids = itertools.count()


class PythonOp:
    """Base class of the deprecated Python operators: the defaults copy the
    input forward and give a gradient of ones, as MXNet 1.9.1's do."""

    _ref_holder = []

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def __call__(self, *args, **kwargs):
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args, **kwargs):
        """The symbol that runs this operator on the input symbols ``args``."""
        raise NotImplementedError("PythonOp.get_symbol: use NumpyOp or NDArrayOp")

    def forward(self, in_data, out_data):
        """Writes the outputs (default: the first input)."""
        out_data[0][:] = in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad):
        """Writes the input gradients (default: ones)."""
        del out_grad, in_data, out_data
        in_grad[0][:] = 1.0

    def infer_shape(self, in_shape):
        """``(input shapes, output shapes)``; default: one output shaped like the first input."""
        return in_shape, [in_shape[0]]

    def list_outputs(self):
        """Output names (default ``['output']``)."""
        return ["output"]

    def list_arguments(self):
        """Input names (default ``['data']``)."""
        return ["data"]

    def need_top_grad(self):
        """Whether backward reads the output gradients."""
        return self.need_top_grad_


class NumpyOp(PythonOp):
    """A deprecated Python operator whose ``forward``/``backward`` receive
    numpy arrays to read and fill in place."""

    def __init__(self, need_top_grad=True):
        super().__init__(need_top_grad)
        warnings.warn("NumpyOp has been deprecated. Please use CustomOp", DeprecationWarning, stacklevel=2)

    def get_symbol(self, *args, **kwargs):
        return _symbol(self, args, kwargs, as_numpy=True)


class NDArrayOp(PythonOp):
    """A deprecated Python operator whose ``forward``/``backward`` receive
    NDArrays to read and fill in place."""

    def __init__(self, need_top_grad=True):
        super().__init__(need_top_grad)
        warnings.warn("NDArrayOp has been deprecated. Please use CustomOp", DeprecationWarning, stacklevel=2)

    def get_symbol(self, *args, **kwargs):
        return _symbol(self, args, kwargs, as_numpy=False)

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """The arrays backward reads (all of them by default)."""
        deps = []
        if self.need_top_grad():
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps


def _symbol(python_op, args, kwargs, as_numpy):
    """Registers ``python_op`` as a custom operator and applies it to ``args``."""
    from . import symbol  # pylint: disable=import-outside-toplevel
    from .operator import register  # pylint: disable=import-outside-toplevel

    op_type = f"_python_op_{type(python_op).__name__}_{next(_instance_ids)}"
    register(op_type)(_prop_class(python_op, as_numpy))
    PythonOp._ref_holder.append(python_op)
    return symbol.Custom(*args, op_type=op_type, **kwargs)


def _prop_class(python_op, as_numpy):
    from .ndarray import array  # pylint: disable=import-outside-toplevel
    from .operator import CustomOp, CustomOpProp  # pylint: disable=import-outside-toplevel

    def to_user(arrays):
        return [a.asnumpy() for a in arrays] if as_numpy else list(arrays)

    def write_back(op, dsts, reqs, values):
        if as_numpy:
            for dst, req, value in zip(dsts, reqs, values):
                op.assign(dst, req, array(value, ctx=dst.context, dtype=dst.dtype))

    class Operator(CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            del is_train, aux
            outs = to_user(out_data)
            python_op.forward(in_data=to_user(in_data), out_data=outs)
            write_back(self, out_data, req, outs)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            del aux
            grads = to_user(in_grad)
            python_op.backward(out_grad=to_user(out_grad), in_data=to_user(in_data),
                               out_data=to_user(out_data), in_grad=grads)
            write_back(self, in_grad, req, grads)

    class Prop(CustomOpProp):
        def __init__(self, **kwargs):
            del kwargs
            super().__init__(need_top_grad=python_op.need_top_grad())

        def list_arguments(self):
            return python_op.list_arguments()

        def list_outputs(self):
            return python_op.list_outputs()

        def infer_shape(self, in_shape):
            in_shapes, out_shapes = python_op.infer_shape(in_shape)
            return in_shapes, out_shapes, []

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Operator()

    return Prop
