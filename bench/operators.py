"""The operator set against numpy: sorting, top-k, gather_nd and the
element-wise maths of the operator-set work, each on 1M float32 elements,
oxnet and numpy timed in the same process; MXNet 1.9.1 and PyTorch beside
them when their venvs exist.

    bash bench/operators.sh                 # release build + side venvs, then this
    .venv/bin/python bench/operators.py     # oxnet and numpy only, or with the venvs

The work is the same for every engine: sort 1M values (``np.sort``); the 10
largest, sorted (``np.argpartition`` then a sort of those 10); the order of
1M values (``np.argsort``); 1M reads of a (1000, 1000) matrix at index pairs
(``m[i, j]``, gather_nd); and each element-wise function over 1M values in
its domain (numpy's function, or the numpy expression MXNet documents for
it: ``fix`` is ``np.fix``, ``rcbrt`` ``1 / np.cbrt``, ``softsign``
``x / (1 + |x|)``; ``gamma``, ``gammaln`` and ``erfinv`` from scipy when it
is installed). Each figure is the median of timed batches in microseconds;
the table gives numpy/oxnet (above 1: oxnet is faster).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import side_by_side  # noqa: E402
from python_ops import timeit  # noqa: E402

N = 1 << 20
K = 10
SEED = 0


# name -> (domain low, domain high, numpy expression); the oxnet/MXNet
# function is mx.nd.<name> unless ENGINE_NAMES says otherwise
UNARY = {
    "tan": (-1.5, 1.5, lambda np, x: np.tan(x)),
    "arcsin": (-1, 1, lambda np, x: np.arcsin(x)),
    "arccos": (-1, 1, lambda np, x: np.arccos(x)),
    "arctan": (-5, 5, lambda np, x: np.arctan(x)),
    "sinh": (-5, 5, lambda np, x: np.sinh(x)),
    "cosh": (-5, 5, lambda np, x: np.cosh(x)),
    "arcsinh": (-5, 5, lambda np, x: np.arcsinh(x)),
    "arccosh": (1, 5, lambda np, x: np.arccosh(x)),
    "arctanh": (-0.99, 0.99, lambda np, x: np.arctanh(x)),
    "degrees": (-5, 5, lambda np, x: np.degrees(x)),
    "radians": (-360, 360, lambda np, x: np.radians(x)),
    "floor": (-5, 5, lambda np, x: np.floor(x)),
    "ceil": (-5, 5, lambda np, x: np.ceil(x)),
    "round": (-5, 5, lambda np, x: np.round(x)),
    "rint": (-5, 5, lambda np, x: np.rint(x)),
    "fix": (-5, 5, lambda np, x: np.fix(x)),
    "trunc": (-5, 5, lambda np, x: np.trunc(x)),
    "cbrt": (-5, 5, lambda np, x: np.cbrt(x)),
    "rcbrt": (0.1, 5, lambda np, x: 1 / np.cbrt(x)),
    "log2": (0.1, 5, lambda np, x: np.log2(x)),
    "log10": (0.1, 5, lambda np, x: np.log10(x)),
    "softsign": (-5, 5, lambda np, x: x / (1 + np.abs(x))),
    "logical_not": (-1, 1, lambda np, x: np.logical_not(x)),
}
SCIPY_UNARY = {
    "gamma": (0.1, 5, "gamma"),
    "gammaln": (0.1, 5, "gammaln"),
    "erfinv": (-0.99, 0.99, "erfinv"),
}
BINARY = {
    "broadcast_mod": (lambda np, a, b: np.mod(a, b)),
    "broadcast_hypot": (lambda np, a, b: np.hypot(a, b)),
    "broadcast_logical_and": (lambda np, a, b: np.logical_and(a, b)),
}


def inputs(np):
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal(N).astype(np.float32)
    m = rng.standard_normal((1000, 1000)).astype(np.float32)
    idx = rng.integers(0, 1000, size=(2, N)).astype(np.int64)
    return rng, x, m, idx


def numpy_figures():
    """numpy's figures (in the oxnet venv, with oxnet's numpy)."""
    import numpy as np

    rng, x, m, idx = inputs(np)
    f = {
        "sort": timeit(lambda: np.sort(x)),
        "topk": timeit(lambda: np.sort(x[np.argpartition(x, -K)[-K:]])),
        "argsort": timeit(lambda: np.argsort(x)),
        "gather_nd": timeit(lambda: m[idx[0], idx[1]]),
    }
    for name, (lo, hi, fn) in UNARY.items():
        u = rng.uniform(lo, hi, N).astype(np.float32)
        f[name] = timeit(lambda: fn(np, u))
    try:
        import scipy.special as sp

        for name, (lo, hi, fn_name) in SCIPY_UNARY.items():
            u = rng.uniform(lo, hi, N).astype(np.float32)
            f[name] = timeit(lambda: getattr(sp, fn_name)(u))
    except ImportError:
        pass
    a, b = rng.uniform(1, 5, N).astype(np.float32), rng.uniform(1, 5, N).astype(np.float32)
    for name, fn in BINARY.items():
        f[name] = timeit(lambda: fn(np, a, b))
    return f


def engine_figures(mx, prefix):
    """Figures of ``mx`` (oxnet or MXNet) for the same work."""
    import numpy as np

    nd = mx.nd
    rng, x, m, idx = inputs(np)
    X, M, I = nd.array(x), nd.array(m), nd.array(idx, dtype="int64")
    f = {
        "sort": timeit(lambda: nd.sort(X).wait_to_read()),
        "topk": timeit(lambda: nd.topk(X, k=K, ret_typ="value").wait_to_read()),
        "argsort": timeit(lambda: nd.argsort(X).wait_to_read()),
        "gather_nd": timeit(lambda: nd.gather_nd(M, I).wait_to_read()),
    }
    domains = [(name, lo, hi) for name, (lo, hi, _) in UNARY.items()]
    domains += [(name, lo, hi) for name, (lo, hi, _) in SCIPY_UNARY.items()]
    for name, lo, hi in domains:
        u = nd.array(rng.uniform(lo, hi, N).astype(np.float32))
        fn = getattr(nd, name)
        f[name] = timeit(lambda: fn(u).wait_to_read())
    a, b = nd.array(rng.uniform(1, 5, N).astype(np.float32)), nd.array(rng.uniform(1, 5, N).astype(np.float32))
    for name in BINARY:
        fn = getattr(nd, name)
        f[name] = timeit(lambda: fn(a, b).wait_to_read())
    return {prefix + k: v for k, v in f.items()}


def oxnet_engine():
    import oxnet

    figures = engine_figures(oxnet, "oxnet:")
    figures.update({"numpy:" + k: v for k, v in numpy_figures().items()})
    return figures


def mxnet_engine():
    import mxnet

    return engine_figures(mxnet, "mxnet:")


def torch_engine():
    import numpy as np
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    rng, x, m, idx = inputs(np)
    X, M = torch.from_numpy(x), torch.from_numpy(m)
    I0, I1 = torch.from_numpy(idx[0]), torch.from_numpy(idx[1])
    return {
        "torch:sort": timeit(lambda: torch.sort(X)),
        "torch:topk": timeit(lambda: torch.topk(X, K)),
        "torch:argsort": timeit(lambda: torch.argsort(X)),
        "torch:gather_nd": timeit(lambda: M[I0, I1]),
    }


def main():
    figures = side_by_side.main(
        __file__,
        {"oxnet": (".venv", oxnet_engine), "pytorch": (".venv-bench", torch_engine),
         "mxnet": (".venv-mxnet", mxnet_engine)},
    )
    if figures is None:
        return
    names = ["sort", "topk", "argsort", "gather_nd"] + list(UNARY) + list(SCIPY_UNARY) + list(BINARY)
    print(f"{'operation (1M float32)':<24}{'oxnet µs':>10}{'numpy µs':>10}{'numpy/oxnet':>12}"
          f"{'MXNet µs':>10}{'PyTorch µs':>11}")
    for name in names:
        ox, npy = figures.get("oxnet:" + name), figures.get("numpy:" + name)
        if ox is None:
            continue
        mxv, th = figures.get("mxnet:" + name), figures.get("torch:" + name)
        ratio = f"{npy / ox:12.2f}" if npy else f"{'-':>12}"
        print(f"{name:<24}{ox:10.0f}{(npy or float('nan')):10.0f}{ratio}"
              f"{(mxv or float('nan')):10.0f}{(th or float('nan')):11.0f}")


if __name__ == "__main__":
    main()
