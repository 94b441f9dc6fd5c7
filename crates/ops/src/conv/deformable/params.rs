//! The attributes and shape inference of the deformable convolutions:
//! `_contrib_DeformableConvolution` here, and the modulated one
//! (`crate::conv::modulated_deformable`), which adds a mask input and
//! `im2col_step` and calls the same functions with its own name.

use super::OP;
use crate::conv::geometry::{fmt_tuple, Window};
use crate::conv::layout::Layout;
use crate::conv::params::{conv_out_extent, merge, window};
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::{Error, Result};

/// The parsed attributes.
#[derive(Debug, Clone)]
pub(in crate::conv) struct Params {
    /// The 2-d window (symmetric padding).
    pub win: Window,
    /// Output channels.
    pub num_filter: usize,
    /// Channel groups of the convolution.
    pub num_group: usize,
    /// Channel groups sharing one set of offsets.
    pub num_deformable_group: usize,
    /// No bias input.
    pub no_bias: bool,
}

impl Params {
    /// Kernel taps (`kh·kw`).
    pub(in crate::conv) fn taps(&self) -> usize {
        self.win.taps()
    }

    /// Channels of the offset input: two per tap and deformable group.
    pub(in crate::conv) fn offset_channels(&self) -> usize {
        self.num_deformable_group * 2 * self.taps()
    }
}

/// Parses and validates the attributes (or takes those `prepare` parsed).
pub(super) fn parse(attrs: &Attrs) -> Result<Params> {
    if let Some(p) = attrs.prepared::<Params>() {
        return Ok(p.clone());
    }
    Ok(parse_for(OP, attrs, &[])?.0)
}

/// The attributes both deformable convolutions share, for operator `op`,
/// and the counts named in `extra` (each at least 1), in order.
pub(in crate::conv) fn parse_for(op: &str, attrs: &Attrs, extra: &[&str]) -> Result<(Params, Vec<usize>)> {
    let win = window(op, attrs)?;
    if win.nd() != 2 {
        return Err(Error::attr(
            "kernel",
            format!("{op}: only 2-d kernels (kh, kw) are supported, got kernel {}", fmt_tuple(&win.kernel)),
        ));
    }
    Layout::parse(op, attrs.str("layout")?, &["NCHW"])?;
    let mut counts = Vec::with_capacity(3 + extra.len());
    for &name in ["num_filter", "num_group", "num_deformable_group"].iter().chain(extra) {
        let v = attrs.int(name)?;
        if v < 1 {
            return Err(Error::attr(name, format!("{op}: {name} must be at least 1, got {v}")));
        }
        counts.push(v as usize);
    }
    let (num_filter, num_group, num_deformable_group) = (counts[0], counts[1], counts[2]);
    if !num_filter.is_multiple_of(num_group) {
        return Err(Error::attr(
            "num_filter",
            format!("{op}: num_filter={num_filter} must be a multiple of num_group={num_group}"),
        ));
    }
    let p = Params { win, num_filter, num_group, num_deformable_group, no_bias: attrs.bool("no_bias")? };
    Ok((p, counts.split_off(3)))
}

/// Errs unless `shape` (when known) is 4-d; `what` names the array and
/// `axes` its axes.
fn check_4d(op: &str, shape: &Option<Shape>, what: &str, axes: &str) -> Result<()> {
    match shape {
        Some(s) if s.len() != 4 => {
            Err(Error::Shape(format!("{op}: {what} must be 4-d ({axes}), got shape {}", fmt_tuple(s))))
        }
        _ => Ok(()),
    }
}

/// An input laid out like the output, `(N, channels, Ho, Wo)`: the offset
/// (and the modulated convolution's mask).
pub(in crate::conv) struct SideInput {
    /// Its channels.
    pub channels: usize,
    /// Its name in messages.
    pub name: &'static str,
    /// Its axes, for messages.
    pub axes: &'static str,
}

/// Shape inference over complete or partial shapes (0: unknown), inputs
/// (data, offset, weight[, bias]): weight `(num_filter, C/num_group, kh,
/// kw)` and bias `(num_filter,)` from the data; the output `(N,
/// num_filter, Ho, Wo)` with Convolution's extents, and the offset `(N,
/// num_deformable_group·2·kh·kw, Ho, Wo)`. Backwards, the data's channels
/// come from the weight, its batch from the output or the offset, and its
/// extents from theirs where the stride is 1 (as MXNet does).
pub(super) fn infer_shape(
    attrs: &Attrs,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let p = parse(attrs)?;
    let offset = SideInput {
        channels: p.offset_channels(),
        name: "offset",
        axes: "batch, num_deformable_group·2·kh·kw, out_height, out_width",
    };
    infer_for(OP, &p, None, &[offset], ins, outs)
}

