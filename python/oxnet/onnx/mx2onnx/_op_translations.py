"""Converters from oxnet (MXNet 1.x) operators to ONNX opset-13 nodes, one per operator.

Each converter takes the conversion context and a :class:`Node` and emits ONNX nodes
whose final outputs carry the names in ``node.outputs``."""
# pylint: disable=missing-function-docstring

import ast

import numpy as np

from ._export_onnx import register

INT_MAX = np.iinfo(np.int64).max
INT_MIN = np.iinfo(np.int64).min


# ---- attribute parsing -------------------------------------------------------------

def _val(attrs, key, default=None):
    v = attrs.get(key, default)
    return default if v in (None, "None") else v


def _bool(attrs, key, default):
    v = _val(attrs, key)
    if v is None:
        return default
    return str(v).strip() in ("True", "true", "1")


def _float(attrs, key, default):
    v = _val(attrs, key)
    return default if v is None else float(v)


def _int(attrs, key, default):
    v = _val(attrs, key)
    return default if v is None else int(float(v))


def _tuple(attrs, key, default=()):
    v = _val(attrs, key)
    if v is None:
        return tuple(default)
    if isinstance(v, (list, tuple)):
        return tuple(v)
    v = str(v).strip()
    if v in ("", "()", "[]"):
        return ()
    parsed = ast.literal_eval(v)
    if isinstance(parsed, (int, float)) or parsed is None:
        return (parsed,)
    return tuple(parsed)


def _axis(axis, ndim):
    return axis + ndim if axis < 0 else axis


# ---- basic shapes ------------------------------------------------------------------

def _simple(onnx_op, **fixed):
    def conv(ctx, node):
        ctx.add(onnx_op, node.inputs[:1], node.outputs, **fixed)
    return conv


for _mx, _ox in {"exp": "Exp", "log": "Log", "sqrt": "Sqrt", "abs": "Abs", "negative": "Neg",
                 "reciprocal": "Reciprocal", "floor": "Floor", "ceil": "Ceil", "sin": "Sin",
                 "cos": "Cos", "tan": "Tan", "erf": "Erf", "sign": "Sign", "relu": "Relu",
                 "sigmoid": "Sigmoid", "tanh": "Tanh", "softsign": "Softsign",
                 "Flatten": "Flatten", "flatten": "Flatten", "Dropout": "Identity",
                 "_copy": "Identity", "identity": "Identity", "BlockGrad": "Identity",
                 "stop_gradient": "Identity", "MakeLoss": "Identity", "make_loss": "Identity",
                 "round": "Round", "arcsin": "Asin", "arccos": "Acos", "arctan": "Atan",
                 "sinh": "Sinh", "cosh": "Cosh", "logical_not": None}.items():
    if _ox:
        register(_mx)(_simple(_ox))


@register("square")
def _square(ctx, node):
    ctx.add("Mul", [node.inputs[0], node.inputs[0]], node.outputs)


@register("rsqrt")
def _rsqrt(ctx, node):
    s = ctx.add("Sqrt", node.inputs[:1], node.name + "_sqrt")
    ctx.add("Reciprocal", s, node.outputs)


@register("Activation")
def _activation(ctx, node):
    act = node.attrs.get("act_type", "relu")
    table = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "softrelu": "Softplus",
             "softsign": "Softsign"}
    if act not in table:
        raise node.error(f"act_type '{act}' has no ONNX equivalent")
    ctx.add(table[act], node.inputs[:1], node.outputs)


