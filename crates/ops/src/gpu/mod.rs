//! GPU kernels of the built-in operators (feature `cuda`): the element-wise
//! families, generated as CUDA C++ ([`source`]) and compiled with NVRTC on
//! first use. [`register`] adds a `Device::Gpu` kernel to each operator
//! already registered for the CPU, so shape and dtype inference, gradients
//! and graphs are the operator's own.

pub mod random;
pub mod source;

use oxnet_core::gpu::{self, KernelArgs, ShapeParam, StridesParam};
use oxnet_core::{registry, DType, Device, Error, NDArray, OpContext, Req, Result};
use source::{BinaryEntry, UnaryEntry, BINARY, DTYPES, UNARY};

/// The ordinal of the GPU a kernel runs on.
fn ordinal(ctx: &OpContext) -> Result<usize> {
    match ctx.device {
        Device::Gpu(i) => Ok(i),
        host => Err(Error::Device(format!("`{}`'s GPU kernel was called for {host}", ctx.op_name))),
    }
}

/// Errors for a dtype the operator's GPU kernel does not take.
fn check_dtype(ctx: &OpContext, dtype: DType, ints: bool) -> Result<()> {
    let float = matches!(dtype, DType::F32 | DType::F64);
    if DTYPES.contains(&dtype) && (float || ints) {
        return Ok(());
    }
    Err(Error::DType(format!("`{}` has no GPU kernel for {dtype} arrays", ctx.op_name)))
}

/// The request as the kernels' `add` flag; `None` for `Req::Null`.
fn add_flag(req: Req) -> Option<i32> {
    match req {
        Req::Null => None,
        Req::Add => Some(1),
        Req::Write | Req::Inplace => Some(0),
    }
}

fn address(x: &NDArray) -> u64 {
    x.raw_ptr() as u64
}

fn unary(e: &'static UnaryEntry, ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let (x, y) = (&ins[0], &outs[0]);
    let Some(add) = add_flag(ctx.req[0]) else { return Ok(()) };
    check_dtype(ctx, x.dtype(), e.ints)?;
    let dev = ordinal(ctx)?;
    let name = source::unary_name(e, x.dtype());
    let src = || source::unary_kernel(e, x.dtype()).map(|k| k.1);
    let mut args = KernelArgs::new();
    args.push(x.size() as i64).push(address(x)).push(address(y)).push(add);
    gpu::launch(dev, &name, src, gpu::grid_for(dev, x.size().div_ceil(source::UNROLL))?, &mut args)
}

fn binary(e: &'static BinaryEntry, ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let Some(add) = add_flag(ctx.req[0]) else { return Ok(()) };
    check_dtype(ctx, outs[0].dtype(), true)?;
    launch_binary(e, ordinal(ctx)?, &ins[0], &ins[1], &outs[0], add)
}

/// `o = e(a, b)` (`add`: `o += ...`), `a` and `b` broadcast to `o`'s shape.
fn launch_binary(e: &BinaryEntry, dev: usize, a: &NDArray, b: &NDArray, o: &NDArray, add: i32) -> Result<()> {
    let shape = ShapeParam::new(o.shape())?;
    let sa = StridesParam::broadcast(a.shape(), a.strides(), o.shape())?;
    let sb = StridesParam::broadcast(b.shape(), b.strides(), o.shape())?;
    let flat =
        (a.shape() == o.shape() && b.shape() == o.shape() && a.is_contiguous() && b.is_contiguous()) as i32;
    let name = source::binary_name(e, o.dtype());
    let src = || source::binary_kernel(e, o.dtype()).map(|k| k.1);
    let mut args = KernelArgs::new();
    args.push(shape)
        .push(sa)
        .push(sb)
        .push(address(a))
        .push(address(b))
        .push(address(o))
        .push(add)
        .push(flat);
    gpu::launch(dev, &name, src, gpu::grid_for(dev, o.size().div_ceil(source::UNROLL))?, &mut args)
}

/// `Activation(act_type)`: the one-input operator of that name.
fn activation(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let act = ctx.attrs.str("act_type")?;
    match UNARY.iter().find(|e| e.op == act && source::ACTIVATIONS.contains(&act)) {
        Some(e) => unary(e, ctx, ins, outs),
        None => gpu::fallback::host_call(ctx, ins, outs),
    }
}

