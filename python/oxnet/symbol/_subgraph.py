"""Executors that partition their graph when ``MXNET_SUBGRAPH_BACKEND``
names a subgraph backend (as MXNet 1.9.1's ``bind`` and ``simple_bind``).

The variable is read at each bind. Unset, empty or ``NONE``: no
partitioning. ``default`` / ``default_v2``: the graph is partitioned by the
operator names set for that name with ``MXSetSubgraphPropertyOpNames``
(none set: nothing is selected). Another registered ``optimize_for``
backend (a loaded library's partitioner) partitions with no options. Any
other name is an error, as in MXNet. The executor keeps the original
symbol for its argument, aux and output names; the partitioned graph has
the same inputs in the same order.
"""

import os

from .. import _oxnet
from ..base import MXNetError

_BY_OP_NAMES = ("default", "default_v2")


def executor_graph(sym, function):
    """The graph handle ``function`` (``bind``/``simple_bind``) binds for ``sym``."""
    backend = os.environ.get("MXNET_SUBGRAPH_BACKEND", "")
    if not backend or backend == "NONE":
        return sym._h
    if backend in _BY_OP_NAMES:
        names = _oxnet.subgraph_executor_op_names(backend)
        if not names:
            return sym._h
        return _oxnet.subgraph_build_by_op_names(sym._h, backend, names, False)
    registered = _oxnet.backend_names()
    if backend in registered:
        handle, _params = _oxnet.sym_optimize_for(sym._h, backend, [])
        return handle
    raise MXNetError(
        f"{function}: MXNET_SUBGRAPH_BACKEND={backend!r} names no subgraph backend "
        f"(registered: {', '.join(registered)}); unset it or set it to NONE to bind without partitioning")
