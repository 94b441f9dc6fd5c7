"""``mx.test_utils``' checks of optimizers, symbols and Gluon blocks, the
sparse-array makers (which say oxnet has no sparse storage), timing and
downloads (imported from :mod:`oxnet.test_utils`)."""

import copy
import json
import logging
import os
import time
import urllib.request

import numpy as np

from ._random_data import _SparseStorageNotSupported
from .test_utils import assert_almost_equal, compare_ndarray_tuple, default_context


def compare_optimizer(opt1, opt2, shape, dtype, w_stype="default", g_stype="default",
                      rtol=1e-4, atol=1e-5, compare_states=True, ntensors=1):
    """Runs one update of ``opt1`` and ``opt2`` from the same random weights,
    gradients and states, and compares states and weights. With a list of
    shapes and ``ntensors``, ``opt2`` updates all tensors in one
    (multi-tensor) call and ``opt1`` one by one."""
    from . import random

    if w_stype != "default" or g_stype != "default":
        raise _SparseStorageNotSupported(
            f"compare_optimizer: storage types {w_stype!r}/{g_stype!r}: oxnet has no sparse storage")
    ctx = default_context()
    if not isinstance(shape, list):
        assert ntensors == 1, "a single shape goes with ntensors=1"
        w2 = random.uniform(shape=shape, ctx=ctx, dtype=dtype)
        w1 = w2.copyto(ctx)
        g2 = random.uniform(shape=shape, ctx=ctx, dtype=dtype)
        g1 = g2.copyto(ctx)
        state1 = opt1.create_state_multi_precision(0, w1)
        state2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(0, w1, g1, state1)
        opt2.update_multi_precision(0, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    w1 = tuple(random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape[:ntensors])
    g1 = tuple(random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape[:ntensors])
    w2, g2 = copy.deepcopy(w1), copy.deepcopy(g1)
    state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)


def same_symbol_structure(sym1, sym2):
    """Whether the two symbols' graphs have the same operator at every node index."""
    nodes1 = json.loads(sym1.tojson())["nodes"]
    nodes2 = json.loads(sym2.tojson())["nodes"]
    return all(a["op"] == b["op"] for a, b in zip(nodes1, nodes2))


def check_gluon_hybridize_consistency(net_builder, data_l, numpy_func=None, test_grad=True, rtol=1e-4, atol=1e-4):
    """Builds the HybridBlock ``net_builder(prefix='net_')`` four ways
    (imperative and hybridized, with and without autograd), all from the
    first build's parameter values, and checks that outputs (and input
    gradients) agree; with ``numpy_func``, also against it."""
    from . import autograd, init

    saved = {}
    for hybridize in (False, True):
        for use_autograd in ((False, True) if test_grad else (False,)):
            net = net_builder(prefix="net_")
            if "params" in saved:
                net.initialize(init.Load(saved["params"]))
            else:
                net.initialize()
            if hybridize:
                net.hybridize()
            inputs = [x.copy() for x in data_l]
            if use_autograd:
                for x in inputs:
                    x.attach_grad()
                with autograd.record():
                    out = net(*inputs)
                out.backward(out)
            else:
                out = net(*inputs)
            saved.setdefault("params", {k: v.data().copy() for k, v in net.collect_params().items()})
            if "out" in saved:
                assert_almost_equal(out.asnumpy(), saved["out"], rtol=rtol, atol=atol)
            else:
                saved["out"] = out.asnumpy()
            if use_autograd:
                grads = [x.grad.asnumpy() for x in inputs]
                for got, want in zip(grads, saved.setdefault("grads", grads)):
                    assert_almost_equal(got, want, rtol=rtol, atol=atol)
    if numpy_func is not None:
        assert_almost_equal(saved["out"], numpy_func(*[x.asnumpy() for x in data_l]), rtol=rtol, atol=atol)


def check_speed(sym, location=None, ctx=None, N=20, grad_req=None, typ="whole", **kwargs):
    """Seconds per run of ``sym`` bound on ``ctx``: ``typ='whole'`` times
    forward and backward, ``'forward'`` forward alone. ``location`` gives
    the argument values (random normal where missing); ``kwargs`` the shapes."""
    from .ndarray import array

    ctx = ctx if ctx is not None else default_context()
    if grad_req is None:
        grad_req = "write"
    if location is None:
        exe = sym.simple_bind(grad_req=grad_req, ctx=ctx, **kwargs)
        location = {k: np.random.normal(size=arr.shape, scale=1.0) for k, arr in exe.arg_dict.items()}
    else:
        assert isinstance(location, dict), f"location must be a dict of arrays, got {type(location)}"
        exe = sym.simple_bind(grad_req=grad_req, ctx=ctx, **{k: v.shape for k, v in location.items()})
    for name, value in location.items():
        exe.arg_dict[name][:] = array(value) if isinstance(value, np.ndarray) else value
    if typ == "whole":
        step = lambda: (exe.forward(is_train=True), exe.backward(out_grads=exe.outputs))  # noqa: E731
    elif typ == "forward":
        step = lambda: exe.forward(is_train=False)  # noqa: E731
    else:
        raise ValueError(f"typ can only be 'whole' or 'forward', got {typ!r}")
    step()
    for out in exe.outputs:
        out.wait_to_read()
    tic = time.time()
    for _ in range(N):
        step()
    for out in exe.outputs:
        out.wait_to_read()
    return (time.time() - tic) / N


def download(url, fname=None, dirname=None, overwrite=False, retries=5):
    """Downloads ``url`` to ``dirname/fname`` (default: the URL's last part
    in the current directory), retrying ``retries`` times; returns the path.
    An existing file is kept unless ``overwrite``."""
    if fname is None:
        fname = url.split("/")[-1]
    if dirname is not None:
        os.makedirs(dirname, exist_ok=True)
        fname = os.path.join(dirname, fname)
    if not overwrite and os.path.exists(fname):
        logging.info("%s exists, skipping download", fname)
        return fname
    if os.path.dirname(fname):
        os.makedirs(os.path.dirname(fname), exist_ok=True)
    for attempt in range(retries, 0, -1):
        try:
            with urllib.request.urlopen(url) as response, open(fname, "wb") as out:
                out.write(response.read())
            logging.info("downloaded %s into %s", url, fname)
            return fname
        except Exception as e:  # pylint: disable=broad-except
            if attempt <= 1:
                raise
            logging.warning("download of %s failed (%s), %d more attempts", url, e, attempt - 1)
    return fname


def _no_sparse(name):
    def maker(*_args, **_kwargs):
        raise _SparseStorageNotSupported(f"{name}: oxnet has no sparse storage, only dense arrays")

    maker.__name__ = name
    maker.__doc__ = f"MXNet's ``{name}`` builds sparse arrays, which oxnet does not have: it raises."
    return maker


rand_sparse_ndarray = _no_sparse("rand_sparse_ndarray")
create_sparse_array = _no_sparse("create_sparse_array")
create_sparse_array_zd = _no_sparse("create_sparse_array_zd")