/// [`infer_shape`] for operator `op` whose inputs are the data, `sides`
/// (laid out like the output), the weight and the bias; with
/// `im2col_step`, a batch above it must be a multiple of it.
pub(in crate::conv) fn infer_for(
    op: &str,
    p: &Params,
    im2col_step: Option<usize>,
    sides: &[SideInput],
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let w = 1 + sides.len(); // the weight's index; the bias follows it
    check_4d(op, &ins[0], "data", "batch, channel, height, width")?;
    for (k, side) in sides.iter().enumerate() {
        check_4d(op, &ins[1 + k], side.name, side.axes)?;
    }
    check_4d(op, &ins[w], "weight", "num_filter, channel/num_group, kh, kw")?;
    check_4d(op, &outs[0], "the output", "batch, num_filter, out_height, out_width")?;
    if ins[..=w].iter().all(Option::is_none) && outs[0].is_none() {
        return Ok(());
    }
    // what the output and the side inputs tell about the output's extents
    let mut seen = outs[0].as_ref().map_or(vec![0; 4], |s| s.to_vec());
    for known in ins[1..w].iter().flatten() {
        for a in [0, 2, 3] {
            if seen[a] == 0 {
                seen[a] = known[a];
            }
        }
    }
    let mut data = ins[0].as_ref().map_or(vec![0; 4], |s| s.to_vec());
    if data[1] == 0 {
        data[1] = ins[w].as_ref().map_or(0, |wt| wt[1] * p.num_group);
    }
    if data[0] == 0 {
        data[0] = seen[0];
    }
    for i in 0..2 {
        let (span, pad, out) = (p.win.span(i), 2 * p.win.pad_before[i], seen[2 + i]);
        if data[2 + i] == 0 && out != 0 && p.win.stride[i] == 1 && out + span > pad + 1 {
            data[2 + i] = out + span - 1 - pad;
        }
    }
    for (groups, name) in [(p.num_group, "num_group"), (p.num_deformable_group, "num_deformable_group")] {
        if data[1] != 0 && !data[1].is_multiple_of(groups) {
            return Err(Error::Shape(format!(
                "{op}: data has {} channels (shape {}), not a multiple of {name}={groups}",
                data[1],
                fmt_tuple(&data)
            )));
        }
    }
    if let Some(step) = im2col_step {
        if data[0] > step && !data[0].is_multiple_of(step) {
            return Err(Error::Shape(format!(
                "{op}: a batch of {} images (data shape {}) larger than im2col_step={step} must be a multiple of it",
                data[0],
                fmt_tuple(&data),
            )));
        }
    }
    let context = || {
        format!(
            "data of shape {} with kernel {}, num_filter={}, num_group={}, num_deformable_group={}",
            fmt_tuple(&data),
            fmt_tuple(&p.win.kernel),
            p.num_filter,
            p.num_group,
            p.num_deformable_group
        )
    };
    let what = |name: &str| format!("{op}: {name}");
    let mut weight = vec![p.num_filter, data[1] / p.num_group];
    weight.extend_from_slice(&p.win.kernel);
    merge(&mut ins[w], &weight, &what("weight"), context)?;
    if !p.no_bias {
        merge(&mut ins[w + 1], &[p.num_filter], &what("bias"), context)?;
    }
    let mut out = vec![data[0], p.num_filter, seen[2], seen[3]];
    for i in 0..2 {
        if data[2 + i] != 0 {
            out[2 + i] = conv_out_extent(op, &p.win, i, data[2 + i], &data)?;
        }
    }
    merge(&mut outs[0], &out, &what("the output"), context)?;
    let out = outs[0].as_ref().map_or(out, |s| s.to_vec());
    for (k, side) in sides.iter().enumerate() {
        merge(&mut ins[1 + k], &[out[0], side.channels, out[2], out[3]], &what(side.name), context)?;
    }
    merge(&mut ins[0], &data, &what("data"), context)?;
    Ok(())
}
