"""``mx.nd.contrib``: every registry operator named ``_contrib_NAME``
(built-in or loaded from a library) as ``NAME``, as in MXNet; e.g.
``mx.nd.contrib.CTCLoss`` is ``mx.nd._contrib_CTCLoss``. Filled in by
``oxnet.ndarray._ops.refresh``.

Also MXNet's Python helpers of ``mx.nd.contrib``: ``isnan``, ``isinf`` and
``isfinite`` (element-wise 1 or 0 in the input's dtype), ``rand_zipfian``,
and the multi-tensor optimizer updates ``multi_adamw_update``,
``multi_mp_adamw_update``, ``multi_lamb_update`` and
``multi_mp_lamb_update``, which take lists of arrays and call the registry
operators ``_multi_adamw_update`` (...) with MXNet's signatures.

And the imperative control flow ``foreach``, ``while_loop`` and ``cond``:
Python loops and branches over the operators the user functions call, so
autograd records (and differentiates through) whatever ran.
"""

import numpy as _np

from ..base import MXNetError


def isnan(data):
    """1 where ``data`` is NaN, else 0."""
    return data != data  # pylint: disable=comparison-with-itself


def isinf(data):
    """1 where ``data`` is +inf or -inf, else 0."""
    return data.abs() == _np.inf


def isfinite(data):
    """1 where ``data`` is neither NaN nor infinite, else 0."""
    not_nan = data == data  # pylint: disable=comparison-with-itself
    return (data.abs() != _np.inf) * not_nan


def rand_zipfian(true_classes, num_sampled, range_max, ctx=None):
    """Draws ``num_sampled`` classes (with repeats) from the approximately
    Zipfian distribution P(c) = (log(c + 2) - log(c + 1)) / log(range_max + 1)
    over ``[0, range_max)``, as MXNet's candidate sampler does.

    Returns ``(sampled_classes, expected_count_true, expected_count_sampled)``:
    the int64 draws, and the expected counts (in ``num_sampled`` draws) of
    ``true_classes`` and of each draw."""
    import math
    from .random import uniform
    if ctx is None:
        ctx = true_classes.context
    log_range = math.log(range_max + 1)
    rand = uniform(0, log_range, shape=(num_sampled,), dtype="float64", ctx=ctx)
    # exp(rand) - 1 lies in [0, range_max); the clip guards the rounding at the ends
    from .. import ndarray as _ns
    sampled_classes = _ns.clip(rand.exp() - 1, a_min=0, a_max=range_max - 1).astype("int64")
    true_cls = true_classes.as_in_context(ctx).astype("float64")
    expected_count_true = ((true_cls + 2.0) / (true_cls + 1.0)).log() / log_range * num_sampled
    sampled_cls = sampled_classes.astype("float64")
    expected_count_sampled = ((sampled_cls + 2.0) / (sampled_cls + 1.0)).log() / log_range * num_sampled
    return sampled_classes, expected_count_true, expected_count_sampled


def _interleave(*per_tensor):
    """The arrays of several per-tensor lists, tensor by tensor
    (weight_0, grad_0, ..., weight_1, grad_1, ...)."""
    return [array for group in zip(*per_tensor) for array in group]


def _scale_array(rescale_grad, like):
    """``rescale_grad`` as a one-element array on ``like``'s device (a
    number becomes a float32 array, as MXNet makes it)."""
    from .. import ndarray as nd
    if isinstance(rescale_grad, nd.NDArray):
        return rescale_grad.as_in_context(like.context)
    return nd.full((1,), rescale_grad, ctx=like.context)


#: wrappers here that the registry's ``_contrib_<name>`` functions must not replace
HAND_WRITTEN = ("adamw_update", "mp_adamw_update")