@register("LeakyReLU")
def _leaky_relu(ctx, node):
    act = node.attrs.get("act_type", "leaky")
    slope = _float(node.attrs, "slope", 0.25)
    x = node.inputs[0]
    if act == "leaky":
        ctx.add("LeakyRelu", [x], node.outputs, alpha=slope)
    elif act == "rrelu":  # inference: the mean of the slope range
        lo, hi = _float(node.attrs, "lower_bound", 0.125), _float(node.attrs, "upper_bound", 0.334)
        ctx.add("LeakyRelu", [x], node.outputs, alpha=(lo + hi) / 2)
    elif act == "elu":
        ctx.add("Elu", [x], node.outputs, alpha=slope)
    elif act == "selu":
        ctx.add("Selu", [x], node.outputs, alpha=1.6732632423543772, gamma=1.0507009873554805)
    elif act == "prelu":
        ndim = len(node.in_shapes[0])
        gamma = node.inputs[1]
        if ndim > 2:  # ONNX broadcasts from the right: (C,) -> (C, 1, ..., 1)
            shape = ctx.ints(node.name + "_gamma_shape", [-1] + [1] * (ndim - 2))
            gamma = ctx.add("Reshape", [gamma, shape], node.name + "_gamma")[0]
        ctx.add("PRelu", [x, gamma], node.outputs)
    elif act == "gelu":  # MXNet's gelu: 0.5 x (1 + erf(x / sqrt 2))
        dt = node.in_dtypes[0]
        r2 = ctx.const(node.name + "_sqrt2", np.sqrt(2.0), dt)
        one = ctx.const(node.name + "_one", 1.0, dt)
        half = ctx.const(node.name + "_half", 0.5, dt)
        d = ctx.add("Div", [x, r2], node.name + "_div")
        e = ctx.add("Erf", d, node.name + "_erf")
        a = ctx.add("Add", [e[0], one], node.name + "_add")
        m = ctx.add("Mul", [x, a[0]], node.name + "_mul")
        ctx.add("Mul", [m[0], half], node.outputs)
    else:
        raise node.error(f"act_type '{act}' has no ONNX equivalent")


# ---- layers --------------------------------------------------------------------------

@register("FullyConnected")
def _fully_connected(ctx, node):
    no_bias = _bool(node.attrs, "no_bias", False)
    x, w = node.inputs[0], node.inputs[1]
    if _bool(node.attrs, "flatten", True):
        flat = ctx.add("Flatten", [x], node.name + "_flatten", axis=1)
        ctx.add("Gemm", flat + [w] + ([] if no_bias else [node.inputs[2]]), node.outputs,
                alpha=1.0, beta=1.0, transA=0, transB=1)
    else:
        wt = ctx.add("Transpose", [w], node.name + "_weight_t", perm=[1, 0])
        if no_bias:
            ctx.add("MatMul", [x, wt[0]], node.outputs)
        else:
            mm = ctx.add("MatMul", [x, wt[0]], node.name + "_matmul")
            ctx.add("Add", mm + [node.inputs[2]], node.outputs)


def _conv_attrs(node, nsp):
    attrs = node.attrs
    kernel = [int(k) for k in _tuple(attrs, "kernel")]
    stride = [int(k) for k in _tuple(attrs, "stride")] or [1] * nsp
    dilate = [int(k) for k in _tuple(attrs, "dilate")] or [1] * nsp
    pad = [int(k) for k in _tuple(attrs, "pad")] or [0] * nsp
    layout = _val(attrs, "layout")
    if layout not in (None, "NCW", "NCHW", "NCDHW"):
        raise node.error(f"layout '{layout}' is not supported (ONNX is channel-first)")
    return kernel, stride, dilate, pad


@register("Convolution")
def _convolution(ctx, node):
    nsp = len(node.in_shapes[0]) - 2
    kernel, stride, dilate, pad = _conv_attrs(node, nsp)
    n = 2 if _bool(node.attrs, "no_bias", False) else 3
    ctx.add("Conv", node.inputs[:n], node.outputs, kernel_shape=kernel, strides=stride,
            dilations=dilate, pads=pad + pad, group=_int(node.attrs, "num_group", 1))


@register("Deconvolution")
def _deconvolution(ctx, node):
    nsp = len(node.in_shapes[0]) - 2
    kernel, stride, dilate, pad = _conv_attrs(node, nsp)
    target = [int(t) for t in _tuple(node.attrs, "target_shape")]
    if any(target):
        raise node.error("target_shape is not supported; give pad and adj instead")
    adj = [int(k) for k in _tuple(node.attrs, "adj")] or [0] * nsp
    n = 2 if _bool(node.attrs, "no_bias", True) else 3
    ctx.add("ConvTranspose", node.inputs[:n], node.outputs, kernel_shape=kernel,
            strides=stride, dilations=dilate, pads=pad + pad, output_padding=adj,
            group=_int(node.attrs, "num_group", 1))


