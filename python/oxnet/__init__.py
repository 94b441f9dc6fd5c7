"""oxnet: a deep-learning engine in Rust where custom operators behave like built-ins.

The API follows Apache MXNet 1.x, so code written for it runs with
``import oxnet as mx``::

    import oxnet as mx
    x = mx.nd.array([0, 1, 2, 3])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.sigmoid(x)
    y.backward()
"""

from ._rank_threads import divide_cores as _divide_cores
_divide_cores()  # ranks of an MPI job on one machine share its cores (before the thread pool starts)
from . import base, context, ndarray, autograd, operator, random, test_utils, library  # noqa: E402
from . import name, attribute, symbol, executor
from .base import MXNetError
from .context import Context, cpu, gpu, cpu_pinned, current_context, num_gpus
from .operator import customop
from .attribute import AttrScope

nd = ndarray
sym = symbol

__version__ = "0.1.0"

__all__ = [
    "base", "context", "ndarray", "nd", "autograd", "operator", "random", "test_utils", "library",
    "MXNetError", "Context", "cpu", "gpu", "cpu_pinned", "current_context", "num_gpus", "customop",
    "name", "attribute", "AttrScope", "symbol", "sym", "executor",
]
from . import visualization; viz = visualization; __all__ += ["visualization", "viz"]  # noqa: E402,E702
from . import metric; __all__ += ["metric"]  # noqa: E402,E702
from . import initializer; init = initializer; __all__ += ["initializer", "init"]  # noqa: E402,E702
from . import optimizer, lr_scheduler; __all__ += ["optimizer", "lr_scheduler"]  # noqa: E402,E702
from . import gluon; __all__ += ["gluon"]  # noqa: E402,E702
from . import util, runtime, engine  # noqa: E402
from .util import (  # noqa: E402
    is_np_shape, set_np_shape, np_shape, use_np_shape, is_np_array, np_array, use_np_array, use_np,
)
__all__ += ["util", "runtime", "engine", "is_np_shape", "set_np_shape", "np_shape", "use_np_shape",
            "is_np_array", "np_array", "use_np_array", "use_np"]
from . import io; __all__ += ["io"]  # noqa: E402,E702
from . import model, callback, module; mod = module; __all__ += ["model", "callback", "module", "mod"]  # noqa: E402,E702,E501
from . import distributed; __all__ += ["distributed"]  # noqa: E402,E702
from . import kvstore; kv = kvstore; __all__ += ["kvstore", "kv"]  # noqa: E402,E702
from . import contrib; __all__ += ["contrib"]  # noqa: E402,E702
from . import rnn; __all__ += ["rnn"]  # noqa: E402,E702
from . import rtc; __all__ += ["rtc"]  # noqa: E402,E702
from . import recordio, image; img = image; __all__ += ["recordio", "image", "img"]  # noqa: E402,E702
from . import monitor; mon = monitor; __all__ += ["monitor", "mon"]  # noqa: E402,E702
from . import profiler; __all__ += ["profiler"]  # noqa: E402,E702

# MXNet 1.9.1 modules loaded on first use (``mx.onnx``, ...): their imports
# cost time, or they exist to say what oxnet does not offer (``mx.np``).
_LAZY = {"np": "numpy", "npx": "numpy_extension", "numpy": "numpy", "numpy_extension": "numpy_extension",
         "onnx": "onnx", "notebook": "notebook", "log": "log", "registry": "registry", "error": "error",
         "libinfo": "libinfo", "misc": "misc", "executor_manager": "executor_manager", "torch": "torch",
         "tvmop": "tvmop", "space": "space", "ndarray_doc": "ndarray_doc",
         "symbol_doc": "symbol_doc"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return importlib.import_module(f"{__name__}.{_LAZY[name]}")
    raise AttributeError(f"module 'oxnet' has no attribute '{name}'")