/// `_activation_grad(out_grad, output, act_type)`.
fn activation_grad(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let act = ctx.attrs.str("act_type")?;
    let Some((_, e)) = source::ACTIVATION_GRAD.iter().find(|(a, _)| *a == act) else {
        return gpu::fallback::host_call(ctx, ins, outs);
    };
    let Some(add) = add_flag(ctx.req[0]) else { return Ok(()) };
    check_dtype(ctx, outs[0].dtype(), false)?;
    launch_binary(e, ordinal(ctx)?, &ins[0], &ins[1], &outs[0], add)
}

/// `sum` and `mean` (`mean`: scaled by 1/n) over the axes the attributes
/// name, for float arrays; integer sums (which wrap as on the CPU) run on the host.
fn sum(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray], mean: bool) -> Result<()> {
    let (x, o) = (&ins[0], &outs[0]);
    if !matches!(x.dtype(), DType::F32 | DType::F64) || x.dtype() != o.dtype() {
        return gpu::fallback::host_call(ctx, ins, outs);
    }
    let Some(add) = add_flag(ctx.req[0]) else { return Ok(()) };
    let dev = ordinal(ctx)?;
    let mask = crate::reduce::reduce_mask(ctx.attrs, x.ndim())?;
    let pick = |reduced: bool| -> (Vec<usize>, Vec<isize>) {
        mask.iter()
            .zip(x.shape().iter().zip(x.strides()))
            .filter(|(m, _)| **m == reduced)
            .map(|(_, (&d, &s))| (d, s))
            .unzip()
    };
    let (kept, kept_strides) = pick(false);
    let (red, red_strides) = pick(true);
    let n_red: usize = red.iter().product();
    let scale = if mean { 1.0 / n_red as f64 } else { 1.0 };
    let name = source::sum_name(x.dtype());
    let src = || source::sum_kernel(x.dtype()).map(|k| k.1);
    let mut args = KernelArgs::new();
    args.push(ShapeParam::new(&kept)?)
        .push(StridesParam::broadcast(&kept, &kept_strides, &kept)?)
        .push(ShapeParam::new(&red)?)
        .push(StridesParam::broadcast(&red, &red_strides, &red)?)
        .push(address(x))
        .push(address(o))
        .push(add)
        .push(scale);
    let n_out: usize = kept.iter().product();
    gpu::launch(dev, &name, src, (n_out.clamp(1, 65_535) as u32, source::REDUCE_BLOCK), &mut args)
}

/// `dot`: 2-D operands with any transposes, or N-d without (the lhs's last
/// axis contracted with the rhs's first), through cuBLAS; other cases on the host.
fn dot(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let (a, b, o) = (&ins[0], &ins[1], &outs[0]);
    let (ta, tb) = (ctx.attrs.bool("transpose_a")?, ctx.attrs.bool("transpose_b")?);
    let float = matches!(o.dtype(), DType::F32 | DType::F64 | DType::F16 | DType::BF16);
    let dims = match (a.shape(), b.shape()) {
        (&[a0, a1], &[b0, b1]) => {
            let (m, k) = if ta { (a1, a0) } else { (a0, a1) };
            Some((m, if tb { b0 } else { b1 }, k))
        }
        (sa, sb) if !ta && !tb && !sa.is_empty() && !sb.is_empty() => {
            let k = sa[sa.len() - 1];
            (k > 0).then(|| (a.size() / k, b.size() / k, k))
        }
        _ => None,
    };
    match dims {
        Some((m, n, k)) if float && k > 0 => {
            let Some(add) = add_flag(ctx.req[0]) else { return Ok(()) };
            let dev = ordinal(ctx)?;
            gpu::blas::gemm(
                dev,
                o.dtype(),
                ta,
                tb,
                (m, n, k),
                address(a),
                address(b),
                address(o),
                (1.0, add as f64),
            )
        }
        _ => gpu::fallback::host_call(ctx, ins, outs),
    }
}

/// `FullyConnected`: `data @ weight.T (+ bias)` through cuBLAS and a
/// broadcast add; accumulation requests and other dtypes run on the host.
fn fully_connected(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let (x, w, o) = (&ins[0], &ins[1], &outs[0]);
    let float = matches!(o.dtype(), DType::F32 | DType::F64);
    let (n, k) = match w.shape() {
        &[n, k] => (n, k),
        _ => (0, 0),
    };
    let write = matches!(ctx.req[0], Req::Write | Req::Inplace);
    if !float || !write || k == 0 || n == 0 {
        return gpu::fallback::host_call(ctx, ins, outs);
    }
    let dev = ordinal(ctx)?;
    let m = x.size() / k;
    gpu::blas::gemm(dev, o.dtype(), false, true, (m, n, k), address(x), address(w), address(o), (1.0, 0.0))?;
    if !ctx.attrs.bool("no_bias")? {
        // BINARY[0] is addition
        launch_binary(&BINARY[0], dev, o, &ins[2], o, 0)?;
    }
    Ok(())
}