def adamw_update(weight, grad, mean, var, rescale_grad, lr, eta, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0,
                 clip_gradient=-1, out=None, name=None, **kwargs):
    """AdamW's update of ``weight`` (``_adamw_update``): ``mean`` and ``var``
    are updated in place; ``rescale_grad`` is a number or a one-element
    array (0, NaN or infinity skips the update). Pass ``out=weight`` to
    update the weight in place."""
    from . import _internal
    return _internal._adamw_update(weight, grad, mean, var, _scale_array(rescale_grad, weight), lr=lr, eta=eta,
                                   beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd, clip_gradient=clip_gradient,
                                   out=out, name=name, **kwargs)


def mp_adamw_update(weight, grad, mean, var, weight32, rescale_grad, lr, eta, beta1=0.9, beta2=0.999,
                    epsilon=1e-8, wd=0, clip_gradient=-1, out=None, name=None, **kwargs):
    """Multi-precision :func:`adamw_update` (``_mp_adamw_update``): the
    float32 master copy ``weight32`` and float32 ``mean``/``var`` are
    updated in place; the output is the new weight in its dtype."""
    from . import _internal
    return _internal._mp_adamw_update(weight, grad, mean, var, weight32, _scale_array(rescale_grad, weight), lr=lr,
                                      eta=eta, beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd,
                                      clip_gradient=clip_gradient, out=out, name=name, **kwargs)


def multi_adamw_update(weights, grads, mean, var, rescale_grad, lrs, wds, etas,
                       out=None, name=None, size=0, **kwargs):
    """AdamW over the lists ``weights``, ``grads``, ``mean``, ``var`` in one
    call (``_multi_adamw_update``): ``lrs``, ``wds`` and ``etas`` give each
    weight's rates, ``rescale_grad`` (a number or a one-element array)
    rescales every gradient, and a ``rescale_grad`` of 0, NaN or infinity
    skips the update. ``mean`` and ``var`` are updated in place; pass
    ``out=weights`` to update the weights in place."""
    from . import _internal
    inputs = _interleave(weights, grads, mean, var) + [_scale_array(rescale_grad, weights[0])]
    return _internal._multi_adamw_update(*inputs, out=out, num_weights=size or len(weights), lrs=lrs,
                                         wds=wds, etas=etas, name=name, **kwargs)


def multi_mp_adamw_update(weights, grads, mean, var, weights32, rescale_grad, lrs, wds, etas,
                          out=None, name=None, size=0, **kwargs):
    """Multi-precision :func:`multi_adamw_update` (``_multi_mp_adamw_update``):
    the float32 master copies ``weights32`` and float32 ``mean`` and ``var``
    are updated in place; the outputs are the new weights in their dtype."""
    from . import _internal
    inputs = _interleave(weights, grads, mean, var, weights32) + [_scale_array(rescale_grad, weights[0])]
    return _internal._multi_mp_adamw_update(*inputs, out=out, num_weights=size or len(weights), lrs=lrs,
                                            wds=wds, etas=etas, name=name, **kwargs)


def multi_lamb_update(weights, grads, mean, var, step_count,
                      lrs, wds, out=None, num_tensors=0, **kwargs):
    """LAMB over the lists ``weights``, ``grads``, ``mean``, ``var`` in one
    call (``_multi_lamb_update``): ``step_count``, ``lrs`` and ``wds`` give
    each tensor's update index (from 1), learning rate and weight decay.
    ``mean`` and ``var`` are updated in place; pass ``out=weights`` to
    update the weights in place."""
    from . import _internal
    return _internal._multi_lamb_update(*_interleave(weights, grads, mean, var), out=out,
                                        num_tensors=num_tensors or len(weights), step_count=step_count,
                                        learning_rates=lrs, wds=wds, **kwargs)


def multi_mp_lamb_update(weights, grads, mean, var, weights32, step_count,
                         lrs, wds, out=None, num_tensors=0, **kwargs):
    """Multi-precision :func:`multi_lamb_update` (``_multi_mp_lamb_update``):
    the float32 master copies ``weights32`` and float32 ``mean`` and ``var``
    are updated in place; the outputs are the new weights in their dtype."""
    from . import _internal
    return _internal._multi_mp_lamb_update(*_interleave(weights, grads, mean, var, weights32), out=out,
                                           num_tensors=num_tensors or len(weights), step_count=step_count,
                                           learning_rates=lrs, wds=wds, **kwargs)


