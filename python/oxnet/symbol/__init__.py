"""``oxnet.symbol`` (``mx.sym``): MXNet 1.x's symbolic API over oxnet's
graph layer::

    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=10, name="fc")
    net = mx.sym.softmax(fc)
    net.list_arguments()                  # ['data', 'fc_weight', 'fc_bias']
    exe = net.simple_bind(mx.cpu(), data=(4, 3))
    exe.forward(is_train=True, data=mx.nd.ones((4, 3)))

One function per registry operator (built-in, custom, or loaded from a
library) is generated here, as in ``mx.nd``.
"""

from .symbol import Symbol, var, Variable, Group, load, load_json, fromjson, trace
from ._ops import refresh as _refresh_ops
from . import contrib, image, linalg, _internal, random
from . import op, sparse  # noqa: E402  (MXNet's module paths: mx.nd.op.<name>, mx.nd.sparse)
from ._fill import zeros, ones, full, arange, eye, linspace

__all__ = ["Symbol", "var", "Variable", "Group", "load", "load_json", "fromjson", "trace",
           "zeros", "ones", "full", "arange", "eye", "linspace"]

_refresh_ops(globals())
random.refresh(vars(random), globals())

from ._arith import NAMES as _ARITH, pow, power, maximum, minimum, hypot  # noqa: E402  pylint: disable=redefined-builtin
from ._ops import keep as _keep_ops  # noqa: E402

_keep_ops(_ARITH)


def histogram(a, bins=10, range=None):  # pylint: disable=redefined-builtin
    """The histogram of ``a`` (flattened) as a two-output symbol: ``bins`` is
    a bin count over ``range`` or a Symbol of bin edges, as MXNet's."""
    if isinstance(bins, Symbol):
        return _internal._histogram(data=a, bins=bins)
    if isinstance(bins, int):
        if range is None:
            raise ValueError("histogram: a bin count needs a range in symbolic mode")
        return _internal._histogram(data=a, bin_cnt=bins, range=tuple(range))
    raise ValueError("bins argument should be either an integer or an Symbol")
