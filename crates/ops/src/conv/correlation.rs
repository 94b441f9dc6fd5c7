//! `Correlation`: FlowNet's correlation layer. It compares patches of two
//! feature maps of one shape (N, C, H, W): for every output position and
//! every displacement of a square neighbourhood it sums, over a
//! `kernel_size` x `kernel_size` patch and all channels, the products
//! (`is_multiply`) or the absolute differences of the two maps, divided by
//! `kernel_size² · C`.
//!
//! As in MXNet, both inputs are first zero-padded by `pad_size` into
//! channel-last copies (N, H + 2·pad, W + 2·pad, C); these are the two
//! hidden outputs `tmp1` and `tmp2`, which the backward pass reads. Output
//! position (i, j) puts the patch's top-left corner at
//! `(i·stride1 + max_displacement, j·stride1 + max_displacement)` in the
//! padded first map; output channel q shifts the second map's patch by
//! `((q / D) - r, (q % D) - r) · stride2` with `r = max_displacement /
//! stride2` and `D = 2r + 1`. The output extent of each axis is
//! `ceil((padded - 2·(max_displacement + (kernel_size - 1) / 2)) /
//! stride1)`.

use super::geometry::fmt_tuple;
use super::merge_shape;
use num_traits::{Float, NumCast, Zero};
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, BackwardArgs, BackwardDeps, DType, Error, FloatElement, NDArray, OpContext,
    OpDef, Req, Result,
};
use std::sync::Arc;

#[cfg(test)]
mod tests;

const OP: &str = "Correlation";

/// The parsed attributes.
#[derive(Debug, Clone, Copy)]
struct Params {
    /// Patch extent (odd).
    kernel: usize,
    /// Largest displacement of the second map's patch.
    max_disp: usize,
    /// Step between output positions in the first map.
    stride1: usize,
    /// Step between displacements in the second map.
    stride2: usize,
    /// Zero padding on every side of both maps.
    pad: usize,
    /// Products (true) or absolute differences (false).
    multiply: bool,
}

impl Params {
    /// Displacements on each side of the centre: `max_displacement / stride2`.
    fn radius(&self) -> usize {
        self.max_disp / self.stride2
    }

    /// Displacements per axis, `2·radius + 1`.
    fn grid(&self) -> usize {
        2 * self.radius() + 1
    }

    /// Margin the output leaves on each side of the padded map.
    fn border(&self) -> usize {
        self.max_disp + (self.kernel - 1) / 2
    }

    /// The (row, column) shift of output channel `q` in the second map.
    fn shift(&self, q: usize) -> (isize, isize) {
        let (g, r) = (self.grid() as isize, self.radius() as isize);
        let q = q as isize;
        ((q / g - r) * self.stride2 as isize, (q % g - r) * self.stride2 as isize)
    }
}

/// A non-negative attribute that fits MXNet's 32-bit unsigned field.
fn uint(attrs: &Attrs, name: &str, min: usize) -> Result<usize> {
    let v = attrs.int(name)?;
    if v < min as i64 || v > u32::MAX as i64 {
        return Err(Error::attr(name, format!("{OP}: {name} must lie in [{min}, {}], got {v}", u32::MAX)));
    }
    Ok(v as usize)
}

fn parse(attrs: &Attrs) -> Result<Params> {
    let kernel = uint(attrs, "kernel_size", 0)?;
    if kernel % 2 == 0 {
        return Err(Error::attr(
            "kernel_size",
            format!("{OP}: kernel_size must be an odd number, got {kernel}"),
        ));
    }
    let p = Params {
        kernel,
        max_disp: uint(attrs, "max_displacement", 0)?,
        stride1: uint(attrs, "stride1", 1)?,
        stride2: uint(attrs, "stride2", 1)?,
        pad: uint(attrs, "pad_size", 0)?,
        multiply: attrs.bool("is_multiply")?,
    };
    if p.grid().checked_mul(p.grid()).is_none() {
        return Err(Error::attr(
            "max_displacement",
            format!(
                "{OP}: max_displacement={} with stride2={} gives too many displacements",
                p.max_disp, p.stride2
            ),
        ));
    }
    Ok(p)
}

/// The sizes of one call: data (n, c, h, w), padded (ph, pw), output
/// (channels tc, th, tw).
#[derive(Debug, Clone, Copy)]
struct Geometry {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    ph: usize,
    pw: usize,
    tc: usize,
    th: usize,
    tw: usize,
}

