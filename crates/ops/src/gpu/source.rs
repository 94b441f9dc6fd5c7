//! CUDA C++ for the element-wise operators, generated per operator and
//! dtype: the tables of per-element expressions and the kernel templates.
//! Device-free: CI compiles every kernel here with NVRTC without a GPU.

use oxnet_core::gpu::index::{c_type, cast_fn, compute_type};
use oxnet_core::gpu::PRELUDE;
use oxnet_core::{DType, Result};

/// A one-input operator: its name and its expression of `x` in the
/// compute type `C`; `ints` when integer dtypes take it too.
pub struct UnaryEntry {
    /// The registered operator's name.
    pub op: &'static str,
    /// The per-element expression of `x`.
    pub expr: &'static str,
    /// Whether integer dtypes have the kernel.
    pub ints: bool,
}

const fn u(op: &'static str, expr: &'static str, ints: bool) -> UnaryEntry {
    UnaryEntry { op, expr, ints }
}

/// The one-input operators with GPU kernels.
pub const UNARY: &[UnaryEntry] = &[
    u("negative", "-x", true),
    u("abs", "(x < (C)0 ? -x : x)", true),
    u("sign", "(C)((x > (C)0) - (x < (C)0))", true),
    u("square", "x * x", true),
    u("_copy", "x", true),
    u("exp", "exp(x)", false),
    u("log", "log(x)", false),
    u("log1p", "log1p(x)", false),
    u("expm1", "expm1(x)", false),
    u("log2", "log2(x)", false),
    u("log10", "log10(x)", false),
    u("sqrt", "sqrt(x)", false),
    u("rsqrt", "(C)1 / sqrt(x)", false),
    u("cbrt", "cbrt(x)", false),
    u("rcbrt", "(C)1 / cbrt(x)", false),
    u("reciprocal", "(C)1 / x", false),
    u("sin", "sin(x)", false),
    u("cos", "cos(x)", false),
    u("tan", "tan(x)", false),
    u("arcsin", "asin(x)", false),
    u("arccos", "acos(x)", false),
    u("arctan", "atan(x)", false),
    u("sinh", "sinh(x)", false),
    u("cosh", "cosh(x)", false),
    u("tanh", "tanh(x)", false),
    u("arcsinh", "asinh(x)", false),
    u("arccosh", "acosh(x)", false),
    u("arctanh", "atanh(x)", false),
    u("degrees", "x * (C)57.29577951308232", false),
    u("radians", "x * (C)0.017453292519943295", false),
    u("sigmoid", "(C)1 / ((C)1 + exp(-x))", false),
    u("relu", "(x > (C)0 ? x : (C)0)", false),
    u("softrelu", "(x > (C)0 ? x : (C)0) + log1p(exp(-(x < (C)0 ? -x : x)))", false),
    u("softsign", "x / ((C)1 + (x < (C)0 ? -x : x))", false),
    u("erf", "erf(x)", false),
    u("gelu", "(C)0.5 * x * ((C)1 + erf(x * (C)0.7071067811865476))", false),
    u("floor", "floor(x)", true),
    u("ceil", "ceil(x)", true),
    u("round", "round(x)", true),
    u("rint", "rint(x)", true),
    u("trunc", "trunc(x)", true),
    u("fix", "trunc(x)", true),
    u("gamma", "tgamma(x)", false),
    u("gammaln", "lgamma(x)", false),
];

/// A two-operand operator family: its expression of `a` and `b` and the
/// names of its broadcasting, same-shape, scalar and reversed-scalar forms.
pub struct BinaryEntry {
    /// The per-element expression of `a` (lhs) and `b` (rhs).
    pub expr: &'static str,
    /// The broadcasting operator (`broadcast_add`).
    pub broadcast: &'static str,
    /// The same-shape operator (`elemwise_add`).
    pub same_shape: &'static str,
    /// The operator with a scalar rhs (`_plus_scalar`).
    pub scalar: &'static str,
    /// The operator with a scalar lhs (`_rminus_scalar`), if any.
    pub reversed: Option<&'static str>,
}

