"""``mx.test_utils``' checks of symbols and executors:
``check_symbolic_forward``, ``check_symbolic_backward``, ``check_consistency``,
``simple_forward`` and the symbol case of ``check_numeric_gradient``
(imported from :mod:`oxnet.test_utils`, where users find them)."""

import numpy as np

from .ndarray import array
from .test_utils import _np, assert_almost_equal, default_context


def _arg_dict(sym, location, what):
    """``location`` (a list in ``list_arguments`` order or a dict) as a dict
    of numpy arrays by argument name."""
    names = sym.list_arguments()
    if isinstance(location, dict):
        missing = [n for n in names if n not in location]
        if missing:
            raise ValueError(f"{what}: no value for argument(s) {', '.join(missing)}")
        return {n: _np(location[n]) for n in names}
    location = list(location)
    if len(location) != len(names):
        raise ValueError(f"{what}: {len(location)} arrays for {len(names)} arguments ({', '.join(names)})")
    return {n: _np(v) for n, v in zip(names, location)}


def _aux_dict(sym, aux_states):
    names = sym.list_auxiliary_states()
    if aux_states is None:
        return {}
    if isinstance(aux_states, dict):
        return {n: _np(aux_states[n]) for n in names}
    return {n: _np(v) for n, v in zip(names, aux_states)}


def _bind(sym, ctx, args, aux, grad_req="null", dtype=None, grads=None):
    ctx = ctx or default_context()
    # dtype "asnumpy" (as MXNet's): each array keeps its own dtype
    keep = dtype is None or (isinstance(dtype, str) and dtype == "asnumpy")
    cast = (lambda a: a) if keep else (lambda a: a.astype(dtype))
    arg_nd = {k: array(cast(v), ctx=ctx, dtype=cast(v).dtype) for k, v in args.items()}
    aux_nd = {k: array(cast(v), ctx=ctx, dtype=cast(v).dtype) for k, v in aux.items()}
    return sym.bind(ctx, arg_nd, args_grad=grads, grad_req=grad_req, aux_states=aux_nd or None), arg_nd


def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """Binds ``sym`` to the numpy ``inputs`` (by argument name) and returns
    its output as numpy (a list when it has several)."""
    exe, _ = _bind(sym, ctx, {k: _np(v) for k, v in inputs.items()}, {})
    outputs = [o.asnumpy() for o in exe.forward(is_train=is_train)]
    return outputs[0] if len(outputs) == 1 else outputs


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None, ctx=None,
                           equal_nan=False, dtype=np.float32):
    """Runs ``sym`` forward (inference mode) on ``location`` and compares
    its outputs with ``expected`` (a list, or a dict by output name).
    Returns the outputs as numpy arrays."""
    args = _arg_dict(sym, location, "check_symbolic_forward")
    exe, _ = _bind(sym, ctx, args, _aux_dict(sym, aux_states), dtype=dtype)
    outputs = exe.forward(is_train=False)
    names = sym.list_outputs()
    if isinstance(expected, dict):
        expected = [expected[n] for n in names]
    if len(expected) != len(outputs):
        raise ValueError(f"check_symbolic_forward: {len(expected)} expected arrays for {len(outputs)} outputs")
    for name, out, want in zip(names, outputs, expected):
        assert_almost_equal(out, want, rtol, atol, names=(f"EXPECTED_{name}", f"FORWARD_{name}"),
                            equal_nan=equal_nan)
    return [o.asnumpy() for o in outputs]


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None, aux_states=None,
                            grad_req="write", ctx=None, grad_stypes=None, equal_nan=False, dtype=np.float32):
    """Runs ``sym`` forward (train mode) and backward with ``out_grads`` and
    compares the argument gradients with ``expected`` (a list in argument
    order, or a dict by name, which may leave arguments out). With
    ``grad_req='add'`` the gradient buffers start from random values, which
    the expectation then includes. Returns the gradients by name."""
    del grad_stypes
    args = _arg_dict(sym, location, "check_symbolic_backward")
    names = sym.list_arguments()
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(names, expected))
    reqs = grad_req if isinstance(grad_req, dict) else {n: grad_req for n in names}
    if isinstance(grad_req, (list, tuple)):
        reqs = dict(zip(names, grad_req))
    # dtype "asnumpy" (as MXNet's): each gradient takes its argument's
    # dtype and each head gradient keeps its own
    keep = isinstance(dtype, str) and dtype == "asnumpy"
    arg_dtype = {n: args[n].dtype if keep else np.dtype(dtype) for n in names}
    rng = np.random.default_rng(0)
    start = {n: rng.normal(size=args[n].shape).astype(arg_dtype[n]) if reqs.get(n) == "add"
             else np.zeros(args[n].shape, dtype=arg_dtype[n]) for n in names}
    ctx = ctx or default_context()
    grads = {n: array(start[n], ctx=ctx, dtype=arg_dtype[n]) for n in names if reqs.get(n, "null") != "null"}
    exe, _ = _bind(sym, ctx, args, _aux_dict(sym, aux_states), grad_req=reqs, dtype=dtype, grads=grads)
    exe.forward(is_train=True)
    if isinstance(out_grads, dict):
        out_grads = [out_grads[n] for n in sym.list_outputs()]
    elif out_grads is not None and not isinstance(out_grads, (list, tuple)):
        out_grads = [out_grads]
    head = [_np(g) if keep else _np(g).astype(dtype) for g in out_grads or []]
    exe.backward(None if out_grads is None else [array(g, ctx=ctx, dtype=g.dtype) for g in head])
    got = {n: g.asnumpy() for n, g in grads.items()}
    for n, want in expected.items():
        if reqs.get(n, "null") == "null":
            continue
        want = _np(want)
        if reqs[n] == "add":
            want = want + start[n]
        assert_almost_equal(got[n], want, rtol, atol, names=(f"EXPECTED_{n}", f"BACKWARD_{n}"),
                            equal_nan=equal_nan)
    return got


