"""``mx.libinfo``: where the engine's library and C/C++ headers are, and
the version of MXNet's API that oxnet follows."""

import glob
import os

__all__ = ["find_lib_path", "find_include_path", "find_conf_path", "__version__"]

#: the MXNet release whose API oxnet implements
__version__ = "1.9.1"

_HERE = os.path.dirname(os.path.abspath(__file__))


def find_lib_path(prefix="libmxnet"):
    """Paths of the engine's shared library: ``MXNET_LIBRARY_PATH`` when it
    names a file, else the compiled extension module of this package
    (oxnet's engine; ``prefix`` is accepted as in MXNet)."""
    del prefix
    from_env = os.environ.get("MXNET_LIBRARY_PATH")
    if from_env and os.path.isfile(from_env):
        return [from_env]
    found = sorted(glob.glob(os.path.join(_HERE, "_oxnet*.so")) + glob.glob(os.path.join(_HERE, "_oxnet*.pyd")))
    if not found:
        raise RuntimeError(f"Cannot find the oxnet engine library (_oxnet*.so) in {_HERE}; reinstall oxnet")
    return found


def find_include_path():
    """The folder holding oxnet's C/C++ extension headers (``oxnet/lib_api.h``,
    ``oxnet/oxnet_ext.h``): ``MXNET_INCLUDE_PATH``, the package's
    ``include`` folder, or the source checkout's ``include``."""
    candidates = [os.environ.get("MXNET_INCLUDE_PATH"), os.path.join(_HERE, "include"),
                  os.path.normpath(os.path.join(_HERE, "..", "..", "include"))]
    for path in candidates:
        if path and os.path.isfile(os.path.join(path, "oxnet", "lib_api.h")):
            return path
    raise RuntimeError("Cannot find the oxnet include path (a folder holding oxnet/lib_api.h); searched "
                       + ", ".join(p for p in candidates if p) + ". Set MXNET_INCLUDE_PATH to it")


def find_conf_path(prefix="tvmop"):
    """MXNet's TVM operator configuration: oxnet has no TVM operators."""
    raise RuntimeError(f"find_conf_path({prefix!r}): oxnet has no TVM-generated operators, so no {prefix} "
                       "configuration file")