const fn b(
    expr: &'static str,
    broadcast: &'static str,
    same_shape: &'static str,
    scalar: &'static str,
    reversed: Option<&'static str>,
) -> BinaryEntry {
    BinaryEntry { expr, broadcast, same_shape, scalar, reversed }
}

/// Python's modulo (the result takes the sign of `b`; 0 where `b` is 0).
const MOD: &str = "(b == (C)0 ? (C)0 : ox_mod(a, b))";

/// The two-operand operators with GPU kernels.
pub const BINARY: &[BinaryEntry] = &[
    b("a + b", "broadcast_add", "elemwise_add", "_plus_scalar", None),
    b("a - b", "broadcast_sub", "elemwise_sub", "_minus_scalar", Some("_rminus_scalar")),
    b("a * b", "broadcast_mul", "elemwise_mul", "_mul_scalar", None),
    // integer division by zero gives 0, as on the CPU
    b(
        "((OX_INT && b == (C)0) ? (C)0 : a / b)",
        "broadcast_div",
        "elemwise_div",
        "_div_scalar",
        Some("_rdiv_scalar"),
    ),
    b("pow(a, b)", "broadcast_power", "_power", "_power_scalar", Some("_rpower_scalar")),
    b("(a > b ? a : b)", "broadcast_maximum", "_maximum", "_maximum_scalar", None),
    b("(a < b ? a : b)", "broadcast_minimum", "_minimum", "_minimum_scalar", None),
    b(MOD, "broadcast_mod", "_mod", "_mod_scalar", Some("_rmod_scalar")),
    b("hypot(a, b)", "broadcast_hypot", "_hypot", "_hypot_scalar", None),
    b("(C)(a == b)", "broadcast_equal", "_equal", "_equal_scalar", None),
    b("(C)(a != b)", "broadcast_not_equal", "_not_equal", "_not_equal_scalar", None),
    b("(C)(a > b)", "broadcast_greater", "_greater", "_greater_scalar", None),
    b("(C)(a >= b)", "broadcast_greater_equal", "_greater_equal", "_greater_equal_scalar", None),
    b("(C)(a < b)", "broadcast_lesser", "_lesser", "_lesser_scalar", None),
    b("(C)(a <= b)", "broadcast_lesser_equal", "_lesser_equal", "_lesser_equal_scalar", None),
    b("(C)(a != (C)0 && b != (C)0)", "broadcast_logical_and", "_logical_and", "_logical_and_scalar", None),
    b("(C)(a != (C)0 || b != (C)0)", "broadcast_logical_or", "_logical_or", "_logical_or_scalar", None),
    b(
        "(C)((a != (C)0) != (b != (C)0))",
        "broadcast_logical_xor",
        "_logical_xor",
        "_logical_xor_scalar",
        None,
    ),
];

/// `_activation_grad` by `act_type`: `a` is the output gradient, `b` the
/// activation's output (names only for the kernel; no operators of these names).
pub const ACTIVATION_GRAD: &[(&str, BinaryEntry)] = &[
    ("relu", b("(b > (C)0 ? a : (C)0)", "activation_grad_relu", "", "", None)),
    ("sigmoid", b("a * (b * ((C)1 - b))", "activation_grad_sigmoid", "", "", None)),
    ("tanh", b("a * ((C)1 - b * b)", "activation_grad_tanh", "", "", None)),
];

/// `Activation`'s `act_type`s, each the one-input operator of that name.
pub const ACTIVATIONS: &[&str] = &["relu", "sigmoid", "tanh", "softrelu", "softsign"];