def _check_symbol_numeric_gradient(sym, location, aux_states, numeric_eps, rtol, atol, grad_nodes,
                                   use_forward_train, ctx):
    """``check_numeric_gradient`` for a Symbol: gradients from its executor
    (float64) against central differences of ``sum(output * head)``."""
    args = {k: v.astype(np.float64) for k, v in _arg_dict(sym, location, "check_numeric_gradient").items()}
    aux = {k: v.astype(np.float64) for k, v in _aux_dict(sym, aux_states).items()}
    names = sym.list_arguments()
    nodes = names if grad_nodes is None else list(grad_nodes)
    # a dict gives each node's grad_req, as in MXNet: 'add' must add to what
    # the buffer held, 'null' must leave it as it was
    reqs = dict(grad_nodes) if isinstance(grad_nodes, dict) else {n: "write" for n in nodes}
    nodes = list(reqs)
    ctx = ctx or default_context()
    fill = np.random.default_rng(1)
    start = {n: fill.normal(0, 0.01, size=args[n].shape) if reqs[n] != "write" else np.zeros(args[n].shape)
             for n in nodes}
    grads = {n: array(start[n], ctx=ctx, dtype=np.float64) for n in nodes}
    exe, arg_nd = _bind(sym, ctx, args, aux, grad_req=reqs, grads=grads)
    outputs = exe.forward(is_train=use_forward_train)
    rng = np.random.default_rng(0)
    heads = [rng.uniform(0.5, 1.5, size=o.shape) for o in outputs]
    exe.backward([array(h, ctx=ctx, dtype=np.float64) for h in heads])
    eps = numeric_eps if numeric_eps is not None else 1e-4

    def objective():
        outs = exe.forward(is_train=use_forward_train)
        return sum(float((o.asnumpy().astype(np.float64) * h).sum()) for o, h in zip(outs, heads))

    worst = 0.0
    for n in nodes:
        if reqs[n] == "null":
            np.testing.assert_array_equal(grads[n].asnumpy(), start[n], err_msg=f"gradient of {n} with grad_req null")
            continue
        base = args[n].copy()
        numeric = np.zeros_like(base)
        flat = base.reshape(-1)
        for i in range(flat.size):
            for sign in (1, -1):
                moved = flat.copy()
                moved[i] += sign * eps
                arg_nd[n][:] = moved.reshape(base.shape)
                numeric.reshape(-1)[i] += sign * objective() / (2 * eps)
        arg_nd[n][:] = base
        analytic = grads[n].asnumpy() - start[n]
        np.testing.assert_allclose(analytic, numeric, rtol=rtol if rtol is not None else 1e-2,
                                   atol=atol if atol is not None else 1e-4,
                                   err_msg=f"gradient of {n}: executor vs numeric")
        worst = max(worst, float(np.max(np.abs(analytic - numeric), initial=0.0)))
    return worst


