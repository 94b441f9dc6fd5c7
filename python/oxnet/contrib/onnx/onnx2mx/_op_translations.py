"""Converters from ONNX operators (opsets 11-13) to oxnet symbols, one per ONNX operator.

A converter returns a Symbol, a list of them (one per ONNX output), or a numpy array when
every input is known at import time (constant folding of shape computations)."""
# pylint: disable=missing-function-docstring,unused-argument

import numpy as np

from .... import symbol as S
from .import_onnx import register


def _all_const(g, ins):
    return all(i == "" or g.is_const(i) for i in ins)


def _axes_of(g, ins, attrs, pos):
    """Axes from the attribute (opset < 13 style) or from input ``pos`` (opset 13)."""
    if "axes" in attrs:
        return [int(a) for a in attrs["axes"]]
    if len(ins) > pos and ins[pos]:
        return [int(a) for a in g.const(ins[pos]).reshape(-1)]
    return None


# ---- element-wise ----------------------------------------------------------------------

def _unary(mx_name, np_func=None):
    def conv(g, node, ins, attrs, name):
        if np_func is not None and _all_const(g, ins):
            return np_func(g.const(ins[0]))
        return getattr(S, mx_name)(g.sym(ins[0]), name=name)
    return conv


for _ox, (_mx, _np) in {"Relu": ("relu", None), "Sigmoid": ("sigmoid", None),
                        "Tanh": ("tanh", None), "Exp": ("exp", None), "Log": ("log", None),
                        "Sqrt": ("sqrt", np.sqrt), "Abs": ("abs", np.abs),
                        "Neg": ("negative", np.negative), "Reciprocal": ("reciprocal", None),
                        "Floor": ("floor", np.floor), "Ceil": ("ceil", np.ceil),
                        "Sin": ("sin", None), "Cos": ("cos", None), "Tan": ("tan", None),
                        "Erf": ("erf", None), "Sign": ("sign", None), "Softsign": ("softsign", None),
                        "Identity": ("identity", lambda x: x), "Round": ("round", None),
                        "Asin": ("arcsin", None), "Acos": ("arccos", None),
                        "Atan": ("arctan", None), "Sinh": ("sinh", None),
                        "Cosh": ("cosh", None)}.items():
    register(_ox)(_unary(_mx, _np))


@register("Softplus")
def _softplus(g, node, ins, attrs, name):
    return S.Activation(g.sym(ins[0]), act_type="softrelu", name=name)


@register("Dropout")
def _dropout(g, node, ins, attrs, name):
    return S.identity(g.sym(ins[0]), name=name)  # inference


@register("LeakyRelu")
def _leaky(g, node, ins, attrs, name):
    return S.LeakyReLU(g.sym(ins[0]), act_type="leaky", slope=float(attrs.get("alpha", 0.01)),
                       name=name)


@register("Elu")
def _elu(g, node, ins, attrs, name):
    return S.LeakyReLU(g.sym(ins[0]), act_type="elu", slope=float(attrs.get("alpha", 1.0)),
                       name=name)


@register("Selu")
def _selu(g, node, ins, attrs, name):
    alpha, gamma = float(attrs.get("alpha", 1.67326319)), float(attrs.get("gamma", 1.05070102))
    x = g.sym(ins[0])
    if abs(alpha - 1.6732632) < 1e-5 and abs(gamma - 1.0507010) < 1e-5:
        return S.LeakyReLU(x, act_type="selu", name=name)
    neg = S._mul_scalar(S.LeakyReLU(x, act_type="elu", slope=alpha), scalar=gamma)
    return S.where(x > 0, S._mul_scalar(x, scalar=gamma), neg, name=name)


@register("PRelu")
def _prelu(g, node, ins, attrs, name):
    slope = ins[1]
    if g.is_const(slope):
        g.consts[slope] = g.const(slope).reshape(-1)
        return S.LeakyReLU(g.sym(ins[0]), gamma=g.sym(slope), act_type="prelu", name=name)
    x = g.sym(ins[0])
    return S.where(x > 0, x, S.broadcast_mul(x, g.sym(slope)), name=name)