fn scalar(
    e: &'static BinaryEntry,
    reversed: bool,
    ctx: &OpContext,
    ins: &[NDArray],
    outs: &[NDArray],
) -> Result<()> {
    let (x, y) = (&ins[0], &outs[0]);
    let Some(add) = add_flag(ctx.req[0]) else { return Ok(()) };
    check_dtype(ctx, x.dtype(), true)?;
    let dev = ordinal(ctx)?;
    let s = ctx.attrs.float("scalar")?;
    let name = source::scalar_name(e, reversed, x.dtype());
    let src = || source::scalar_kernel(e, reversed, x.dtype()).map(|k| k.1);
    let mut args = KernelArgs::new();
    args.push(x.size() as i64).push(address(x)).push(address(y)).push(s).push(add);
    gpu::launch(dev, &name, src, gpu::grid_for(dev, x.size().div_ceil(source::UNROLL))?, &mut args)
}

/// `multi_sgd_update` / `multi_sgd_mom_update` (`momentum`): one SGD
/// launch per weight, states updated in place; other dtypes on the host.
fn multi_sgd(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray], momentum: bool) -> Result<()> {
    let stride = 2 + momentum as usize;
    let float =
        ins.iter().all(|x| matches!(x.dtype(), DType::F32 | DType::F64) && x.dtype() == ins[0].dtype());
    if !float || ins.len() != stride * outs.len() {
        return gpu::fallback::host_call(ctx, ins, outs);
    }
    let dev = ordinal(ctx)?;
    let a = ctx.attrs;
    let pw = crate::optimizer::multi::per_weight(a)?;
    let (rescale, clip) = (a.float("rescale_grad")?, a.float("clip_gradient")?);
    let mu = if momentum { a.float("momentum")? } else { 0.0 };
    for (i, o) in outs.iter().enumerate() {
        if ctx.req[i] == Req::Null {
            continue;
        }
        if ctx.req[i] == Req::Add {
            return gpu::fallback::host_call(ctx, ins, outs);
        }
        let g = &ins[i * stride..(i + 1) * stride];
        let name = source::sgd_name(o.dtype(), momentum);
        let src = || source::sgd_kernel(o.dtype(), momentum).map(|k| k.1);
        let mom = if momentum { address(&g[2]) } else { 0 };
        let mut args = KernelArgs::new();
        args.push(o.size() as i64).push(address(&g[0])).push(address(&g[1])).push(mom).push(address(o));
        args.push(pw.lrs[i]).push(pw.wds[i]).push(rescale).push(clip).push(mu);
        gpu::launch(dev, &name, src, gpu::grid_for(dev, o.size())?, &mut args)?;
    }
    Ok(())
}

/// `softmax`, `log_softmax`, `softmin` (`scale_sign` -1) along `axis`;
/// a `length` input or an output dtype other than the input's runs on the host.
fn softmax(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray], log: bool, scale_sign: f64) -> Result<()> {
    let (x, y) = (&ins[0], &outs[0]);
    let float = matches!(x.dtype(), DType::F32 | DType::F64);
    if ins.len() > 1 || x.dtype() != y.dtype() || !float {
        return gpu::fallback::host_call(ctx, ins, outs);
    }
    let Some(add) = add_flag(ctx.req[0]) else { return Ok(()) };
    let dev = ordinal(ctx)?;
    let axis = oxnet_core::shape::normalize_axis(ctx.attrs.int("axis")?, x.ndim())?;
    let (n, inner) = (x.shape()[axis], x.shape()[axis + 1..].iter().product::<usize>());
    let rows = x.size() / n.max(1);
    if n == 0 || rows == 0 {
        return Ok(());
    }
    let scale = scale_sign / crate::nn::softmax::temperature(ctx.attrs)?;
    let name = source::softmax_name(x.dtype());
    let src = || source::softmax_kernel(x.dtype()).map(|k| k.1);
    let mut args = KernelArgs::new();
    args.push(rows as i64).push(n as i64).push(inner as i64).push(address(x)).push(address(y));
    args.push(scale).push(log as i32).push(add);
    gpu::launch(dev, &name, src, (rows.min(65_535) as u32, source::REDUCE_BLOCK), &mut args)
}