@register("Pooling")
def _pooling(ctx, node):
    attrs = node.attrs
    nsp = len(node.in_shapes[0]) - 2
    ptype = attrs.get("pool_type", "max")
    layout = _val(attrs, "layout")
    if layout not in (None, "NCW", "NCHW", "NCDHW"):
        raise node.error(f"layout '{layout}' is not supported (ONNX is channel-first)")
    x = node.inputs[0]
    if _bool(attrs, "global_pool", False):
        if ptype == "max":
            ctx.add("GlobalMaxPool", [x], node.outputs)
        elif ptype == "avg":
            ctx.add("GlobalAveragePool", [x], node.outputs)
        elif ptype == "lp":
            ctx.add("GlobalLpPool", [x], node.outputs, p=_int(attrs, "p_value", 2))
        else:  # sum
            axes = ctx.ints(node.name + "_axes", range(2, 2 + nsp))
            ctx.add("ReduceSum", [x, axes], node.outputs, keepdims=1)
        return
    kernel = [int(k) for k in _tuple(attrs, "kernel")]
    stride = [int(k) for k in _tuple(attrs, "stride")] or [1] * nsp
    pad = [int(k) for k in _tuple(attrs, "pad")] or [0] * nsp
    conv = attrs.get("pooling_convention", "valid")
    if conv not in ("valid", "full"):
        raise node.error(f"pooling_convention '{conv}' is not supported (valid, full are)")
    common = dict(kernel_shape=kernel, strides=stride, pads=pad + pad,
                  ceil_mode=1 if conv == "full" else 0)
    if ptype == "max":
        ctx.add("MaxPool", [x], node.outputs, **common)
    elif ptype in ("avg", "sum"):
        cip = 1 if _bool(attrs, "count_include_pad", True) or ptype == "sum" else 0
        if ptype == "avg":
            ctx.add("AveragePool", [x], node.outputs, count_include_pad=cip, **common)
        else:
            avg = ctx.add("AveragePool", [x], node.name + "_avg", count_include_pad=1, **common)
            k = ctx.const(node.name + "_ksize", float(np.prod(kernel)), node.in_dtypes[0])
            ctx.add("Mul", avg + [k], node.outputs)
    elif ptype == "lp":
        del common["ceil_mode"]
        if conv == "full":
            raise node.error("lp pooling with pooling_convention 'full' has no ONNX equivalent")
        ctx.add("LpPool", [x], node.outputs, p=_int(attrs, "p_value", 2), **common)
    else:
        raise node.error(f"pool_type '{ptype}' is not supported")


@register("BatchNorm")
def _batch_norm(ctx, node):
    attrs = node.attrs
    ndim = len(node.in_shapes[0])
    if _axis(_int(attrs, "axis", 1), ndim) != 1:
        raise node.error("only axis=1 (channel-first) converts to ONNX BatchNormalization")
    gamma = node.inputs[1]
    if _bool(attrs, "fix_gamma", True):
        c = node.in_shapes[1]
        gamma = ctx.const(node.name + "_fixed_gamma", np.ones(c, node.in_dtypes[1]))
    # inference semantics: the moving statistics, whatever use_global_stats says
    ctx.add("BatchNormalization", [node.inputs[0], gamma] + node.inputs[2:5], node.outputs[:1],
            epsilon=_float(attrs, "eps", 1e-3), momentum=_float(attrs, "momentum", 0.9))
    for extra in node.outputs[1:]:
        ctx.add("Identity", [node.outputs[0]], [extra])


@register("InstanceNorm")
def _instance_norm(ctx, node):
    ctx.add("InstanceNormalization", node.inputs[:3], node.outputs,
            epsilon=_float(node.attrs, "eps", 1e-3))


