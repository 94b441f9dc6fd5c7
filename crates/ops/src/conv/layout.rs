//! Data layouts of the convolution and pooling families: the `layout`
//! attribute's parsing, and channel-last support by permutation. A
//! channel-last call (`NWC`, `NHWC`, `NDHWC`) moves its data, weight,
//! output and gradients to the channel-first form, runs the channel-first
//! kernel or shape rule, and moves the results back; the weight follows
//! the data (`OHWI` for an `NHWC` convolution: the channel-first weight
//! with its axis 1 moved last).

use super::geometry::fmt_tuple;
use oxnet_core::shape::Shape;
use oxnet_core::store::store;
use oxnet_core::{BackwardArgs, Error, NDArray, OpContext, Req, Result};

/// The layouts `Convolution` and `Deconvolution` accept (as MXNet 1.9.1:
/// no channel-last 1-D layout).
pub(crate) const CONV_LAYOUTS: &[&str] = &["NCW", "NCHW", "NCDHW", "NHWC", "NDHWC"];

/// The layouts `Pooling` accepts.
pub(crate) const POOL_LAYOUTS: &[&str] = &["NCW", "NCHW", "NCDHW", "NWC", "NHWC", "NDHWC"];

/// A parsed `layout` attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    /// The name as given (`None` when the attribute is unset).
    pub name: &'static str,
    /// The spatial axes the name implies (`None`: any, for an unset layout).
    pub nd: Option<usize>,
    /// True when the channel axis is the last one.
    pub channel_last: bool,
}

