//! `_contrib_DeformableConvolution`'s attributes and shape inference.

use super::OP;
use crate::conv::geometry::{fmt_tuple, Window};
use crate::conv::layout::Layout;
use crate::conv::params::{conv_out_extent, merge, window};
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::{Error, Result};

/// The parsed attributes.
#[derive(Debug, Clone)]
pub(super) struct Params {
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
    pub fn taps(&self) -> usize {
        self.win.taps()
    }

    /// Channels of the offset input: two per tap and deformable group.
    pub fn offset_channels(&self) -> usize {
        self.num_deformable_group * 2 * self.taps()
    }
}

/// Parses and validates the attributes (or takes those `prepare` parsed).
pub(super) fn parse(attrs: &Attrs) -> Result<Params> {
    if let Some(p) = attrs.prepared::<Params>() {
        return Ok(p.clone());
    }
    let win = window(OP, attrs)?;
    if win.nd() != 2 {
        return Err(Error::attr(
            "kernel",
            format!("{OP}: only 2-d kernels (kh, kw) are supported, got kernel {}", fmt_tuple(&win.kernel)),
        ));
    }
    Layout::parse(OP, attrs.str("layout")?, &["NCHW"])?;
    let mut counts = [0usize; 3];
    for (slot, name) in counts.iter_mut().zip(["num_filter", "num_group", "num_deformable_group"]) {
        let v = attrs.int(name)?;
        if v < 1 {
            return Err(Error::attr(name, format!("{OP}: {name} must be at least 1, got {v}")));
        }
        *slot = v as usize;
    }
    let [num_filter, num_group, num_deformable_group] = counts;
    if !num_filter.is_multiple_of(num_group) {
        return Err(Error::attr(
            "num_filter",
            format!("{OP}: num_filter={num_filter} must be a multiple of num_group={num_group}"),
        ));
    }
    Ok(Params { win, num_filter, num_group, num_deformable_group, no_bias: attrs.bool("no_bias")? })
}

/// Errs unless `shape` (when known) is 4-d; `what` names the array and
/// `axes` its axes.
fn check_4d(shape: &Option<Shape>, what: &str, axes: &str) -> Result<()> {
    match shape {
        Some(s) if s.len() != 4 => {
            Err(Error::Shape(format!("{OP}: {what} must be 4-d ({axes}), got shape {}", fmt_tuple(s))))
        }
        _ => Ok(()),
    }
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
    check_4d(&ins[0], "data", "batch, channel, height, width")?;
    check_4d(&ins[1], "offset", "batch, num_deformable_group·2·kh·kw, out_height, out_width")?;
    check_4d(&ins[2], "weight", "num_filter, channel/num_group, kh, kw")?;
    check_4d(&outs[0], "the output", "batch, num_filter, out_height, out_width")?;
    if ins[..3].iter().all(Option::is_none) && outs[0].is_none() {
        return Ok(());
    }
    // what the output and the offset tell about the output's extents
    let mut seen = outs[0].as_ref().map_or(vec![0; 4], |s| s.to_vec());
    if let Some(off) = &ins[1] {
        for a in [0, 2, 3] {
            if seen[a] == 0 {
                seen[a] = off[a];
            }
        }
    }
    let mut data = ins[0].as_ref().map_or(vec![0; 4], |s| s.to_vec());
    if data[1] == 0 {
        data[1] = ins[2].as_ref().map_or(0, |w| w[1] * p.num_group);
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
                "{OP}: data has {} channels (shape {}), not a multiple of {name}={groups}",
                data[1],
                fmt_tuple(&data)
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
    let what = |name: &str| format!("{OP}: {name}");
    let mut weight = vec![p.num_filter, data[1] / p.num_group];
    weight.extend_from_slice(&p.win.kernel);
    merge(&mut ins[2], &weight, &what("weight"), context)?;
    if !p.no_bias {
        merge(&mut ins[3], &[p.num_filter], &what("bias"), context)?;
    }
    let mut out = vec![data[0], p.num_filter, seen[2], seen[3]];
    for i in 0..2 {
        if data[2 + i] != 0 {
            out[2 + i] = conv_out_extent(OP, &p.win, i, data[2 + i], &data)?;
        }
    }
    merge(&mut outs[0], &out, &what("the output"), context)?;
    let out = outs[0].as_ref().map_or(out, |s| s.to_vec());
    merge(&mut ins[1], &[out[0], p.offset_channels(), out[2], out[3]], &what("offset"), context)?;
    merge(&mut ins[0], &data, &what("data"), context)?;
    Ok(())
}