@register("LRN")
def _lrn(ctx, node):
    a = node.attrs
    ctx.add("LRN", node.inputs[:1], node.outputs[:1], alpha=_float(a, "alpha", 1e-4),
            beta=_float(a, "beta", 0.75), bias=_float(a, "knorm", 2.0), size=_int(a, "nsize", 5))


@register("Embedding")
def _embedding(ctx, node):
    idx = ctx.add("Cast", node.inputs[:1], node.name + "_idx", to=ctx.onnx.TensorProto.INT64)
    ctx.add("Gather", [node.inputs[1], idx[0]], node.outputs, axis=0)


@register("Pad", "pad")
def _pad(ctx, node):
    a = node.attrs
    mode = a.get("mode", "constant")
    if mode not in ("constant", "edge", "reflect"):
        raise node.error(f"mode '{mode}' is not supported")
    width = [int(v) for v in _tuple(a, "pad_width")]
    pads = width[0::2] + width[1::2]
    ins = [node.inputs[0], ctx.ints(node.name + "_pads", pads)]
    if mode == "constant":
        ins.append(ctx.const(node.name + "_value", _float(a, "constant_value", 0.0),
                             node.in_dtypes[0]))
    ctx.add("Pad", ins, node.outputs, mode=mode)


@register("UpSampling")
def _upsampling(ctx, node):
    a = node.attrs
    if a.get("sample_type", "nearest") != "nearest":
        raise node.error("only sample_type='nearest' converts to ONNX (bilinear does not)")
    if len(node.inputs) != 1:
        raise node.error("only one input (num_args=1) converts to ONNX")
    s = float(_int(a, "scale", 1))
    ndim = len(node.in_shapes[0])
    scales = ctx.const(node.name + "_scales", [1.0, 1.0] + [s] * (ndim - 2), np.float32)
    ctx.add("Resize", [node.inputs[0], "", scales], node.outputs, mode="nearest",
            coordinate_transformation_mode="asymmetric", nearest_mode="floor")


# ---- softmax family ------------------------------------------------------------------

def _softmax_like(ctx, node, op):
    a = node.attrs
    if _bool(a, "use_length", False):
        raise node.error("use_length=True is not supported")
    x = node.inputs[0]
    t = _val(a, "temperature")
    if t is not None and float(t) != 1.0:
        x = ctx.add("Div", [x, ctx.const(node.name + "_temp", float(t), node.in_dtypes[0])],
                    node.name + "_scaled")[0]
    out_dt = node.out_dtypes[0]
    if out_dt != node.in_dtypes[0]:
        y = ctx.add(op, [x], node.name + "_sm", axis=_int(a, "axis", -1))
        ctx.add("Cast", y, node.outputs, to=ctx.dtype_code(out_dt))
    else:
        ctx.add(op, [x], node.outputs, axis=_int(a, "axis", -1))


@register("softmax")
def _softmax(ctx, node):
    _softmax_like(ctx, node, "Softmax")


@register("log_softmax")
def _log_softmax(ctx, node):
    _softmax_like(ctx, node, "LogSoftmax")


@register("SoftmaxOutput", "Softmax")
def _softmax_output(ctx, node):
    # MXNet normalizes over axis 1 with multi_output, else over all axes but the first
    # (the input seen as (batch, -1); a rank-2 input is the plain last-axis case)
    if _bool(node.attrs, "multi_output", False):
        ctx.add("Softmax", node.inputs[:1], node.outputs, axis=1)
        return
    shape = list(node.out_shapes[0])
    if len(shape) <= 2:
        ctx.add("Softmax", node.inputs[:1], node.outputs, axis=-1)
        return
    flat = ctx.add("Flatten", node.inputs[:1], node.name + "_flat", axis=1)
    probs = ctx.add("Softmax", flat, node.name + "_probs", axis=-1)
    ctx.add("Reshape", [probs[0], ctx.ints(node.name + "_shape", [0] + shape[1:])], node.outputs)