/// Name and source of the reduction kernel `sum` (`mean` with `scale`
/// 1/n) on `dtype`: one block per output element (a grid-stride loop over
/// them), its threads striding over the reduced elements, then a tree in
/// shared memory. `(kept shape, kept strides, reduced shape, reduced
/// strides, x, o, add, scale)`.
pub fn sum_kernel(dtype: DType) -> Result<(String, String)> {
    let name = sum_name(dtype);
    let source = format!(
        "{head}{BLOCK_REDUCE}extern \"C\" __global__ void {name}(OxShape kept, OxStrides ks, OxShape red, OxStrides rs, \
         const T* __restrict__ x, T* __restrict__ o, int add, double scale) {{\n\
           __shared__ C buf[{REDUCE_BLOCK}];\n\
           for (long long out = blockIdx.x; out < kept.n; out += gridDim.x) {{\n\
             const long long base = ox_offset(kept, ks, out);\n\
             C acc = (C)0;\n\
             for (long long r = threadIdx.x; r < red.n; r += blockDim.x) acc += (C)x[base + ox_offset(red, rs, r)];\n\
             const C r = ox_block_reduce(buf, acc, [](C a, C b) {{ return a + b; }}) * (C)scale;\n\
             if (threadIdx.x == 0) o[out] = add ? ox_to((C)o[out] + r) : ox_to(r);\n\
           }}\n\
         }}\n",
        head = head(dtype)?,
    );
    Ok((name, source))
}

/// Name and source of the SGD update (`momentum`: with a momentum state
/// updated in place) on `dtype`, as the CPU's rule: `(n, w, g, mom, o, lr,
/// wd, rescale, clip, momentum)`; `clip < 0` leaves gradients unclipped.
pub fn sgd_kernel(dtype: DType, momentum: bool) -> Result<(String, String)> {
    let name = sgd_name(dtype, momentum);
    let step = if momentum {
        "C m = mu * (C)mom[i] - lr * wd * wv - lr * gv; mom[i] = ox_to(m); o[i] = ox_to(wv + m);"
    } else {
        "o[i] = ox_to(wv + (-(lr * wd * wv) - lr * gv));"
    };
    let source = format!(
        "{head}extern \"C\" __global__ void {name}(long long n, const T* w, const T* g, T* mom, T* o, double lr_, \
         double wd_, double rescale_, double clip_, double mu_) {{\n\
           const C lr = (C)lr_, wd = (C)wd_, rescale = (C)rescale_, clip = (C)clip_, mu = (C)mu_;\n\
           for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {{\n\
             C gv = rescale * (C)g[i];\n\
             if (clip >= (C)0) gv = gv > clip ? clip : (gv < -clip ? -clip : gv);\n\
             const C wv = (C)w[i];\n\
             {step}\n\
           }}\n\
         }}\n",
        head = head(dtype)?,
    );
    Ok((name, source))
}

/// Name and source of `adam_update` on `dtype`, as the CPU's rule:
/// `(n, w, g, mean, var, o, lr, beta1, beta2, epsilon, wd, rescale, clip)`;
/// the moments are updated in place.
pub fn adam_kernel(dtype: DType) -> Result<(String, String)> {
    let name = adam_name(dtype);
    let source = format!(
        "{head}extern \"C\" __global__ void {name}(long long n, const T* w, const T* g, T* mean, T* var, T* o, \
         double lr_, double b1_, double b2_, double eps_, double wd_, double rescale_, double clip_) {{\n\
           const C lr = (C)lr_, b1 = (C)b1_, b2 = (C)b2_, eps = (C)eps_, wd = (C)wd_, rescale = (C)rescale_, clip = (C)clip_;\n\
           for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {{\n\
             const C wv = (C)w[i];\n\
             C gr = (C)g[i] * rescale + wv * wd;\n\
             if (clip >= (C)0) gr = gr > clip ? clip : (gr < -clip ? -clip : gr);\n\
             const C m = b1 * (C)mean[i] + ((C)1 - b1) * gr;\n\
             const C v = b2 * (C)var[i] + ((C)1 - b2) * gr * gr;\n\
             mean[i] = ox_to(m); var[i] = ox_to(v);\n\
             o[i] = ox_to(wv - lr * (m / (sqrt(v) + eps)));\n\
           }}\n\
         }}\n",
        head = head(dtype)?,
    );
    Ok((name, source))
}

/// CUDA C++ of a block-wide reduction of `v` (`op`: a binary expression
/// of `a` and `b`) through shared memory `buf`; every thread gets the result.
const BLOCK_REDUCE: &str = r#"
template <typename C, typename F> __device__ __forceinline__ C ox_block_reduce(C* buf, C v, F f) {
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] = f(buf[threadIdx.x], buf[threadIdx.x + s]);
        __syncthreads();
    }
    C r = buf[0];
    __syncthreads();
    return r;
}
"#;