impl Layout {
    /// Parses `layout` for `op`, which accepts the names in `accepted`;
    /// `None` and the empty string mean channel-first of any rank.
    pub(crate) fn parse(op: &str, layout: &str, accepted: &[&'static str]) -> Result<Layout> {
        if layout == "None" || layout.is_empty() {
            return Ok(Layout { name: "None", nd: None, channel_last: false });
        }
        let Some(&name) = accepted.iter().find(|&&a| a == layout) else {
            return Err(Error::attr(
                "layout",
                format!("{op}: layout `{layout}` is not supported (None, {})", accepted.join(", ")),
            ));
        };
        Ok(Layout { name, nd: Some(name.len() - 2), channel_last: !name.starts_with("NC") })
    }

    /// Checks that the layout fits `nd` spatial axes; `what` names where
    /// `nd` comes from (a kernel, the data's shape) for the error.
    pub(crate) fn check_nd(
        &self,
        op: &str,
        nd: usize,
        accepted: &[&str],
        what: impl Fn() -> String,
    ) -> Result<()> {
        match self.nd {
            Some(n) if n != nd => {
                let fitting: Vec<&str> = accepted.iter().copied().filter(|a| a.len() == nd + 2).collect();
                Err(Error::attr(
                    "layout",
                    format!(
                        "{op}: layout {} does not match {} with {nd} spatial axes (expected {})",
                        self.name,
                        what(),
                        fitting.join(" or ")
                    ),
                ))
            }
            _ => Ok(()),
        }
    }
}

/// The axes that move a channel-last array of rank `rank` to channel-first.
fn axes_to_first(rank: usize) -> Vec<usize> {
    let mut axes = vec![0, rank - 1];
    axes.extend(1..rank - 1);
    axes
}

/// The axes that move a channel-first array of rank `rank` to channel-last.
fn axes_to_last(rank: usize) -> Vec<usize> {
    let mut axes = vec![0];
    axes.extend(2..rank);
    axes.push(1);
    axes
}

/// `shape` permuted by `axes` (shapes of rank below 2 are kept).
fn permute_shape(shape: &[usize], axes: impl Fn(usize) -> Vec<usize>) -> Shape {
    if shape.len() < 2 {
        return Shape::from_slice(shape);
    }
    axes(shape.len()).iter().map(|&a| shape[a]).collect()
}

/// A channel-last shape in channel-first order (`(N, H, W, C)` to
/// `(N, C, H, W)`); unknown (0) dimensions move with their axes.
pub(crate) fn shape_to_first(shape: &[usize]) -> Shape {
    permute_shape(shape, axes_to_first)
}

/// A channel-first shape in channel-last order (`(N, C, H, W)` to
/// `(N, H, W, C)`).
pub(crate) fn shape_to_last(shape: &[usize]) -> Shape {
    permute_shape(shape, axes_to_last)
}

/// A contiguous channel-first copy of the channel-last array `a`.
pub(crate) fn array_to_first(a: &NDArray) -> Result<NDArray> {
    if a.ndim() < 2 {
        return Ok(a.clone());
    }
    a.transpose(Some(&axes_to_first(a.ndim())))?.copy()
}

/// The channel-first array `a` viewed channel-last (no copy).
fn view_to_last(a: &NDArray) -> Result<NDArray> {
    if a.ndim() < 2 {
        return Ok(a.clone());
    }
    a.transpose(Some(&axes_to_last(a.ndim())))
}

/// Adds to a shape error that its shapes are shown channel-first.
fn note_order(layout: &Layout, e: Error) -> Error {
    match e {
        Error::Shape(m) => {
            Error::Shape(format!("{m} (layout {}: shapes shown in channel-first order)", layout.name))
        }
        other => other,
    }
}

/// Shape inference of a channel-last call of `op` through the
/// channel-first rule `rule`: the first `permuted` inputs and the outputs
/// are moved to channel-first order, inferred, and moved back (the rest, a
/// bias, pass as they are). `names` names the inputs for errors.
pub(crate) fn infer_shape_last(
    op: &str,
    layout: &Layout,
    permuted: usize,
    names: &[&str],
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
    rule: impl Fn(&mut [Option<Shape>], &mut [Option<Shape>]) -> Result<()>,
) -> Result<()> {
    let k = permuted.min(ins.len());
    let mut ins_first: Vec<Option<Shape>> = ins.to_vec();
    for s in ins_first[..k].iter_mut().flatten() {
        *s = shape_to_first(s);
    }
    let mut outs_first: Vec<Option<Shape>> =
        outs.iter().map(|s| s.as_ref().map(|s| shape_to_first(s))).collect();
    if let Err(e) = rule(&mut ins_first, &mut outs_first) {
        return Err(explain(op, layout, k, names, ins, outs, &rule).unwrap_or_else(|| note_order(layout, e)));
    }
    for (i, (slot, s)) in ins.iter_mut().zip(ins_first).enumerate() {
        *slot = if i < k { s.map(|s| shape_to_last(&s)) } else { s };
    }
    for (slot, s) in outs.iter_mut().zip(outs_first) {
        *slot = s.map(|s| shape_to_last(&s));
    }
    Ok(())
}

/// An error in the caller's (channel-last) order for a failed inference:
/// the shapes inferred from the data alone, compared with the given ones;
/// `None` when that does not single out a mismatch.
fn explain(
    op: &str,
    layout: &Layout,
    k: usize,
    names: &[&str],
    ins: &[Option<Shape>],
    outs: &[Option<Shape>],
    rule: &impl Fn(&mut [Option<Shape>], &mut [Option<Shape>]) -> Result<()>,
) -> Option<Error> {
    let data = ins.first()?.as_ref()?;
    let mut ins_first: Vec<Option<Shape>> = vec![None; ins.len()];
    ins_first[0] = Some(shape_to_first(data));
    let mut outs_first: Vec<Option<Shape>> = vec![None; outs.len()];
    rule(&mut ins_first, &mut outs_first).ok()?;
    let fits = |a: &[usize], b: &[usize]| {
        a.len() == b.len() && a.iter().zip(b).all(|(&x, &y)| x == 0 || y == 0 || x == y)
    };
    let given = ins
        .iter()
        .enumerate()
        .skip(1)
        .map(|(i, s)| (names.get(i).copied().unwrap_or("input"), s, &ins_first[i], i < k));
    let given = given.chain(outs.iter().zip(&outs_first).map(|(s, w)| ("the output", s, w, true)));
    for (name, have, want, permuted) in given {
        let (Some(have), Some(want)) = (have, want) else { continue };
        let want = if permuted { shape_to_last(want) } else { want.clone() };
        if !fits(have, &want) {
            return Some(Error::Shape(format!(
                "{op}: {name} has shape {}, but data of shape {} in layout {} needs {}",
                fmt_tuple(have),
                fmt_tuple(data),
                layout.name,
                fmt_tuple(&want)
            )));
        }
    }
    None
}

/// Runs the channel-first forward kernel `kernel` for a channel-last call:
/// the first `permuted` inputs are copied to channel-first, the kernel
/// writes a channel-first temporary per output, which is stored back
/// channel-last under the call's requests.
pub(crate) fn forward_last(
    ctx: &OpContext,
    layout: &Layout,
    permuted: usize,
    inputs: &[NDArray],
    outputs: &[NDArray],
    kernel: impl FnOnce(&OpContext, &[NDArray], &[NDArray]) -> Result<()>,
) -> Result<()> {
    if ctx.req.iter().all(|&r| r == Req::Null) {
        return Ok(());
    }
    let ins = inputs
        .iter()
        .enumerate()
        .map(|(i, a)| if i < permuted { array_to_first(a) } else { Ok(a.clone()) })
        .collect::<Result<Vec<_>>>()?;
    let outs = outputs
        .iter()
        .map(|o| NDArray::empty(&shape_to_first(o.shape()), o.dtype(), o.device()))
        .collect::<Result<Vec<_>>>()?;
    let reqs: Vec<Req> =
        ctx.req.iter().map(|&r| if r == Req::Null { Req::Null } else { Req::Write }).collect();
    let inner = OpContext { req: &reqs, ..*ctx };
    kernel(&inner, &ins, &outs).map_err(|e| note_order(layout, e))?;
    for ((o, t), &r) in outputs.iter().zip(&outs).zip(ctx.req) {
        store(r, o, &view_to_last(t)?)?;
    }
    Ok(())
}

/// Runs the channel-first backward kernel `kernel` for a channel-last
/// call: the saved arrays (head gradients, the first `permuted` inputs,
/// the outputs) are copied to channel-first; the gradients of the first
/// `permuted` inputs are computed into channel-first temporaries and
/// stored back channel-last under the call's requests, the others (a
/// bias's) are written directly.
pub(crate) fn backward_last(
    ctx: &OpContext,
    layout: &Layout,
    permuted: usize,
    args: &BackwardArgs,
    grads: &[NDArray],
    kernel: impl FnOnce(&OpContext, &BackwardArgs, &[NDArray]) -> Result<()>,
) -> Result<()> {
    let to_first = |v: &[Option<NDArray>], upto: usize| -> Result<Vec<Option<NDArray>>> {
        v.iter()
            .enumerate()
            .map(|(i, a)| match a {
                Some(a) if i < upto => array_to_first(a).map(Some),
                other => Ok(other.clone()),
            })
            .collect()
    };
    let out_grads = to_first(args.out_grads, usize::MAX)?;
    let inputs = to_first(args.inputs, permuted)?;
    let outputs = to_first(args.outputs, usize::MAX)?;
    let k = permuted.min(grads.len());
    let mut temps = Vec::with_capacity(grads.len());
    for (i, g) in grads.iter().enumerate() {
        temps.push(if i < k {
            NDArray::empty(&shape_to_first(g.shape()), g.dtype(), g.device())?
        } else {
            g.clone()
        });
    }
    let reqs: Vec<Req> = ctx
        .req
        .iter()
        .enumerate()
        .map(|(i, &r)| if i < k && r != Req::Null { Req::Write } else { r })
        .collect();
    let inner = OpContext { req: &reqs, ..*ctx };
    let first = BackwardArgs { out_grads: &out_grads, inputs: &inputs, outputs: &outputs };
    kernel(&inner, &first, &temps).map_err(|e| note_order(layout, e))?;
    for i in 0..k {
        store(ctx.req[i], &grads[i], &view_to_last(&temps[i])?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_checks_ranks() {
        let l = Layout::parse("Pooling", "NWC", POOL_LAYOUTS).unwrap();
        assert_eq!((l.nd, l.channel_last), (Some(1), true));
        let l = Layout::parse("Convolution", "NCDHW", CONV_LAYOUTS).unwrap();
        assert_eq!((l.nd, l.channel_last), (Some(3), false));
        let l = Layout::parse("Convolution", "None", CONV_LAYOUTS).unwrap();
        assert_eq!((l.nd, l.channel_last), (None, false));
        let e = Layout::parse("Convolution", "NWC", CONV_LAYOUTS).unwrap_err().to_string();
        assert!(e.contains("Convolution") && e.contains("layout") && e.contains("NWC"), "{e}");
        let l = Layout::parse("Convolution", "NHWC", CONV_LAYOUTS).unwrap();
        let e = l.check_nd("Convolution", 3, CONV_LAYOUTS, || "a kernel".into()).unwrap_err().to_string();
        assert!(e.contains("NHWC") && e.contains("NCDHW or NDHWC"), "{e}");
    }

    #[test]
    fn shapes_and_arrays_move_the_channel_axis() {
        assert_eq!(&shape_to_first(&[2, 5, 6, 3])[..], &[2, 3, 5, 6]);
        assert_eq!(&shape_to_last(&[2, 3, 5, 6])[..], &[2, 5, 6, 3]);
        assert_eq!(&shape_to_first(&[2, 5, 3])[..], &[2, 3, 5]);
        assert_eq!(&shape_to_last(&[4])[..], &[4]);
        let a = NDArray::from_vec((0..12).map(f64::from).collect(), &[1, 2, 2, 3]).unwrap();
        let f = array_to_first(&a).unwrap();
        assert_eq!(f.shape(), &[1, 3, 2, 2]);
        assert_eq!(f.to_vec::<f64>().unwrap(), vec![0., 3., 6., 9., 1., 4., 7., 10., 2., 5., 8., 11.]);
        let back = view_to_last(&f).unwrap().copy().unwrap();
        assert_eq!(back.to_vec::<f64>().unwrap(), a.to_vec::<f64>().unwrap());
    }
}