@register("SoftmaxActivation")
def _softmax_activation(ctx, node):
    # MXNet 1.9.1: mode='channel' is axis 1; 'instance' normalizes over the last axis
    axis = 1 if node.attrs.get("mode", "instance") == "channel" else -1
    ctx.add("Softmax", node.inputs[:1], node.outputs, axis=axis)


@register("LinearRegressionOutput", "MAERegressionOutput")
def _regression_output(ctx, node):
    ctx.add("Identity", node.inputs[:1], node.outputs)


@register("LogisticRegressionOutput")
def _logistic_output(ctx, node):
    ctx.add("Sigmoid", node.inputs[:1], node.outputs)


# ---- shape manipulation --------------------------------------------------------------

@register("Reshape", "reshape")
def _reshape(ctx, node):
    a = node.attrs
    shape = [int(v) for v in _tuple(a, "shape")]
    if not shape:
        shape = [int(v) for v in _tuple(a, "target_shape")]
    simple = all(v >= -1 for v in shape) and not _bool(a, "reverse", False)
    if not simple:
        if ctx.dynamic:
            raise node.error(f"shape {tuple(shape)} (codes -2/-3/-4 or reverse) cannot be "
                             "expressed with dynamic input shapes")
        shape = list(node.out_shapes[0])  # the shape MXNet's codes give for these inputs
    ctx.add("Reshape", [node.inputs[0], ctx.ints(node.name + "_shape", shape)], node.outputs)


@register("transpose")
def _transpose(ctx, node):
    axes = [int(v) for v in _tuple(node.attrs, "axes")]
    ctx.add("Transpose", node.inputs[:1], node.outputs, perm=axes or None)


@register("SwapAxis", "swapaxes")
def _swapaxes(ctx, node):
    ndim = len(node.in_shapes[0])
    perm = list(range(ndim))
    d1, d2 = _int(node.attrs, "dim1", 0), _int(node.attrs, "dim2", 0)
    perm[d1], perm[d2] = perm[d2], perm[d1]
    ctx.add("Transpose", node.inputs[:1], node.outputs, perm=perm)


@register("Concat", "concat")
def _concat(ctx, node):
    ctx.add("Concat", node.inputs, node.outputs, axis=_int(node.attrs, "dim", 1))


@register("stack")
def _stack(ctx, node):
    axis = _int(node.attrs, "axis", 0)
    ax = ctx.ints(node.name + "_axis", [axis])
    parts = [ctx.add("Unsqueeze", [x, ax], f"{node.name}_u{i}")[0]
             for i, x in enumerate(node.inputs)]
    ctx.add("Concat", parts, node.outputs, axis=axis)


@register("expand_dims")
def _expand_dims(ctx, node):
    ctx.add("Unsqueeze", [node.inputs[0], ctx.ints(node.name + "_axes",
                                                   [_int(node.attrs, "axis", 0)])],
            node.outputs)


@register("squeeze")
def _squeeze(ctx, node):
    axes = [int(v) for v in _tuple(node.attrs, "axis")]
    ins = [node.inputs[0]] + ([ctx.ints(node.name + "_axes", axes)] if axes else [])
    ctx.add("Squeeze", ins, node.outputs)


@register("slice", "crop")
def _slice(ctx, node):
    a = node.attrs
    begin, end = _tuple(a, "begin"), _tuple(a, "end")
    step = _tuple(a, "step") or (None,) * len(begin)
    starts, ends, axes, steps = [], [], [], []
    for ax, (b, e, s) in enumerate(zip(begin, end, step)):
        s = 1 if s is None else int(s)
        if b is None and e is None and s == 1:
            continue
        starts.append((0 if s > 0 else INT_MAX) if b is None else int(b))
        ends.append((INT_MAX if s > 0 else INT_MIN) if e is None else int(e))
        axes.append(ax)
        steps.append(s)
    if not axes:
        ctx.add("Identity", node.inputs[:1], node.outputs)
        return
    ctx.add("Slice", [node.inputs[0], ctx.ints(node.name + "_starts", starts),
                      ctx.ints(node.name + "_ends", ends), ctx.ints(node.name + "_axes", axes),
                      ctx.ints(node.name + "_steps", steps)], node.outputs)