# ---------------------------------------------------------------------------
# Imperative control flow: foreach, while_loop, cond
# ---------------------------------------------------------------------------

class _ControlFlowAssertion(MXNetError, AssertionError):
    """A control-flow argument or result of the wrong kind (not an NDArray
    or a nested list of them, a changed number of states). MXNet asserts
    in these places, so this is an AssertionError as well as an MXNetError."""


class _ControlFlowValueError(MXNetError, ValueError):
    """A control-flow argument or result with a wrong value (a missing
    ``max_iterations``, a non-scalar condition, results whose number or
    shapes change between steps). MXNet raises ValueError in these places,
    so this is a ValueError as well as an MXNetError."""


def _describe(value, limit=120):
    text = repr(value)
    if len(text) > limit:
        text = text[:limit] + "..."
    return f"{text} of type {type(value).__name__}"


def _flatten(nested, what, leaf=None):
    """The leaves of ``nested`` (a leaf or a nested list/tuple of leaves) in
    order, and its format: 0 for a lone leaf, else the list of its items'
    formats. Leaves are NDArrays unless ``leaf`` names another class."""
    if leaf is None:
        from .ndarray import NDArray as leaf
    if isinstance(nested, leaf):
        return [nested], 0
    if not isinstance(nested, (list, tuple)):
        raise _ControlFlowAssertion(f"{what} must be an {leaf.__name__} or a (nested) list of "
                                    f"{leaf.__name__}s, but got {_describe(nested)}")
    flat, fmt = [], []
    for item in nested:
        leaves, item_fmt = _flatten(item, what, leaf)
        flat.extend(leaves)
        fmt.append(item_fmt)
    return flat, fmt


def _regroup(flat, fmt):
    """Rebuilds the nesting ``fmt`` (from :func:`_flatten`) around the
    arrays of ``flat``, in order; lists stand for lists and tuples alike."""
    arrays = iter(flat)

    def build(part):
        if isinstance(part, int):
            return next(arrays)
        return [build(sub) for sub in part]
    return build(fmt)


def _python_scalar(value, type_, what):
    """``value`` (a one-element NDArray or a Python value) as ``type_``."""
    from .ndarray import NDArray
    if isinstance(value, NDArray):
        if value.size != 1:
            raise _ControlFlowValueError(f"{what} must be an NDArray of one element (or a Python scalar), "
                                         f"but it has shape {value.shape}")
        value = value.asscalar()
    try:
        return type_(value)
    except Exception as err:  # pylint: disable=broad-except
        raise _ControlFlowValueError(f"cannot convert {what} ({_describe(value)}) to a Python "
                                     f"{type_.__name__}") from err


def _stack_steps(per_step, what):
    """One array per output position: that output of every step stacked
    on a new axis 0. All steps must give the same shapes."""
    from . import stack
    stacked = []
    for position, items in enumerate(zip(*per_step)):
        shapes = [item.shape for item in items]
        if any(shape != shapes[0] for shape in shapes):
            lines = [f"{what}: the shapes of output {position} differ between steps:"]
            lines += [f"  step {step}: {shape}" for step, shape in enumerate(shapes)]
            raise _ControlFlowValueError("\n".join(lines))
        stacked.append(stack(*items, axis=0))
    return stacked