@register("HardSigmoid")
def _hard_sigmoid(g, node, ins, attrs, name):
    return S.hard_sigmoid(g.sym(ins[0]), alpha=float(attrs.get("alpha", 0.2)),
                          beta=float(attrs.get("beta", 0.5)), name=name)


_NP_BIN = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": None,
           "Pow": np.power, "Max": np.maximum, "Min": np.minimum}
_MX_BIN = {"Add": ("broadcast_add", "_plus_scalar", "_plus_scalar"),
           "Sub": ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
           "Mul": ("broadcast_mul", "_mul_scalar", "_mul_scalar"),
           "Div": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
           "Pow": ("broadcast_power", "_power_scalar", "_rpower_scalar"),
           "Max": ("broadcast_maximum", "_maximum_scalar", "_maximum_scalar"),
           "Min": ("broadcast_minimum", "_minimum_scalar", "_minimum_scalar")}


def _np_div(a, b):
    if np.issubdtype(np.result_type(a, b), np.integer):
        return (a // b).astype(np.result_type(a, b))
    return a / b


def _binary(op):
    def conv(g, node, ins, attrs, name):
        if len(ins) != 2:
            if op in ("Max", "Min", "Sum") and len(ins) > 2:
                out = g.sym(ins[0])
                for i in ins[1:]:
                    out = getattr(S, _MX_BIN[op][0])(out, g.sym(i))
                return S.identity(out, name=name)
            if len(ins) == 1:
                return S.identity(g.sym(ins[0]), name=name)
        a, b = ins
        if _all_const(g, ins):
            f = _NP_BIN[op] or _np_div
            return np.asarray(f(g.const(a), g.const(b)))
        full, scal, rscal = _MX_BIN[op]
        if g.is_const(b) and g.const(b).size == 1 and (g.shape(a) or ()) and \
                len(g.shape(a)) >= g.const(b).ndim:
            return getattr(S, scal)(g.sym(a), scalar=float(g.const(b).reshape(-1)[0]), name=name)
        if g.is_const(a) and g.const(a).size == 1 and (g.shape(b) or ()) and \
                len(g.shape(b)) >= g.const(a).ndim:
            return getattr(S, rscal)(g.sym(b), scalar=float(g.const(a).reshape(-1)[0]),
                                     name=name)
        return getattr(S, full)(g.sym(a), g.sym(b), name=name)
    return conv


for _op in _MX_BIN:
    register(_op)(_binary(_op))


@register("Sum")
def _sum(g, node, ins, attrs, name):
    if len(ins) == 1:
        return S.identity(g.sym(ins[0]), name=name)
    return S.add_n(*[g.sym(i) for i in ins], name=name)


def _compare(mx_name):
    def conv(g, node, ins, attrs, name):
        # ONNX's result is bool; oxnet's is 0/1 in the inputs' type
        return getattr(S, mx_name)(g.sym(ins[0]), g.sym(ins[1]), name=name)
    return conv


for _ox, _mx in {"Equal": "broadcast_equal", "Greater": "broadcast_greater",
                 "Less": "broadcast_lesser", "GreaterOrEqual": "broadcast_greater_equal",
                 "LessOrEqual": "broadcast_lesser_equal"}.items():
    register(_ox)(_compare(_mx))


@register("Not")
def _not(g, node, ins, attrs, name):
    return S._equal_scalar(g.sym(ins[0]), scalar=0.0, name=name)


@register("Clip")
def _clip(g, node, ins, attrs, name):
    lo, hi = attrs.get("min", -np.inf), attrs.get("max", np.inf)
    if len(ins) > 1 and ins[1]:
        lo = float(g.const(ins[1]))
    if len(ins) > 2 and ins[2]:
        hi = float(g.const(ins[2]))
    lo = float(max(lo, -3.4e38))
    hi = float(min(hi, 3.4e38))
    return S.clip(g.sym(ins[0]), a_min=lo, a_max=hi, name=name)


@register("Cast")
def _cast(g, node, ins, attrs, name):
    from ....onnx._util import onnx_to_np_dtype  # pylint: disable=import-outside-toplevel
    dt = onnx_to_np_dtype(g.onnx, int(attrs["to"]))
    if _all_const(g, ins):
        return g.const(ins[0]).astype(dt)
    if dt == np.bool_:
        dt = np.dtype("float32")  # oxnet has no bool arrays: 0/1 in float32
    return S.Cast(g.sym(ins[0]), dtype=dt.name, name=name)


@register("Where")
def _where(g, node, ins, attrs, name):
    cond, x, y = (g.sym(i) for i in ins)
    sx, sy, sc = g.shape(ins[1]), g.shape(ins[2]), g.shape(ins[0])
    if sx is not None and sx == sy and sc is not None and sc != sx:
        cond = S.broadcast_to(cond, shape=sx)
    return S.where(cond, x, y, name=name)


# ---- layers --------------------------------------------------------------------------

def _pads(g, attrs, nsp):
    if attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        raise g.error(f"auto_pad='{attrs['auto_pad']}' is not supported; give explicit pads")
    pads = list(attrs.get("pads", [0] * (2 * nsp)))
    begin, end = pads[:nsp], pads[nsp:]
    return tuple(begin), tuple(end)


@register("Conv")
def _conv(g, node, ins, attrs, name):
    w = g.const(ins[1]) if g.is_const(ins[1]) else None
    wshape = w.shape if w is not None else g.shape(ins[1])
    nsp = len(wshape) - 2
    begin, end = _pads(g, attrs, nsp)
    if begin != end:
        raise g.error(f"asymmetric pads {begin + end} are not supported")
    kernel = tuple(attrs.get("kernel_shape", wshape[2:]))
    args = [g.sym(ins[0]), g.sym(ins[1])] + ([g.sym(ins[2])] if len(ins) > 2 and ins[2] else [])
    return S.Convolution(*args, kernel=kernel, stride=tuple(attrs.get("strides", [1] * nsp)),
                         dilate=tuple(attrs.get("dilations", [1] * nsp)), pad=begin,
                         num_filter=int(wshape[0]), num_group=int(attrs.get("group", 1)),
                         no_bias=len(args) == 2, name=name)


@register("ConvTranspose")
def _conv_transpose(g, node, ins, attrs, name):
    wshape = g.shape(ins[1])
    nsp = len(wshape) - 2
    if "output_shape" in attrs:
        raise g.error("output_shape is not supported; give pads and output_padding")
    begin, end = _pads(g, attrs, nsp)
    if begin != end:
        raise g.error(f"asymmetric pads {begin + end} are not supported")
    group = int(attrs.get("group", 1))
    args = [g.sym(ins[0]), g.sym(ins[1])] + ([g.sym(ins[2])] if len(ins) > 2 and ins[2] else [])
    return S.Deconvolution(*args, kernel=tuple(attrs.get("kernel_shape", wshape[2:])),
                           stride=tuple(attrs.get("strides", [1] * nsp)),
                           dilate=tuple(attrs.get("dilations", [1] * nsp)), pad=begin,
                           adj=tuple(attrs.get("output_padding", [0] * nsp)),
                           num_filter=int(wshape[1]) * group, num_group=group,
                           no_bias=len(args) == 2, name=name)


def _pool(pool_type):
    def conv(g, node, ins, attrs, name):
        kernel = tuple(attrs["kernel_shape"])
        nsp = len(kernel)
        begin, end = _pads(g, attrs, nsp)
        if begin != end:
            raise g.error(f"asymmetric pads {begin + end} are not supported")
        if tuple(attrs.get("dilations", [1] * nsp)) != (1,) * nsp:
            raise g.error("dilated pooling is not supported")
        kw = dict(kernel=kernel, stride=tuple(attrs.get("strides", [1] * nsp)), pad=begin,
                  pool_type=pool_type,
                  pooling_convention="full" if attrs.get("ceil_mode", 0) else "valid")
        if pool_type == "avg":
            kw["count_include_pad"] = bool(attrs.get("count_include_pad", 0))
        if pool_type == "lp":
            kw["p_value"] = int(attrs.get("p", 2))
        return S.Pooling(g.sym(ins[0]), name=name, **kw)
    return conv


register("MaxPool")(_pool("max"))
register("AveragePool")(_pool("avg"))
register("LpPool")(_pool("lp"))


def _global_pool(pool_type):
    def conv(g, node, ins, attrs, name):
        kw = {"p_value": int(attrs.get("p", 2))} if pool_type == "lp" else {}
        return S.Pooling(g.sym(ins[0]), kernel=(1, 1), global_pool=True, pool_type=pool_type,
                         name=name, **kw)
    return conv


register("GlobalMaxPool")(_global_pool("max"))
register("GlobalAveragePool")(_global_pool("avg"))
register("GlobalLpPool")(_global_pool("lp"))


@register("BatchNormalization")
def _batch_norm(g, node, ins, attrs, name):
    if len(node.output) > 1 and any(node.output[1:]):
        raise g.error("training-mode BatchNormalization (extra outputs) is not supported")
    x, gamma, beta = g.sym(ins[0]), g.sym(ins[1]), g.sym(ins[2])
    mean, var = g.sym(ins[3], aux=True), g.sym(ins[4], aux=True)
    return S.BatchNorm(x, gamma, beta, mean, var, eps=float(attrs.get("epsilon", 1e-5)),
                       momentum=float(attrs.get("momentum", 0.9)), fix_gamma=False,
                       use_global_stats=True, name=name)


@register("InstanceNormalization")
def _instance_norm(g, node, ins, attrs, name):
    return S.InstanceNorm(g.sym(ins[0]), g.sym(ins[1]), g.sym(ins[2]),
                          eps=float(attrs.get("epsilon", 1e-5)), name=name)


@register("LRN")
def _lrn(g, node, ins, attrs, name):
    return S.LRN(g.sym(ins[0]), alpha=float(attrs.get("alpha", 1e-4)),
                 beta=float(attrs.get("beta", 0.75)), knorm=float(attrs.get("bias", 1.0)),
                 nsize=int(attrs["size"]), name=name)


@register("Gemm")
def _gemm(g, node, ins, attrs, name):
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    ta, tb = int(attrs.get("transA", 0)), int(attrs.get("transB", 0))
    has_c = len(ins) > 2 and ins[2]
    if not ta and alpha == 1.0 and beta == 1.0 and g.is_const(ins[1]):
        w = g.const(ins[1])
        if not tb:  # FullyConnected wants (num_hidden, in): store the transposed weight
            g.consts[ins[1]] = w = np.ascontiguousarray(w.T)
        c_ok = not has_c or (g.is_const(ins[2]) and g.const(ins[2]).size == w.shape[0])
        if c_ok:
            args = [g.sym(ins[0]), g.sym(ins[1])]
            if has_c:
                g.consts[ins[2]] = np.broadcast_to(g.const(ins[2]), (w.shape[0],)).copy()
                args.append(g.sym(ins[2]))
            return S.FullyConnected(*args, num_hidden=int(w.shape[0]), no_bias=not has_c,
                                    flatten=True, name=name)
        if not tb:
            g.consts[ins[1]] = w.T  # undo: the general path below uses the original layout
    out = S.dot(g.sym(ins[0]), g.sym(ins[1]), transpose_a=bool(ta), transpose_b=bool(tb))
    if alpha != 1.0:
        out = S._mul_scalar(out, scalar=alpha)
    if has_c:
        c = g.sym(ins[2])
        if beta != 1.0:
            c = S._mul_scalar(c, scalar=beta)
        out = S.broadcast_add(out, c)
    return S.identity(out, name=name)


@register("MatMul")
def _matmul(g, node, ins, attrs, name):
    sa, sb = g.shape(ins[0]), g.shape(ins[1])
    if sa is None or sb is None:
        raise g.error("MatMul needs the ranks of its inputs; give the graph inputs static shapes")
    a, b = g.sym(ins[0]), g.sym(ins[1])
    if len(sb) == 2 and len(sa) >= 2:
        return S.dot(a, b, name=name)
    if len(sa) == len(sb) and len(sa) >= 3 and sa[:-2] == sb[:-2]:
        if len(sa) == 3:
            return S.batch_dot(a, b, name=name)
        a3 = S.reshape(a, shape=(-3, -2)) if len(sa) == 4 else S.reshape(a, shape=(-1,) + sa[-2:])
        b3 = S.reshape(b, shape=(-1,) + sb[-2:])
        return S.reshape(S.batch_dot(a3, b3), shape=sa[:-1] + sb[-1:], name=name)
    raise g.error(f"MatMul of shapes {sa} and {sb} is not supported")


@register("Gather")
def _gather(g, node, ins, attrs, name):
    axis = int(attrs.get("axis", 0))
    if _all_const(g, ins):
        return np.take(g.const(ins[0]), g.const(ins[1]), axis=axis)
    if axis == 0 and g.is_const(ins[0]) and not g.is_const(ins[1]):
        w = g.const(ins[0])
        if w.ndim == 2:
            return S.Embedding(g.sym(ins[1]), g.sym(ins[0]), input_dim=int(w.shape[0]),
                               output_dim=int(w.shape[1]), dtype=w.dtype.name, name=name)
    if g.is_const(ins[1]):
        idx = g.const(ins[1])
        g.consts[ins[1]] = idx.astype(np.float32)
    return S.take(g.sym(ins[0]), g.sym(ins[1]), axis=axis, mode="clip", name=name)


# ---- softmax ---------------------------------------------------------------------------

def _softmax(mx_name):
    def conv(g, node, ins, attrs, name):
        x = g.sym(ins[0])
        if g.opset >= 13:
            return getattr(S, mx_name)(x, axis=int(attrs.get("axis", -1)), name=name)
        axis = int(attrs.get("axis", 1))
        nd = g.ndim(ins[0])
        if axis < 0:
            axis += nd
        if axis == nd - 1:
            return getattr(S, mx_name)(x, axis=-1, name=name)
        # opsets < 13: softmax over the axes from `axis` on, flattened
        flat = S.reshape(x, shape=(0,) * axis + (-1,))
        return S.reshape_like(getattr(S, mx_name)(flat, axis=-1), x, name=name)
    return conv


register("Softmax")(_softmax("softmax"))
register("LogSoftmax")(_softmax("log_softmax"))


# ---- shapes ------------------------------------------------------------------------------

@register("Flatten")
def _flatten(g, node, ins, attrs, name):
    axis = int(attrs.get("axis", 1))
    if _all_const(g, ins):
        x = g.const(ins[0])
        return x.reshape(int(np.prod(x.shape[:axis])), -1)
    if axis == 1:
        return S.Flatten(g.sym(ins[0]), name=name)
    nd = g.ndim(ins[0])
    axis = axis + nd if axis < 0 else axis
    if axis == 0:
        return S.reshape(g.sym(ins[0]), shape=(1, -1), name=name)
    s = g.shape(ins[0])
    return S.reshape(g.sym(ins[0]), shape=(int(np.prod(s[:axis])), -1), name=name)


@register("Shape")
def _shape(g, node, ins, attrs, name):
    s = g.shape(ins[0])
    if s is None:
        raise g.error("Shape of a tensor whose shape is not static; give the graph inputs "
                      "static shapes")
    s = np.asarray(s, dtype=np.int64)
    return s[int(attrs.get("start", 0)):attrs.get("end", None)]


@register("Constant")
def _constant(g, node, ins, attrs, name):
    for key in ("value", "value_float", "value_int", "value_floats", "value_ints"):
        if key in attrs:
            v = np.asarray(attrs[key])
            if key in ("value_float", "value_floats"):
                v = v.astype(np.float32)
            if key in ("value_int", "value_ints"):
                v = v.astype(np.int64)
            return v
    raise g.error("this Constant's value kind is not supported")


@register("ConstantOfShape")
def _constant_of_shape(g, node, ins, attrs, name):
    value = attrs.get("value", np.zeros(1, np.float32))
    shape = tuple(int(d) for d in g.const(ins[0]))
    return np.full(shape, value.reshape(-1)[0], dtype=value.dtype)


@register("Reshape")
def _reshape(g, node, ins, attrs, name):
    shape = tuple(int(d) for d in g.const(ins[1]))
    if g.is_const(ins[0]):
        x = g.const(ins[0])
        return x.reshape([x.shape[i] if d == 0 else d for i, d in enumerate(shape)])
    return S.reshape(g.sym(ins[0]), shape=shape, name=name)


@register("Transpose")
def _transpose(g, node, ins, attrs, name):
    perm = attrs.get("perm")
    if _all_const(g, ins):
        return np.transpose(g.const(ins[0]), perm)
    return S.transpose(g.sym(ins[0]), axes=tuple(perm) if perm else (), name=name)


@register("Concat")
def _concat(g, node, ins, attrs, name):
    axis = int(attrs["axis"])
    if _all_const(g, ins):
        return np.concatenate([g.const(i) for i in ins], axis=axis)
    return S.concat(*[g.sym(i) for i in ins], dim=axis, name=name)


@register("Unsqueeze")
def _unsqueeze(g, node, ins, attrs, name):
    axes = _axes_of(g, ins, attrs, 1)
    if _all_const(g, ins[:1]):
        x = g.const(ins[0])
        out_nd = x.ndim + len(axes)
        for a in sorted(a + out_nd if a < 0 else a for a in axes):
            x = np.expand_dims(x, a)
        return x
    nd = g.ndim(ins[0]) + len(axes) if any(a < 0 for a in axes) else None
    out = g.sym(ins[0])
    for a in sorted(a + nd if a < 0 else a for a in axes):
        out = S.expand_dims(out, axis=a)
    return S.identity(out, name=name)


@register("Squeeze")
def _squeeze(g, node, ins, attrs, name):
    axes = _axes_of(g, ins, attrs, 1)
    if _all_const(g, ins[:1]):
        return np.squeeze(g.const(ins[0]), axis=tuple(axes) if axes else None)
    return S.squeeze(g.sym(ins[0]), axis=tuple(axes) if axes else None, name=name)


@register("Slice")
def _slice(g, node, ins, attrs, name):
    if len(ins) > 1:
        starts = [int(v) for v in g.const(ins[1])]
        ends = [int(v) for v in g.const(ins[2])]
        axes = [int(v) for v in g.const(ins[3])] if len(ins) > 3 and ins[3] else None
        steps = [int(v) for v in g.const(ins[4])] if len(ins) > 4 and ins[4] else None
    else:
        starts, ends, axes = list(attrs["starts"]), list(attrs["ends"]), attrs.get("axes")
        steps = None
    axes = list(axes) if axes is not None else list(range(len(starts)))
    steps = steps or [1] * len(starts)
    if g.is_const(ins[0]):
        x = g.const(ins[0])
        sl = [slice(None)] * x.ndim
        for a, b, e, s in zip(axes, starts, ends, steps):
            sl[a] = slice(b, e, s)
        return x[tuple(sl)]
    nd = g.ndim(ins[0]) if any(a < 0 for a in axes) else max(axes) + 1
    axes = [a + nd if a < 0 else a for a in axes]
    big = 2 ** 31 - 1
    begin, end, step = [None] * nd, [None] * nd, [None] * nd
    for a, b, e, s in zip(axes, starts, ends, steps):
        begin[a] = None if (s > 0 and b == 0) or b >= big or b <= -big else b
        end[a] = None if e >= big or e <= -big else e
        step[a] = s
    return S.slice(g.sym(ins[0]), begin=tuple(begin), end=tuple(end), step=tuple(step),
                   name=name)


@register("Split")
def _split(g, node, ins, attrs, name):
    axis = int(attrs.get("axis", 0))
    split = attrs.get("split")
    if split is None and len(ins) > 1 and ins[1]:
        split = [int(v) for v in g.const(ins[1])]
    n = len(node.output)
    if split is not None and len(set(split)) > 1:
        x, outs, start = g.sym(ins[0]), [], 0
        for i, size in enumerate(split):
            outs.append(S.slice_axis(x, axis=axis, begin=start, end=start + size,
                                     name=f"{name}_{i}"))
            start += size
        return outs
    out = S.split(g.sym(ins[0]), num_outputs=n, axis=axis, name=name)
    return [out[i] for i in range(n)]


@register("Expand")
def _expand(g, node, ins, attrs, name):
    shape = tuple(int(d) for d in g.const(ins[1]))
    s = g.shape(ins[0])
    if s is None:
        raise g.error("Expand needs its input's static shape")
    nd = max(len(s), len(shape))
    s = (1,) * (nd - len(s)) + tuple(s)
    shape = (1,) * (nd - len(shape)) + shape
    target = tuple(max(a, b) for a, b in zip(s, shape))
    x = S.reshape(g.sym(ins[0]), shape=s)
    return S.broadcast_to(x, shape=target, name=name)


@register("Tile")
def _tile(g, node, ins, attrs, name):
    return S.tile(g.sym(ins[0]), reps=tuple(int(r) for r in g.const(ins[1])), name=name)


@register("Pad")
def _pad(g, node, ins, attrs, name):
    mode = attrs.get("mode", "constant")
    pads = attrs.get("pads")
    if pads is None:
        pads = [int(v) for v in g.const(ins[1])]
    value = float(attrs.get("value", 0.0))
    if len(ins) > 2 and ins[2]:
        value = float(g.const(ins[2]).reshape(-1)[0])
    n = len(pads) // 2
    width = tuple(v for pair in zip(pads[:n], pads[n:]) for v in pair)
    return S.pad(g.sym(ins[0]), mode=mode, pad_width=width, constant_value=value, name=name)


@register("Resize", "Upsample")
def _resize(g, node, ins, attrs, name):
    if attrs.get("mode", "nearest") != "nearest":
        raise g.error(f"mode '{attrs.get('mode')}' is not supported (only nearest)")
    scales = None
    if node.op_type == "Upsample":
        scales = attrs.get("scales") or g.const(ins[1])
    elif len(ins) > 2 and ins[2] and g.const(ins[2]).size:
        scales = g.const(ins[2])
    elif len(ins) > 3 and ins[3]:
        sizes, s = g.const(ins[3]), g.shape(ins[0])
        scales = [o / i for o, i in zip(sizes, s)]
    scales = [float(v) for v in scales]
    sp = scales[2:]
    if scales[:2] != [1.0, 1.0] or len(set(sp)) != 1 or sp[0] != int(sp[0]) or len(sp) != 2:
        raise g.error(f"only integer, equal 2-D spatial scales convert (got {scales})")
    return S.UpSampling(g.sym(ins[0]), scale=int(sp[0]), sample_type="nearest", num_args=1,
                        name=name)


# ---- reductions, indexing ------------------------------------------------------------------

def _reduce(mx_name, axes_input):
    def conv(g, node, ins, attrs, name):
        axes = _axes_of(g, ins, attrs, 1) if axes_input else (
            [int(a) for a in attrs["axes"]] if "axes" in attrs else None)
        keep = bool(attrs.get("keepdims", 1))
        if not axes and axes_input and attrs.get("noop_with_empty_axes", 0):
            return S.identity(g.sym(ins[0]), name=name)
        kw = {"axis": tuple(axes)} if axes else {}
        return getattr(S, mx_name)(g.sym(ins[0]), keepdims=keep, name=name, **kw)
    return conv


register("ReduceSum")(_reduce("sum", True))
register("ReduceMean")(_reduce("mean", False))
register("ReduceMax")(_reduce("max", False))
register("ReduceMin")(_reduce("min", False))
register("ReduceProd")(_reduce("prod", False))


def _arg(mx_name):
    def conv(g, node, ins, attrs, name):
        if attrs.get("select_last_index", 0):
            raise g.error("select_last_index=1 is not supported")
        out = getattr(S, mx_name)(g.sym(ins[0]), axis=int(attrs.get("axis", 0)),
                                  keepdims=bool(attrs.get("keepdims", 1)))
        return S.Cast(out, dtype="int64", name=name)
    return conv


register("ArgMax")(_arg("argmax"))
register("ArgMin")(_arg("argmin"))


@register("TopK")
def _topk(g, node, ins, attrs, name):
    k = int(g.const(ins[1]).reshape(-1)[0]) if len(ins) > 1 else int(attrs["k"])
    out = S.topk(g.sym(ins[0]), axis=int(attrs.get("axis", -1)), k=k, ret_typ="both",
                 is_ascend=not attrs.get("largest", 1), dtype="int64", name=name)
    return [out[0], out[1]]