@register("slice_axis")
def _slice_axis(ctx, node):
    a = node.attrs
    e = _val(a, "end")
    ctx.add("Slice", [node.inputs[0], ctx.ints(node.name + "_starts", [_int(a, "begin", 0)]),
                      ctx.ints(node.name + "_ends", [INT_MAX if e is None else int(e)]),
                      ctx.ints(node.name + "_axes", [_int(a, "axis", 0)])], node.outputs)


@register("SliceChannel", "split")
def _split(ctx, node):
    a = node.attrs
    axis, n = _int(a, "axis", 1), _int(a, "num_outputs", 1)
    squeeze = _bool(a, "squeeze_axis", False)
    outs = node.outputs
    parts = [f"{node.name}_part{i}" for i in range(n)] if squeeze else outs
    ctx.add("Split", node.inputs[:1], parts, axis=axis)
    if squeeze:
        ax = ctx.ints(node.name + "_axis", [axis])
        for p, o in zip(parts, outs):
            ctx.add("Squeeze", [p, ax], [o])


@register("tile")
def _tile(ctx, node):
    reps = [int(v) for v in _tuple(node.attrs, "reps")]
    ndim = len(node.in_shapes[0])
    x = node.inputs[0]
    if len(reps) > ndim:
        x = ctx.add("Reshape", [x, ctx.ints(node.name + "_shape",
                                            [1] * (len(reps) - ndim) + list(node.in_shapes[0]))],
                    node.name + "_r")[0]
    reps = [1] * (max(ndim, len(reps)) - len(reps)) + reps
    ctx.add("Tile", [x, ctx.ints(node.name + "_reps", reps)], node.outputs)


@register("broadcast_to")
def _broadcast_to(ctx, node):
    ctx.add("Expand", [node.inputs[0], ctx.ints(node.name + "_shape", node.out_shapes[0])],
            node.outputs)


@register("zeros_like", "ones_like")
def _fill_like(ctx, node):
    value = 0 if node.op == "zeros_like" else 1
    shape = ctx.add("Shape", node.inputs[:1], node.name + "_shape")
    ctx.add("ConstantOfShape", shape, node.outputs,
            value=ctx.onnx.numpy_helper.from_array(np.array([value], node.out_dtypes[0])))


@register("Cast", "cast")
def _cast(ctx, node):
    ctx.add("Cast", node.inputs[:1], node.outputs, to=ctx.dtype_code(node.out_dtypes[0]))


@register("where")
def _where(ctx, node):
    cond, x, y = node.inputs
    c = ctx.add("Cast", [cond], node.name + "_cond", to=ctx.onnx.TensorProto.BOOL)[0]
    nc, nx = len(node.in_shapes[0]), len(node.in_shapes[1])
    if nc < nx:  # MXNet: a 1-D condition selects along the first axis
        c = ctx.add("Unsqueeze", [c, ctx.ints(node.name + "_axes", range(nc, nx))],
                    node.name + "_cond_b")[0]
    ctx.add("Where", [c, x, y], node.outputs)


# ---- arithmetic ----------------------------------------------------------------------

_BINARY = {"Add": ("elemwise_add", "broadcast_add", "_plus", "_add", "broadcast_plus"),
           "Sub": ("elemwise_sub", "broadcast_sub", "_minus", "_sub", "broadcast_minus"),
           "Mul": ("elemwise_mul", "broadcast_mul", "_mul"),
           "Div": ("elemwise_div", "broadcast_div", "_div"),
           "Pow": ("broadcast_power", "_power", "_Power"),
           "Max": ("broadcast_maximum", "_maximum", "_Maximum"),
           "Min": ("broadcast_minimum", "_minimum", "_Minimum")}
_COMPARE = {"Equal": ("broadcast_equal", "_equal"), "Greater": ("broadcast_greater", "_greater"),
            "Less": ("broadcast_lesser", "_lesser"),
            "GreaterOrEqual": ("broadcast_greater_equal", "_greater_equal"),
            "LessOrEqual": ("broadcast_lesser_equal", "_lesser_equal")}