/// Name and source of `softmax` / `log_softmax` / `softmin` on `dtype` over
/// an axis of length `n` with `inner` elements after it: one block per row
/// (max, sum of exponentials, write). `(rows, n, inner, x, y, scale, log,
/// add)`; `scale` is ±1/temperature.
pub fn softmax_kernel(dtype: DType) -> Result<(String, String)> {
    let name = softmax_name(dtype);
    let source = format!(
        "{head}{BLOCK_REDUCE}extern \"C\" __global__ void {name}(long long rows, long long n, long long inner, \
         const T* __restrict__ x, T* __restrict__ y, double scale_, int log_out, int add) {{\n\
           __shared__ C buf[{REDUCE_BLOCK}];\n\
           const C scale = (C)scale_;\n\
           for (long long r = blockIdx.x; r < rows; r += gridDim.x) {{\n\
             const long long base = (r / inner) * n * inner + r % inner;\n\
             C m = (C)x[base] * scale;\n\
             for (long long k = threadIdx.x; k < n; k += blockDim.x) {{ C v = (C)x[base + k * inner] * scale; m = v > m ? v : m; }}\n\
             m = ox_block_reduce(buf, m, [](C a, C b) {{ return a > b ? a : b; }});\n\
             C s = (C)0;\n\
             for (long long k = threadIdx.x; k < n; k += blockDim.x) s += exp((C)x[base + k * inner] * scale - m);\n\
             s = ox_block_reduce(buf, s, [](C a, C b) {{ return a + b; }});\n\
             const C ls = log(s);\n\
             for (long long k = threadIdx.x; k < n; k += blockDim.x) {{\n\
               const long long i = base + k * inner;\n\
               const C z = (C)x[i] * scale - m;\n\
               const C v = log_out ? z - ls : exp(z) / s;\n\
               y[i] = add ? ox_to((C)y[i] + v) : ox_to(v);\n\
             }}\n\
           }}\n\
         }}\n",
        head = head(dtype)?,
    );
    Ok((name, source))
}

/// Name and source of `pick` (`scatter`: `_backward_pick`, adding each
/// picked gradient into its place) on data `dtype` with indices of
/// `index`: `(count, n, inner, data, index, out, wrap, add)`. An index
/// truncates toward zero (NaN gives 0), then clips or wraps, as on the CPU.
pub fn pick_kernel(dtype: DType, index: DType, scatter: bool) -> Result<(String, String)> {
    let name = pick_name(dtype, index, scatter);
    let body = if scatter {
        "o[(q * n + k) * inner + j] = ox_to((C)o[(q * n + k) * inner + j] + (C)x[r]);"
    } else {
        "const C v = (C)x[(q * n + k) * inner + j]; o[r] = add ? ox_to((C)o[r] + v) : ox_to(v);"
    };
    let source = format!(
        "{head}typedef {i} I;\n\
         extern \"C\" __global__ void {name}(long long count, long long n, long long inner, const T* __restrict__ x, \
         const I* __restrict__ idx, T* __restrict__ o, int wrap, int add) {{\n\
           for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < count; r += (long long)gridDim.x * blockDim.x) {{\n\
             const double f = (double)idx[r];\n\
             long long k = f != f ? 0 : (f >= 9.2e18 ? 9223372036854775807LL : (f <= -9.2e18 ? (-9223372036854775807LL - 1) : (long long)f));\n\
             if (wrap) {{ k %= n; if (k < 0) k += n; }} else {{ k = k < 0 ? 0 : (k >= n ? n - 1 : k); }}\n\
             const long long q = r / inner, j = r % inner;\n\
             {body}\n\
           }}\n\
         }}\n",
        head = head(dtype)?,
        i = c_type(index)?,
    );
    Ok((name, source))
}

/// Threads per block of [`sum_kernel`] (a power of two).
pub const REDUCE_BLOCK: u32 = 256;