def foreach(body, data, init_states):
    """Runs ``body`` on each slice of ``data`` along axis 0, threading
    states from one step to the next (a for loop, recorded by autograd
    operator by operator).

    ``body(data_slice, states)`` returns ``(outputs, new_states)``.
    ``data`` is an NDArray or a (nested) list of NDArrays with the same
    length along axis 0; ``data_slice`` has its structure (lists for
    lists) with the ``i``-th slice of every array. ``states`` is
    ``init_states`` on the first step, then what the previous step
    returned; every step must return as many state arrays as
    ``init_states`` holds. ``outputs`` is an NDArray or a (nested) list of
    NDArrays with the same structure and shapes at every step.

    Returns ``(outputs, states)``: each output stacked over the steps on a
    new axis 0, in the structure ``body`` gave them (a lone NDArray, or
    lists), and the states of the last step as ``body`` returned them.

    Example: running sums, ``outs[i] = data[i] + sum(data[:i])``::

        def step(x, states):
            total = states[0] + x
            return total, [total]
        outs, [total] = mx.nd.contrib.foreach(step, data, [mx.nd.zeros(data.shape[1:])])
    """
    flat_data, data_fmt = _flatten(data, "foreach's data")
    flat_states, _ = _flatten(init_states, "foreach's init_states")
    if not flat_data:
        raise _ControlFlowValueError("foreach needs data to iterate over, but data holds no NDArray")
    lengths = []
    for array in flat_data:
        if len(array.shape) == 0:
            raise _ControlFlowValueError("foreach iterates over axis 0 of its data, but one of the arrays "
                                         "is a scalar (shape ())")
        lengths.append(array.shape[0])
    if any(length != lengths[0] for length in lengths):
        raise _ControlFlowValueError("foreach's data arrays must have the same length along axis 0, "
                                     f"but their shapes are {[array.shape for array in flat_data]}")
    num_steps = lengths[0]
    if num_steps == 0:
        raise _ControlFlowValueError("foreach's data has no steps (length 0 along axis 0): the structure "
                                     "of the outputs is only known once body has run")

    states = init_states
    per_step = []
    out_fmt = None
    for step in range(num_steps):
        data_slice = _regroup([array[step] for array in flat_data], data_fmt)
        result = body(data_slice, states)
        if not isinstance(result, (list, tuple)) or len(result) != 2:
            raise _ControlFlowValueError(f"foreach's body must return (outputs, new_states), but step {step} "
                                         f"returned {_describe(result)}")
        outputs, states = result
        flat_outputs, fmt = _flatten(outputs, "the outputs of foreach's body")
        new_flat_states, _ = _flatten(states, "the states foreach's body returns")
        if len(new_flat_states) != len(flat_states):
            raise _ControlFlowAssertion(f"foreach's body must return as many states as init_states holds "
                                        f"({len(flat_states)}), but step {step} returned "
                                        f"{len(new_flat_states)}")
        if step == 0:
            out_fmt = fmt
        elif fmt != out_fmt:
            raise _ControlFlowValueError("the outputs of foreach's body must have the same structure at "
                                         f"every step: step 0 gave {out_fmt}, step {step} gave {fmt} "
                                         "(0 stands for an NDArray, [...] for a list)")
        per_step.append(flat_outputs)
    stacked = _stack_steps(per_step, "foreach")
    return _regroup(stacked, out_fmt), states