def _binary(onnx_op):
    def conv(ctx, node):
        ctx.add(onnx_op, node.inputs[:2], node.outputs)
    return conv


def _compare(onnx_op):
    def conv(ctx, node):
        b = ctx.add(onnx_op, node.inputs[:2], node.name + "_bool")
        ctx.add("Cast", b, node.outputs, to=ctx.dtype_code(node.out_dtypes[0]))
    return conv


for _ox, _names in _BINARY.items():
    register(*_names)(_binary(_ox))
for _ox, _names in _COMPARE.items():
    register(*_names)(_compare(_ox))


@register("broadcast_not_equal", "_not_equal")
def _not_equal(ctx, node):
    b = ctx.add("Equal", node.inputs[:2], node.name + "_eq")
    n = ctx.add("Not", b, node.name + "_ne")
    ctx.add("Cast", n, node.outputs, to=ctx.dtype_code(node.out_dtypes[0]))


_SCALAR = {"_plus_scalar": ("Add", False), "_minus_scalar": ("Sub", False),
           "_rminus_scalar": ("Sub", True), "_mul_scalar": ("Mul", False),
           "_div_scalar": ("Div", False), "_rdiv_scalar": ("Div", True),
           "_power_scalar": ("Pow", False), "_rpower_scalar": ("Pow", True),
           "_maximum_scalar": ("Max", False), "_minimum_scalar": ("Min", False)}
_SCALAR_CMP = {"_equal_scalar": "Equal", "_greater_scalar": "Greater",
               "_lesser_scalar": "Less", "_greater_equal_scalar": "GreaterOrEqual",
               "_lesser_equal_scalar": "LessOrEqual"}


def _scalar(onnx_op, reverse):
    def conv(ctx, node):
        s = ctx.const(node.name + "_scalar", _float(node.attrs, "scalar", 0.0), node.in_dtypes[0])
        ins = [s, node.inputs[0]] if reverse else [node.inputs[0], s]
        ctx.add(onnx_op, ins, node.outputs)
    return conv


def _scalar_cmp(onnx_op):
    def conv(ctx, node):
        s = ctx.const(node.name + "_scalar", _float(node.attrs, "scalar", 0.0), node.in_dtypes[0])
        b = ctx.add(onnx_op, [node.inputs[0], s], node.name + "_bool")
        ctx.add("Cast", b, node.outputs, to=ctx.dtype_code(node.out_dtypes[0]))
    return conv


for _mx, (_ox, _rev) in _SCALAR.items():
    register(_mx)(_scalar(_ox, _rev))
for _mx, _ox in _SCALAR_CMP.items():
    register(_mx)(_scalar_cmp(_ox))


@register("add_n", "ElementWiseSum")
def _add_n(ctx, node):
    ctx.add("Sum", node.inputs, node.outputs)


@register("clip")
def _clip(ctx, node):
    dt = node.in_dtypes[0]
    lo = ctx.const(node.name + "_min", _float(node.attrs, "a_min", 0.0), dt)
    hi = ctx.const(node.name + "_max", _float(node.attrs, "a_max", 0.0), dt)
    ctx.add("Clip", [node.inputs[0], lo, hi], node.outputs)


def _reduce(onnx_op):
    def conv(ctx, node):
        a = node.attrs
        ndim = len(node.in_shapes[0])
        axes = [_axis(int(v), ndim) for v in _tuple(a, "axis")]
        if _bool(a, "exclude", False):
            axes = [i for i in range(ndim) if i not in axes]
        keep = 1 if _bool(a, "keepdims", False) else 0
        if onnx_op == "ReduceSum":
            ins = [node.inputs[0]] + ([ctx.ints(node.name + "_axes", axes)] if axes else [])
            ctx.add(onnx_op, ins, node.outputs, keepdims=keep)
        else:
            ctx.add(onnx_op, node.inputs[:1], node.outputs, keepdims=keep, axes=axes or None)
    return conv


