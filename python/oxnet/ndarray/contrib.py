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
"""

import numpy as _np


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