/// Helpers the binary expressions use.
const HELPERS: &str = r#"
template <typename C> __device__ __forceinline__ C ox_mod(C a, C b) {
    C r = fmod(a, b);
    return (r != (C)0 && ((r < (C)0) != (b < (C)0))) ? r + b : r;
}
"#;

/// The dtypes with GPU element-wise kernels.
pub const DTYPES: &[DType] = &[DType::F32, DType::F64, DType::I32, DType::I64, DType::I8, DType::U8];

/// Elements each thread of an element-wise kernel handles per trip of its
/// grid-stride loop: their loads are issued together, which keeps enough
/// memory requests in flight to reach the device's bandwidth.
pub const UNROLL: usize = 4;

/// The body of an element-wise kernel over `n` elements: a grid-stride
/// loop that loads `UNROLL` elements (`load`, an expression of the flat
/// index `i` giving the operands as `C`), then computes `r` from them
/// (`compute`) and stores it under the request (`add`: accumulate).
fn elementwise_loop(operands: &[&str], load: &[&str], compute: &str) -> String {
    let decl: String = operands.iter().map(|o| format!("C {o}_[{UNROLL}]; ")).collect();
    let loads: String =
        operands.iter().zip(load).map(|(o, l)| format!("{o}_[k] = i < n ? (C)({l}) : (C)0; ")).collect();
    let bind: String = operands.iter().map(|o| format!("C {o} = {o}_[k]; ")).collect();
    format!(
        "  const long long stride = (long long)gridDim.x * blockDim.x;\n\
           for (long long i0 = blockIdx.x * (long long)blockDim.x + threadIdx.x; i0 < n; i0 += {UNROLL} * stride) {{\n\
             {decl}\n\
             #pragma unroll\n\
             for (int k = 0; k < {UNROLL}; ++k) {{ long long i = i0 + k * stride; {loads}}}\n\
             #pragma unroll\n\
             for (int k = 0; k < {UNROLL}; ++k) {{\n\
               long long i = i0 + k * stride;\n\
               if (i < n) {{ {bind}C r = {compute}; o[i] = add ? ox_to((C)o[i] + r) : ox_to(r); }}\n\
             }}\n\
           }}\n"
    )
}

/// The common head of a kernel source on `dtype`: the prelude, the types
/// `T` (storage) and `C` (compute), the conversion `ox_to` and the helpers.
fn head(dtype: DType) -> Result<String> {
    Ok(format!(
        "{PRELUDE}{HELPERS}\ntypedef {t} T; typedef {c} C;\n#define OX_INT {int}\n{cast}",
        int = !matches!(dtype, DType::F32 | DType::F64) as i32,
        t = c_type(dtype)?,
        c = compute_type(dtype)?,
        cast = cast_fn(dtype)?
    ))
}

/// Kernel name and source of a one-input operator on `dtype`:
/// `(n, x, o, add)` over contiguous arrays.
pub fn unary_kernel(e: &UnaryEntry, dtype: DType) -> Result<(String, String)> {
    let name = unary_name(e, dtype);
    let source = format!(
        "{head}extern \"C\" __global__ void {name}(long long n, const T* __restrict__ xp, T* __restrict__ o, int add) {{\n{body}}}\n",
        head = head(dtype)?,
        body = elementwise_loop(&["x"], &["xp[i]"], e.expr),
    );
    Ok((name, source))
}

/// Kernel name and source of a two-operand operator on `dtype`:
/// `(shape, lhs strides, rhs strides, a, b, o, add, flat)`; `flat` when
/// both operands are contiguous with the output's shape (no index maths).
pub fn binary_kernel(e: &BinaryEntry, dtype: DType) -> Result<(String, String)> {
    let name = binary_name(e, dtype);
    let source = format!(
        "{head}extern \"C\" __global__ void {name}(OxShape sh, OxStrides sa, OxStrides sb, const T* __restrict__ ap, \
         const T* __restrict__ bp, T* __restrict__ o, int add, int flat) {{\n  const long long n = sh.n;\n{body}}}\n",
        head = head(dtype)?,
        body = elementwise_loop(
            &["a", "b"],
            &["ap[flat ? i : ox_offset(sh, sa, i)]", "bp[flat ? i : ox_offset(sh, sb, i)]"],
            e.expr
        ),
    );
    Ok((name, source))
}