/// The output extent along an axis of `extent` data positions, or an error
/// when the neighbourhood and the kernel do not fit.
fn top_extent(p: &Params, axis: &str, extent: usize) -> Result<usize> {
    let padded = extent + 2 * p.pad;
    let need = 2 * p.border();
    if padded <= need {
        return Err(Error::Shape(format!(
            "{OP}: kernel_size={} and max_displacement={} do not fit in data of {axis} {extent} padded by \
             pad_size={} (the padded {axis} must exceed 2·(max_displacement + (kernel_size - 1) / 2) = {need}, \
             got {padded})",
            p.kernel, p.max_disp, p.pad
        )));
    }
    Ok((padded - need).div_ceil(p.stride1))
}

/// The 4-d extents of input `what`, or an error naming it.
fn dims4(what: &str, shape: &[usize]) -> Result<[usize; 4]> {
    match *shape {
        [n, c, h, w] => Ok([n, c, h, w]),
        _ => Err(Error::Shape(format!(
            "{OP}: {what} must be 4-d (batch, channel, height, width), got shape {}",
            fmt_tuple(shape)
        ))),
    }
}

/// The geometry for data of (known) shape `shape`.
fn geometry(p: &Params, shape: &[usize]) -> Result<Geometry> {
    let [n, c, h, w] = dims4("data1", shape)?;
    Ok(Geometry {
        n,
        c,
        h,
        w,
        ph: h + 2 * p.pad,
        pw: w + 2 * p.pad,
        tc: p.grid() * p.grid(),
        th: top_extent(p, "height", h)?,
        tw: top_extent(p, "width", w)?,
    })
}

/// Shape inference over partially known shapes (0: unknown): data1 and
/// data2 share one 4-d shape, which gives the output and the two padded
/// channel-last copies.
fn infer_shape(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let p = parse(attrs)?;
    let data = match (&ins[0], &ins[1]) {
        (Some(a), Some(b)) => {
            dims4("data1", a)?;
            dims4("data2", b)?;
            let fits = a.iter().zip(b.iter()).all(|(&u, &v)| u == 0 || v == 0 || u == v);
            if !fits {
                return Err(Error::Shape(format!(
                    "{OP}: data1 and data2 must have one shape, got {} and {}",
                    fmt_tuple(a),
                    fmt_tuple(b)
                )));
            }
            Some(a.iter().zip(b.iter()).map(|(&u, &v)| u.max(v)).collect::<Vec<_>>())
        }
        (Some(a), None) => Some(dims4("data1", a)?.to_vec()),
        (None, Some(b)) => Some(dims4("data2", b)?.to_vec()),
        (None, None) => None,
    };
    let Some(d) = data else { return Ok(()) };
    ins[0] = Some(Shape::from_slice(&d));
    ins[1] = Some(Shape::from_slice(&d));
    let [n, c, h, w] = dims4("data1", &d)?;
    let extent = |axis: &str, v: usize| if v > 0 { top_extent(&p, axis, v) } else { Ok(0) };
    let padded = |v: usize| if v > 0 { v + 2 * p.pad } else { 0 };
    let out = [n, p.grid() * p.grid(), extent("height", h)?, extent("width", w)?];
    let tmp = [n, padded(h), padded(w), c];
    let too_large =
        |s: &[usize]| s.iter().filter(|&&v| v > 0).try_fold(1usize, |a, &v| a.checked_mul(v)).is_none();
    if too_large(&out) || too_large(&tmp) {
        return Err(Error::Shape(format!(
            "{OP}: the output for data of shape {} is too large",
            fmt_tuple(&d)
        )));
    }
    let ctx = || format!("data of shape {}", fmt_tuple(&d));
    merge_shape(&mut outs[0], &out, &format!("{OP}: the output"), ctx)?;
    merge_shape(&mut outs[1], &tmp, &format!("{OP}: tmp1"), ctx)?;
    merge_shape(&mut outs[2], &tmp, &format!("{OP}: tmp2"), ctx)
}

/// Dtype inference: both inputs, the output and the temporaries share one
/// floating-point dtype.
fn infer_type(ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    let names = ["data1", "data2", "output", "tmp1", "tmp2"];
    let Some((dt, from)) = ins.iter().chain(outs.iter()).zip(names).find_map(|(d, n)| d.map(|d| (d, n)))
    else {
        return Ok(());
    };
    for (slot, what) in ins.iter_mut().chain(outs.iter_mut()).zip(names) {
        match slot {
            Some(have) if *have != dt => {
                return Err(Error::DType(format!(
                    "{OP}: data1, data2 and the outputs must have one dtype, got {what} of dtype {have} and \
                     {from} of dtype {dt}"
                )))
            }
            _ => *slot = Some(dt),
        }
    }
    if !dt.is_float() {
        return Err(Error::DType(format!("{OP}: expected a floating-point dtype, got {dt}")));
    }
    Ok(())
}

