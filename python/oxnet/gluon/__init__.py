"""Gluon: MXNet 1.x's imperative and hybrid model API (``mx.gluon``).

Blocks and HybridBlocks hold Parameters; ``hybridize()`` runs a block as one
cached graph (oxnet's graph layer). Initializers, optimizers and parameter
files are oxnet's Rust ``oxnet-nn`` crate; this package keeps only what must
be Python: the classes users subclass.
"""

from .parameter import Parameter, Constant, ParameterDict, DeferredInitializationError, tensor_types
from .block import Block, HybridBlock, SymbolBlock
from . import nn, rnn, loss
from .trainer import Trainer
from . import data, utils  # noqa: E402
from . import contrib  # noqa: E402
from . import model_zoo  # noqa: E402