def check_consistency(sym, ctx_list, scale=1.0, grad_req="write", arg_params=None, aux_params=None, tol=None,
                      raise_on_err=True, ground_truth=None, equal_nan=False, use_uniform=False,
                      rand_type=np.float64):
    """Runs ``sym`` once per configuration in ``ctx_list`` (dicts with
    ``ctx``, input shapes and an optional ``type_dict``) on the same random
    inputs and output gradients, and compares every configuration's outputs
    and gradients with the most precise one's. ``sym`` may also be a list of
    symbols, one per configuration (as in MXNet: equivalent symbols written
    differently), compared output by output. Returns the ground truth
    ``{name: numpy array}`` (outputs under the first symbol's output names,
    gradients under ``<arg>_grad``)."""
    del use_uniform
    if tol is None:
        tol = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-5,
               np.dtype(np.uint8): 0, np.dtype(np.int32): 0, np.dtype(np.int64): 0}
    elif isinstance(tol, (int, float)):
        tol = {np.dtype(t): tol for t in (np.float16, np.float32, np.float64, np.uint8, np.int32, np.int64)}
    rng = np.random.default_rng(0)
    syms = list(sym) if isinstance(sym, (list, tuple)) else [sym] * len(ctx_list)
    if len(syms) != len(ctx_list):
        raise ValueError(f"check_consistency: {len(syms)} symbols for {len(ctx_list)} configurations")
    out_names = syms[0].list_outputs()
    runs = []
    for s_, config in zip(syms, ctx_list):
        config = dict(config)
        ctx = config.pop("ctx", None) or default_context()
        type_dict = config.pop("type_dict", {})
        exe = s_.simple_bind(ctx, grad_req=grad_req, type_dict=type_dict, **config)
        runs.append((exe, type_dict))
    first = runs[0][0]
    # as MXNet: the arguments arg_params leaves out get random values
    arg_params = dict(arg_params or {})
    for n, a in first.arg_dict.items():
        if n not in arg_params:
            arg_params[n] = rng.normal(size=a.shape).astype(rand_type) * scale
    if aux_params is None:
        aux_params = {n: np.zeros(a.shape, dtype=rand_type) for n, a in first.aux_dict.items()}
    results = []
    for exe, _ in runs:
        for n, a in exe.arg_dict.items():
            a[:] = arg_params[n].astype(np.float64)
        for n, a in exe.aux_dict.items():
            a[:] = aux_params[n].astype(np.float64)
        outs = exe.forward(is_train=True)
        result = {name: o.asnumpy() for name, o in zip(out_names, outs)}
        if grad_req != "null":
            heads = [np.random.default_rng(1).normal(size=o.shape) for o in outs]
            exe.backward([array(h.astype(o.asnumpy().dtype), dtype=o.asnumpy().dtype) for h, o in zip(heads, outs)])
            result.update({f"{n}_grad": g.asnumpy() for n, g in exe.grad_dict.items()})
        results.append(result)
    precision = [max(np.dtype(v.dtype).itemsize for v in r.values()) for r in results]
    gt = ground_truth if ground_truth is not None else results[int(np.argmax(precision))]
    for i, result in enumerate(results):
        for name, value in result.items():
            t = tol.get(np.dtype(value.dtype), 1e-3)
            try:
                assert_almost_equal(value, gt[name], rtol=t, atol=t, equal_nan=equal_nan,
                                    names=(f"config {i} {name}", f"ground truth {name}"))
            except AssertionError:
                if raise_on_err:
                    raise
                print(f"check_consistency: configuration {i} differs in {name}")
    return gt