/// `data` (N, C, H, W) zero-padded by `pad` into channel-last order
/// (N, H + 2·pad, W + 2·pad, C).
fn pad_channel_last<T: FloatElement>(data: &[T], g: &Geometry, pad: usize) -> Vec<T> {
    let row = g.pw * g.c;
    let mut t = vec![T::zero(); g.n * g.ph * row];
    if t.is_empty() {
        return t;
    }
    oxnet_core::parallel::for_each_chunk_mut(&mut t, row, |r, out| {
        let (n, py) = (r / g.ph, r % g.ph);
        if py < pad || py >= pad + g.h {
            return;
        }
        let y = py - pad;
        for x in 0..g.w {
            let cell = &mut out[(x + pad) * g.c..][..g.c];
            for (ch, v) in cell.iter_mut().enumerate() {
                *v = data[((n * g.c + ch) * g.h + y) * g.w + x];
            }
        }
    });
    t
}

/// The sum over one patch row of `a` and `b` (each `kernel · C` values).
#[inline]
fn row_sum<T: FloatElement>(a: &[T], b: &[T], multiply: bool) -> T::Compute {
    let zero = <T::Compute as Zero>::zero();
    if multiply {
        a.iter().zip(b).fold(zero, |s, (&u, &v)| s + u.to_compute() * v.to_compute())
    } else {
        a.iter().zip(b).fold(zero, |s, (&u, &v)| s + (u.to_compute() - v.to_compute()).abs())
    }
}

/// `v` in the compute type `C`.
fn cast<C: Float>(v: usize) -> C {
    <C as NumCast>::from(v).unwrap_or_else(C::max_value)
}

/// The correlation (N, tc, th, tw) of the padded maps `t1` and `t2`.
fn correlate<T: FloatElement>(p: &Params, g: &Geometry, t1: &[T], t2: &[T]) -> Vec<T> {
    let plane = g.th * g.tw;
    let mut y = vec![T::zero(); g.n * g.tc * plane];
    if y.is_empty() {
        return y;
    }
    let run = p.kernel * g.c;
    let count: T::Compute = cast(p.kernel * p.kernel * g.c);
    let at = |n: usize, yy: usize, xx: usize| ((n * g.ph + yy) * g.pw + xx) * g.c;
    oxnet_core::parallel::for_each_chunk_mut(&mut y, plane, |t, out| {
        let (n, q) = (t / g.tc, t % g.tc);
        let (dy, dx) = p.shift(q);
        for i in 0..g.th {
            let y1 = i * p.stride1 + p.max_disp;
            let y2 = (y1 as isize + dy) as usize;
            for j in 0..g.tw {
                let x1 = j * p.stride1 + p.max_disp;
                let x2 = (x1 as isize + dx) as usize;
                let mut acc = <T::Compute as Zero>::zero();
                for h in 0..p.kernel {
                    let a = &t1[at(n, y1 + h, x1)..][..run];
                    let b = &t2[at(n, y2 + h, x2)..][..run];
                    acc = acc + row_sum::<T>(a, b, p.multiply);
                }
                out[i * g.tw + j] = T::from_compute(acc / count);
            }
        }
    });
    y
}

fn forward_typed<T: FloatElement>(
    p: &Params,
    req: &[Req],
    inputs: &[NDArray],
    outputs: &[NDArray],
) -> Result<()> {
    let g = geometry(p, inputs[0].shape())?;
    if inputs[1].shape() != inputs[0].shape() {
        return Err(Error::Shape(format!(
            "{OP}: data1 and data2 must have one shape, got {} and {}",
            fmt_tuple(inputs[0].shape()),
            fmt_tuple(inputs[1].shape())
        )));
    }
    let t1 = pad_channel_last(inputs[0].as_slice::<T>()?, &g, p.pad);
    let t2 = pad_channel_last(inputs[1].as_slice::<T>()?, &g, p.pad);
    if req[0] != Req::Null {
        let y = correlate(p, &g, &t1, &t2);
        store_slice(req[0], outputs[0].as_mut_slice::<T>()?, &y);
    }
    store_slice(req[1], outputs[1].as_mut_slice::<T>()?, &t1);
    store_slice(req[2], outputs[2].as_mut_slice::<T>()?, &t2);
    Ok(())
}