register("sum", "sum_axis")(_reduce("ReduceSum"))
register("mean")(_reduce("ReduceMean"))
register("max", "max_axis")(_reduce("ReduceMax"))
register("min", "min_axis")(_reduce("ReduceMin"))
register("prod")(_reduce("ReduceProd"))


@register("dot")
def _dot(ctx, node):
    a, b = node.inputs[:2]
    sa, sb = node.in_shapes[:2]
    if _bool(node.attrs, "transpose_a", False):
        a = ctx.add("Transpose", [a], node.name + "_at", perm=list(range(len(sa)))[::-1])[0]
        sa = sa[::-1]
    if _bool(node.attrs, "transpose_b", False):
        b = ctx.add("Transpose", [b], node.name + "_bt", perm=list(range(len(sb)))[::-1])[0]
        sb = sb[::-1]
    if len(sb) <= 2 and len(sa) >= 1:
        ctx.add("MatMul", [a, b], node.outputs)
        return
    # MXNet contracts a's last axis with b's first: flatten b to 2-D and reshape back
    b2 = ctx.add("Reshape", [b, ctx.ints(node.name + "_bshape", [sb[0], -1])],
                 node.name + "_b2")[0]
    mm = ctx.add("MatMul", [a, b2], node.name + "_mm")
    ctx.add("Reshape", mm + [ctx.ints(node.name + "_oshape", node.out_shapes[0])], node.outputs)


@register("batch_dot")
def _batch_dot(ctx, node):
    a, b = node.inputs[:2]
    for flag, which in (("transpose_a", 0), ("transpose_b", 1)):
        if _bool(node.attrs, flag, False):
            nd_ = len(node.in_shapes[which])
            perm = list(range(nd_ - 2)) + [nd_ - 1, nd_ - 2]
            t = ctx.add("Transpose", [node.inputs[which]], f"{node.name}_t{which}", perm=perm)[0]
            a, b = (t, b) if which == 0 else (a, t)
    ctx.add("MatMul", [a, b], node.outputs)


# ---- indexing ------------------------------------------------------------------------

@register("topk")
def _topk(ctx, node):
    a = node.attrs
    ret = a.get("ret_typ", "indices")
    if ret == "mask":
        raise node.error("ret_typ='mask' is not supported")
    x = node.inputs[0]
    axis = _val(a, "axis", -1)
    if axis is None:
        x = ctx.add("Reshape", [x, ctx.ints(node.name + "_flat", [-1])], node.name + "_x")[0]
        axis = 0
    k = ctx.ints(node.name + "_k", [_int(a, "k", 1)])
    vals, idx = node.name + "_values", node.name + "_indices"
    ctx.add("TopK", [x, k], [vals, idx], axis=int(axis),
            largest=0 if _bool(a, "is_ascend", False) else 1, sorted=1)
    idt = ctx.dtype_code(np.dtype(a.get("dtype", "float32")))
    if ret == "value":
        ctx.add("Identity", [vals], node.outputs[:1])
    elif ret == "indices":
        ctx.add("Cast", [idx], node.outputs[:1], to=idt)
    else:
        ctx.add("Identity", [vals], node.outputs[:1])
        ctx.add("Cast", [idx], node.outputs[1:2], to=idt)


def _arg(onnx_op):
    def conv(ctx, node):
        a = node.attrs
        x = node.inputs[0]
        axis = _val(a, "axis")
        keep = 1 if _bool(a, "keepdims", False) else 0
        if axis is None:
            x = ctx.add("Reshape", [x, ctx.ints(node.name + "_flat", [-1])], node.name + "_x")[0]
            axis, keep = 0, 1
        i = ctx.add(onnx_op, [x], node.name + "_i64", axis=int(axis), keepdims=keep)
        ctx.add("Cast", i, node.outputs, to=ctx.dtype_code(node.out_dtypes[0]))
    return conv


register("argmax")(_arg("ArgMax"))
register("argmin")(_arg("ArgMin"))
