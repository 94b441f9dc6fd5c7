"""``mx.sym.contrib``: every registry operator named ``_contrib_NAME``
(built-in or loaded from a library) as ``NAME``, as in MXNet; e.g.
``mx.sym.contrib.CTCLoss`` is ``mx.sym._contrib_CTCLoss``. Filled in by
``oxnet.symbol._ops.refresh``; and control flow in graphs (``foreach``,
``while_loop``, ``cond``)."""

from ._control_flow import cond, foreach, while_loop  # noqa: F401


def rand_zipfian(true_classes, num_sampled, range_max):
    """Symbol form of ``mx.nd.contrib.rand_zipfian``: ``num_sampled`` classes
    drawn from the approximately Zipfian distribution over ``[0, range_max)``
    and the expected counts of ``true_classes`` and of the draws."""
    import math
    from .random import uniform
    log_range = math.log(range_max + 1)
    rand = uniform(0, log_range, shape=(num_sampled,), dtype="float64")
    # exp(rand) - 1 lies in [0, range_max); the clip guards the rounding at the ends
    from .. import symbol as _ns
    sampled_classes = _ns.clip(rand.exp() - 1, a_min=0, a_max=range_max - 1).astype("int64")
    true_cls = true_classes.astype("float64")
    expected_count_true = ((true_cls + 2.0) / (true_cls + 1.0)).log() / log_range * num_sampled
    sampled_cls = sampled_classes.astype("float64")
    expected_count_sampled = ((sampled_cls + 2.0) / (sampled_cls + 1.0)).log() / log_range * num_sampled
    return sampled_classes, expected_count_true, expected_count_sampled
