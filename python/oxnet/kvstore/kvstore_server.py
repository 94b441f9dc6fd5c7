"""``mx.kvstore.kvstore_server``: MXNet's parameter-server process
(``KVStoreServer``, started by ``DMLC_ROLE=server``). oxnet's distributed
store runs on MPI collectives without servers (see docs/distributed.md), so
there is no server to start: every name raises an MXNetError."""

from .._absent import not_provided

__getattr__ = not_provided(__name__, "oxnet's dist_sync store has no parameter servers: every worker keeps the "
                                     "values and MPI collectives keep them equal. Start workers only, with "
                                     "`python -m oxnet.tools.launch -n N ...` or mpirun")