/// `pick(data, index)` and `_backward_pick(ograd, index, data)` (`scatter`).
fn pick(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray], scatter: bool) -> Result<()> {
    let (x, index, o) = (&ins[0], &ins[1], &outs[0]);
    let float = matches!(x.dtype(), DType::F32 | DType::F64);
    if !float || !DTYPES.contains(&index.dtype()) {
        return gpu::fallback::host_call(ctx, ins, outs);
    }
    let Some(add) = add_flag(ctx.req[0]) else { return Ok(()) };
    let dev = ordinal(ctx)?;
    let data_shape = if scatter { ins[2].shape() } else { x.shape() };
    let axis = crate::indexing::pick::pick_axis(ctx.attrs, data_shape.len())?;
    let n = data_shape[axis];
    let inner: usize = data_shape[axis + 1..].iter().product();
    let count = index.size();
    if n == 0 {
        return gpu::fallback::host_call(ctx, ins, outs); // the CPU's error
    }
    if scatter && add == 0 {
        o.fill(0.0)?;
    }
    let wrap = (ctx.attrs.str("mode")? == "wrap") as i32;
    let name = source::pick_name(x.dtype(), index.dtype(), scatter);
    let src = || source::pick_kernel(x.dtype(), index.dtype(), scatter).map(|k| k.1);
    let mut args = KernelArgs::new();
    args.push(count as i64)
        .push(n as i64)
        .push(inner as i64)
        .push(address(x))
        .push(address(index))
        .push(address(o));
    args.push(wrap).push(add);
    gpu::launch(dev, &name, src, gpu::grid_for(dev, count)?, &mut args)
}

/// `adam_update(weight, grad, mean, var)`, moments in place; accumulation
/// requests and other dtypes on the host.
fn adam(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let o = &outs[0];
    let float = ins.iter().all(|x| matches!(x.dtype(), DType::F32 | DType::F64) && x.dtype() == o.dtype());
    match ctx.req[0] {
        Req::Null => return Ok(()),
        Req::Add => return gpu::fallback::host_call(ctx, ins, outs),
        _ if !float || ins.len() != 4 => return gpu::fallback::host_call(ctx, ins, outs),
        _ => {}
    }
    let dev = ordinal(ctx)?;
    let a = ctx.attrs;
    let name = source::adam_name(o.dtype());
    let src = || source::adam_kernel(o.dtype()).map(|k| k.1);
    let mut args = KernelArgs::new();
    args.push(o.size() as i64);
    for x in ins.iter().chain([o]) {
        args.push(address(x));
    }
    for key in ["lr", "beta1", "beta2", "epsilon", "wd", "rescale_grad", "clip_gradient"] {
        args.push(a.float(key)?);
    }
    gpu::launch(dev, &name, src, gpu::grid_for(dev, o.size())?, &mut args)
}

/// `_backward_reshape_to`: the values in the output's shape.
fn reshape_back(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    match ctx.req[0] {
        Req::Null => Ok(()),
        Req::Write | Req::Inplace => outs[0].assign_from(&ins[0].reshape_to(outs[0].shape())?),
        Req::Add => gpu::fallback::host_call(ctx, ins, outs),
    }
}

/// Adds `kernel` as the GPU kernel of the registered operator `name`.
fn add_kernel(
    name: &str,
    kernel: impl Fn(&OpContext, &[NDArray], &[NDArray]) -> Result<()> + Send + Sync + 'static,
) {
    match registry::get(name) {
        Ok(op) => {
            registry::register((*op).clone().forward_on(Device::Gpu(0), kernel));
        }
        Err(_) => eprintln!("oxnet warning: no operator `{name}` to give a GPU kernel"),
    }
}