/// The rows `i` of the output whose patch covers padded row `b` of the
/// first map (`b = i·stride1 + max_displacement + h` for some `h` below
/// `kernel_size`), into `out`; the same for columns with `limit = tw`.
fn covering(p: &Params, b: isize, limit: usize, out: &mut Vec<usize>) {
    out.clear();
    for h in 0..p.kernel as isize {
        let v = b - p.max_disp as isize - h;
        if v >= 0 && v % p.stride1 as isize == 0 && ((v / p.stride1 as isize) as usize) < limit {
            out.push((v / p.stride1 as isize) as usize);
        }
    }
}

/// The gradient of data1 (`first`) or data2 in channel-last order
/// (N, H, W, C): each data position gathers, over the displacements, the
/// output gradients of the patches that read it, times the other map's
/// value (products) or the sign of the difference; `dtmp` is the gradient
/// of the hidden padded copy, added unscaled where given.
fn gather_grad<T: FloatElement>(
    p: &Params,
    g: &Geometry,
    first: bool,
    dy: &[T],
    t1: &[T],
    t2: &[T],
    dtmp: Option<&[T]>,
) -> Vec<T::Compute> {
    let zero = <T::Compute as Zero>::zero();
    let row = g.w * g.c;
    let mut grad = vec![zero; g.n * g.h * row];
    if grad.is_empty() {
        return grad;
    }
    let count: T::Compute = cast(p.kernel * p.kernel * g.c);
    let one = <T::Compute as num_traits::One>::one();
    let at = |n: usize, yy: isize, xx: isize| ((n * g.ph + yy as usize) * g.pw + xx as usize) * g.c;
    oxnet_core::parallel::for_each_chunk_mut(&mut grad, row, |r, out| {
        let (n, y) = (r / g.h, r % g.h);
        let py = (y + p.pad) as isize;
        let (mut rows, mut cols) = (Vec::new(), Vec::new());
        for x in 0..g.w {
            let px = (x + p.pad) as isize;
            let cell = &mut out[x * g.c..][..g.c];
            for q in 0..g.tc {
                let (sy, sx) = p.shift(q);
                // (by, bx): this position's place in the first map's patch
                let (by, bx) = if first { (py, px) } else { (py - sy, px - sx) };
                covering(p, by, g.th, &mut rows);
                covering(p, bx, g.tw, &mut cols);
                if rows.is_empty() || cols.is_empty() {
                    continue;
                }
                let plane = &dy[(n * g.tc + q) * g.th * g.tw..][..g.th * g.tw];
                let mut sum = zero;
                for &i in &rows {
                    for &j in &cols {
                        sum = sum + plane[i * g.tw + j].to_compute();
                    }
                }
                let a = &t1[at(n, by, bx)..][..g.c];
                let b = &t2[at(n, by + sy, bx + sx)..][..g.c];
                for ((o, &u), &v) in cell.iter_mut().zip(a).zip(b) {
                    let (u, v) = (u.to_compute(), v.to_compute());
                    let d = match (p.multiply, first) {
                        (true, true) => v,
                        (true, false) => u,
                        (false, _) => {
                            if (u >= v) == first {
                                one
                            } else {
                                -one
                            }
                        }
                    };
                    *o = *o + sum * d;
                }
            }
            for o in cell.iter_mut() {
                *o = *o / count;
            }
            if let Some(dt) = dtmp {
                for (o, v) in cell.iter_mut().zip(&dt[at(n, py, px)..][..g.c]) {
                    *o = *o + v.to_compute();
                }
            }
        }
    });
    grad
}

/// `v` (N, H, W, C) in channel-first order (N, C, H, W).
fn to_channel_first<T: FloatElement>(v: &[T::Compute], g: &Geometry) -> Vec<T> {
    let mut out = vec![T::zero(); v.len()];
    let hw = g.h * g.w;
    if out.is_empty() {
        return out;
    }
    oxnet_core::parallel::for_each_chunk_mut(&mut out, hw, |r, plane| {
        let (n, ch) = (r / g.c, r % g.c);
        for (k, o) in plane.iter_mut().enumerate() {
            *o = T::from_compute(v[(n * hw + k) * g.c + ch]);
        }
    });
    out
}