def while_loop(cond, func, loop_vars, max_iterations=None):
    """Runs ``func`` while ``cond`` holds, at most ``max_iterations``
    times (a while loop, recorded by autograd operator by operator).

    ``cond(*loop_vars)`` returns a one-element NDArray (or a Python
    value); the loop goes on while it is nonzero. ``func(*loop_vars)``
    returns ``(step_output, new_loop_vars)``: ``step_output`` is None, an
    NDArray or a (nested) list of NDArrays with the same structure and
    shapes at every step, and ``new_loop_vars`` has as many items as
    ``loop_vars`` (an NDArray counts as a list of one).

    ``max_iterations`` (a number, or a one-element NDArray) is required.

    Returns ``(outputs, loop_vars)``. ``outputs`` holds each step output
    stacked over the steps on a new axis 0 and padded with zeros to
    ``max_iterations`` rows, in the structure ``func`` gave it (a lone
    NDArray, or lists); ``loop_vars`` are the final loop variables (a lone
    NDArray if ``loop_vars`` was one, else the list ``func`` returned last).
    When ``cond`` fails at once, ``outputs`` is ``[]`` (the step outputs are
    unknown) and ``loop_vars`` is returned as it was given.

    Example: ``i`` from 0 while ``i < 3``, outputs ``i * i``::

        outs, i = mx.nd.contrib.while_loop(lambda i: i < 3, lambda i: (i * i, i + 1),
                                           mx.nd.array([0]), max_iterations=5)
        # outs: [[0], [1], [4], [0], [0]] (shape (5, 1)), i: [3]
    """
    from .ndarray import NDArray
    from . import concat, zeros
    if max_iterations is None:
        raise _ControlFlowValueError("while_loop needs max_iterations (the most steps the loop may run)")
    max_iterations = _python_scalar(max_iterations, int, "max_iterations")
    single = isinstance(loop_vars, NDArray)
    if not single and not isinstance(loop_vars, (list, tuple)):
        raise _ControlFlowAssertion("while_loop's loop_vars must be an NDArray or a (nested) list of "
                                    f"NDArrays, but got {_describe(loop_vars)}")
    current = [loop_vars] if single else loop_vars
    if len(current) == 0:
        raise _ControlFlowValueError("loop_vars should contain at least one element")
    _flatten(current, "while_loop's loop_vars")

    steps = 0
    per_step = []
    out_fmt = None
    while steps < max_iterations and _python_scalar(cond(*current), bool, "the value cond returned"):
        result = func(*current)
        if not isinstance(result, (list, tuple)) or len(result) != 2:
            raise _ControlFlowValueError("while_loop's func must return (step_output, new_loop_vars), but "
                                         f"step {steps} returned {_describe(result)}")
        step_output, new_vars = result
        if step_output is None:
            step_output = []
        if new_vars is None:
            new_vars = []
        if isinstance(new_vars, NDArray):
            new_vars = [new_vars]
        elif isinstance(new_vars, (list, tuple)):
            new_vars = list(new_vars)
        else:
            raise _ControlFlowAssertion("the loop_vars while_loop's func returns must be NDArrays or (nested) "
                                        f"lists of NDArrays, but step {steps} returned {_describe(new_vars)}")
        if len(new_vars) != len(current):
            raise _ControlFlowValueError("The length of loop_vars should be consistent during the loop: "
                                         f"{len(current)} loop_vars went into func, step {steps} returned "
                                         f"{len(new_vars)}")
        _flatten(new_vars, "the loop_vars while_loop's func returns")
        flat_outputs, fmt = _flatten(step_output, "the step output of while_loop's func")
        if steps > 0 and fmt != out_fmt:
            raise _ControlFlowValueError("Number of elements in step_output should be the same in each step "
                                         f"(and so should their nesting): step 0 gave {out_fmt}, step {steps} "
                                         f"gave {fmt} (0 stands for an NDArray, [...] for a list)")
        out_fmt = fmt
        per_step.append(flat_outputs)
        current = new_vars
        steps += 1

    outputs = []
    if out_fmt is not None:
        stacked = _stack_steps(per_step, "while_loop")
        if steps < max_iterations:
            padded = []
            for block in stacked:
                pad = zeros((max_iterations - steps,) + tuple(block.shape[1:]), ctx=block.context,
                            dtype=block.dtype)
                padded.append(concat(block, pad, dim=0))
            stacked = padded
        outputs = _regroup(stacked, out_fmt)
    if single:
        current = current[0]
    return outputs, current


def cond(pred, then_func, else_func):
    """Returns ``then_func()`` if ``pred`` is nonzero, else ``else_func()``.

    ``pred`` is a one-element NDArray (or a Python value, taken by its
    truth). Only the chosen function runs, so autograd records that branch
    alone. The result is whatever that function returns (an NDArray or a
    nested list of them).

    Example::

        y = mx.nd.contrib.cond(x.sum() > 0, lambda: x * 2, lambda: -x)
    """
    if _python_scalar(pred, bool, "cond's pred"):
        return then_func()
    return else_func()