/// Gives the operators in this module their GPU kernels (after the CPU
/// registrations, which it extends).
pub(crate) fn register() {
    add_kernel("Activation", activation);
    add_kernel("_activation_grad", activation_grad);
    add_kernel("sum", |ctx, ins, outs| sum(ctx, ins, outs, false));
    add_kernel("mean", |ctx, ins, outs| sum(ctx, ins, outs, true));
    add_kernel("dot", dot);
    add_kernel("FullyConnected", fully_connected);
    add_kernel("multi_sgd_update", |ctx, ins, outs| multi_sgd(ctx, ins, outs, false));
    add_kernel("multi_sgd_mom_update", |ctx, ins, outs| multi_sgd(ctx, ins, outs, true));
    add_kernel("_backward_reshape_to", reshape_back);
    add_kernel("adam_update", adam);
    random::register();
    add_kernel("softmax", |ctx, ins, outs| softmax(ctx, ins, outs, false, 1.0));
    add_kernel("log_softmax", |ctx, ins, outs| softmax(ctx, ins, outs, true, 1.0));
    add_kernel("softmin", |ctx, ins, outs| softmax(ctx, ins, outs, false, -1.0));
    add_kernel("pick", |ctx, ins, outs| pick(ctx, ins, outs, false));
    add_kernel("_backward_pick", |ctx, ins, outs| pick(ctx, ins, outs, true));
    for e in UNARY {
        add_kernel(e.op, move |ctx, ins, outs| unary(e, ctx, ins, outs));
    }
    for e in BINARY {
        add_kernel(e.broadcast, move |ctx, ins, outs| binary(e, ctx, ins, outs));
        add_kernel(e.same_shape, move |ctx, ins, outs| binary(e, ctx, ins, outs));
        add_kernel(e.scalar, move |ctx, ins, outs| scalar(e, false, ctx, ins, outs));
        if let Some(r) = e.reversed {
            add_kernel(r, move |ctx, ins, outs| scalar(e, true, ctx, ins, outs));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::source::{catalog, BINARY, UNARY};
    use oxnet_core::{registry, Device};

    /// Every operator in the tables exists and has its GPU kernel.
    #[test]
    fn every_table_entry_has_a_gpu_kernel() {
        let mut names: Vec<&str> = UNARY.iter().map(|e| e.op).collect();
        names.extend(["Activation", "_activation_grad", "sum", "mean", "dot", "FullyConnected"]);
        names.extend(["multi_sgd_update", "multi_sgd_mom_update", "_backward_reshape_to"]);
        names.extend(["softmax", "log_softmax", "softmin", "pick", "_backward_pick", "adam_update"]);
        for e in BINARY {
            names.extend([e.broadcast, e.same_shape, e.scalar]);
            names.extend(e.reversed);
        }
        for n in names {
            let op = registry::get(n).unwrap_or_else(|_| panic!("no operator {n}"));
            assert!(op.kernel_for(Device::Gpu(0)).is_ok(), "{n} has no GPU kernel");
            assert!(op.kernel_for(Device::Cpu).is_ok(), "{n} lost its CPU kernel");
        }
    }

    /// Every generated kernel compiles with NVRTC for sm_80 and sm_90
    /// (Ampere, Hopper). NVRTC needs no GPU; where it cannot be loaded the
    /// check says so, and fails when `OXNET_REQUIRE_NVRTC=1` (the test
    /// script sets it after installing NVRTC's wheel).
    #[test]
    fn every_generated_kernel_compiles_with_nvrtc() {
        if !oxnet_core::gpu::nvrtc_available() {
            assert!(
                std::env::var("OXNET_REQUIRE_NVRTC").as_deref() != Ok("1"),
                "OXNET_REQUIRE_NVRTC=1 but NVRTC cannot be loaded (put nvidia-cuda-nvrtc's lib folder on LD_LIBRARY_PATH)"
            );
            eprintln!("skipped: NVRTC (libnvrtc.so.13/.12) cannot be loaded here");
            return;
        }
        let mut kernels = catalog().unwrap();
        kernels.extend(oxnet_core::gpu::catalog().unwrap());
        let mut names = std::collections::HashSet::new();
        for (name, _) in &kernels {
            assert!(names.insert(name.clone()), "two kernels are named {name}");
        }
        // NVRTC is thread-safe: split the work over the cores
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let chunk = kernels.len().div_ceil(threads);
        std::thread::scope(|s| {
            for part in kernels.chunks(chunk) {
                s.spawn(move || {
                    for (name, src) in part {
                        for arch in ["sm_80", "sm_90"] {
                            let image =
                                oxnet_core::gpu::compile(src, name, arch).unwrap_or_else(|e| panic!("{e}"));
                            assert!(!image.is_empty());
                        }
                    }
                });
            }
        });
        assert!(kernels.len() > 300, "{} kernels", kernels.len());
    }
}
