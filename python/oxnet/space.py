"""``mx.space``: the configuration spaces MXNet used to tune its TVM
operators (AutoTVM), which oxnet does not have: every name raises an
MXNetError."""

from ._absent import not_provided

__getattr__ = not_provided(__name__, "it describes AutoTVM tuning spaces for TVM-generated operators, which oxnet "
                                     "does not have")