fn backward_typed<T: FloatElement>(
    p: &Params,
    req: &[Req],
    args: &BackwardArgs,
    grads: &[NDArray],
) -> Result<()> {
    let missing = || Error::Autograd(format!("{OP}: the backward kernel lacks a saved array"));
    let dy = args.out_grads[0].as_ref().ok_or_else(missing)?;
    let dy = if dy.is_contiguous() { dy.clone() } else { dy.copy()? };
    let t1 = args.outputs[1].as_ref().ok_or_else(missing)?;
    let t2 = args.outputs[2].as_ref().ok_or_else(missing)?;
    let g = geometry(p, grads[0].shape())?;
    let dtmp = |k: usize| -> Result<Option<NDArray>> {
        match args.out_grads.get(k).and_then(Option::as_ref) {
            Some(d) if d.is_contiguous() => Ok(Some(d.clone())),
            Some(d) => Ok(Some(d.copy()?)),
            None => Ok(None),
        }
    };
    let (d1, d2) = (dtmp(1)?, dtmp(2)?);
    let (dys, t1s, t2s) = (dy.as_slice::<T>()?, t1.as_slice::<T>()?, t2.as_slice::<T>()?);
    for (k, d) in [(0, &d1), (1, &d2)] {
        if req[k] == Req::Null {
            continue;
        }
        let extra = d.as_ref().map(|a| a.as_slice::<T>()).transpose()?;
        let nhwc = gather_grad(p, &g, k == 0, dys, t1s, t2s, extra);
        store_slice(req[k], grads[k].as_mut_slice::<T>()?, &to_channel_first::<T>(&nhwc, &g));
    }
    Ok(())
}

fn forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let p = parse(ctx.attrs)?;
    oxnet_core::with_float_dtype!(inputs[0].dtype(), T => forward_typed::<T>(&p, ctx.req, inputs, outputs))
}

fn backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let p = parse(ctx.attrs)?;
    oxnet_core::with_float_dtype!(grads[0].dtype(), T => backward_typed::<T>(&p, ctx.req, args, grads))
}

/// Registers `Correlation`.
pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .doc(
                "Correlation of two feature maps (FlowNet): data1 and data2 of one shape (N, C, H, W) \
                 give (N, D², th, tw) with D = 2·(max_displacement / stride2) + 1. Output (n, q, i, j) \
                 is the mean, over a kernel_size x kernel_size patch whose top-left corner is at \
                 (i·stride1 + max_displacement, j·stride1 + max_displacement) of data1 zero-padded by \
                 pad_size and over all channels, of the products (is_multiply) or absolute differences \
                 with data2's patch shifted by ((q / D) - D/2, (q % D) - D/2)·stride2. th and tw are \
                 ceil((padded extent - 2·(max_displacement + (kernel_size - 1) / 2)) / stride1). The \
                 hidden outputs tmp1 and tmp2 are the padded inputs in channel-last order, kept for \
                 the gradient.",
            )
            .attr(AttrSpec::optional(
                "kernel_size",
                AttrKind::Int,
                1i64,
                "Patch extent for Correlation; must be an odd number.",
            ))
            .attr(AttrSpec::optional(
                "max_displacement",
                AttrKind::Int,
                1i64,
                "Largest displacement of data2's patch.",
            ))
            .attr(AttrSpec::optional(
                "stride1",
                AttrKind::Int,
                1i64,
                "Step between the compared positions of data1.",
            ))
            .attr(AttrSpec::optional(
                "stride2",
                AttrKind::Int,
                1i64,
                "Step between the displacements of data2 within the neighbourhood.",
            ))
            .attr(AttrSpec::optional(
                "pad_size",
                AttrKind::Int,
                0i64,
                "Zero padding on every side of both inputs.",
            ))
            .attr(AttrSpec::optional(
                "is_multiply",
                AttrKind::Bool,
                true,
                "Compare by products (True) or absolute differences (False).",
            ))
            .arguments(&["data1", "data2"])
            .outputs(&["output", "tmp1", "tmp2"])
            .visible_outputs(1)
            .prepare(|attrs| {
                parse(attrs)?;
                Ok(Arc::new(()))
            })
            .infer_shape(infer_shape)
            .infer_shape_partial(infer_shape)
            .infer_type(|_, ins, outs| infer_type(ins, outs))
            .forward(forward)
            .backward(|_| BackwardDeps { out_grads: vec![0], inputs: vec![], outputs: vec![1, 2] }, backward),
    );
}