/// Kernel name and source of an operator with a scalar operand on `dtype`:
/// `(n, x, o, scalar, add)`; `reversed` puts the scalar on the left. The
/// scalar is first converted to the array's dtype, as on the CPU.
pub fn scalar_kernel(e: &BinaryEntry, reversed: bool, dtype: DType) -> Result<(String, String)> {
    let name = scalar_name(e, reversed, dtype);
    let (a, b) = if reversed { ("s", "x") } else { ("x", "s") };
    let source = format!(
        "{head}extern \"C\" __global__ void {name}(long long n, const T* __restrict__ xp, T* __restrict__ o, double scalar, int add) {{\n\
           const C s = (C)ox_to((C)scalar);\n{body}}}\n",
        head = head(dtype)?,
        body = elementwise_loop(&["x"], &["xp[i]"], &format!("ox_binary({a}, {b})")),
    );
    let source = source.replace(
        "extern \"C\"",
        &format!("__device__ __forceinline__ C ox_binary(C a, C b) {{ return {}; }}\nextern \"C\"", e.expr),
    );
    Ok((name, source))
}

// Kernel names: each stands for one source (the driver caches compiled
// kernels by name, so a launch generates the source only the first time).

/// The name of [`unary_kernel`].
pub fn unary_name(e: &UnaryEntry, dtype: DType) -> String {
    format!("ox_{}_{dtype}", e.op.trim_start_matches('_'))
}

/// The name of [`binary_kernel`].
pub fn binary_name(e: &BinaryEntry, dtype: DType) -> String {
    format!("ox_{}_{dtype}", e.broadcast)
}

/// The name of [`scalar_kernel`].
pub fn scalar_name(e: &BinaryEntry, reversed: bool, dtype: DType) -> String {
    let op = if reversed { e.reversed.unwrap_or(e.scalar) } else { e.scalar };
    format!("ox_{}_{dtype}", op.trim_start_matches('_'))
}

/// The name of [`sum_kernel`].
pub fn sum_name(dtype: DType) -> String {
    format!("ox_sum_{dtype}")
}

/// The name of [`sgd_kernel`].
pub fn sgd_name(dtype: DType, momentum: bool) -> String {
    format!("ox_sgd{}_{dtype}", if momentum { "_mom" } else { "" })
}

/// The name of [`adam_kernel`].
pub fn adam_name(dtype: DType) -> String {
    format!("ox_adam_{dtype}")
}

/// The name of [`softmax_kernel`].
pub fn softmax_name(dtype: DType) -> String {
    format!("ox_softmax_{dtype}")
}

/// The name of [`pick_kernel`].
pub fn pick_name(dtype: DType, index: DType, scatter: bool) -> String {
    format!("ox_{}_{dtype}_{index}", if scatter { "backward_pick" } else { "pick" })
}

/// Every kernel this module generates, as (name, source), for the
/// compile check.
pub fn catalog() -> Result<Vec<(String, String)>> {
    let mut all = Vec::new();
    for &dt in DTYPES {
        let float = matches!(dt, DType::F32 | DType::F64);
        for e in UNARY.iter().filter(|e| float || e.ints) {
            all.push(unary_kernel(e, dt)?);
        }
        for e in BINARY {
            all.push(binary_kernel(e, dt)?);
            all.push(scalar_kernel(e, false, dt)?);
            if e.reversed.is_some() {
                all.push(scalar_kernel(e, true, dt)?);
            }
        }
        if float {
            for (_, e) in ACTIVATION_GRAD {
                all.push(binary_kernel(e, dt)?);
            }
            all.push(sum_kernel(dt)?);
            all.push(sgd_kernel(dt, false)?);
            all.push(sgd_kernel(dt, true)?);
            all.push(adam_kernel(dt)?);
            all.push(softmax_kernel(dt)?);
            for &index in DTYPES {
                all.push(pick_kernel(dt, index, false)?);
                all.push(pick_kernel(dt, index, true)?);
            }
        }
    }
    all.extend(super::random::catalog()?);
    Ok(all)
}
