//! `Pooling`'s attributes, window and output shape.

use crate::conv::geometry::{fmt_tuple, spatial_attr, Window};
use crate::conv::layout::{infer_shape_last, Layout, POOL_LAYOUTS};
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::{Error, Result};

const OP: &str = "Pooling";

/// How a window combines its elements.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum PoolType {
    /// The largest element.
    Max,
    /// The mean.
    Avg,
    /// The sum.
    Sum,
    /// `(sum of x^p)^(1/p)`.
    Lp(i32),
}

/// How output extents are rounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Convention {
    /// Windows that fit: `floor((x + 2p - k) / s) + 1`.
    Valid,
    /// Windows that start inside: `ceil((x + 2p - k) / s) + 1`.
    Full,
    /// `ceil(x / s)` outputs, the padding split over both ends.
    Same,
}

/// The attributes that do not depend on the data.
#[derive(Debug, Clone)]
pub(crate) struct PoolParams {
    /// The pooling function.
    pub pool_type: PoolType,
    /// Pool over all spatial axes.
    pub global: bool,
    /// Output rounding.
    pub convention: Convention,
    /// Whether the average counts padded positions.
    pub count_include_pad: bool,
    /// The data layout (channel-last calls run channel-first by
    /// permutation).
    pub layout: Layout,
}

/// Parses the attributes (the window is built per data shape by [`window`]).
pub(crate) fn pool_params(attrs: &Attrs) -> Result<PoolParams> {
    let pool_type = match attrs.str("pool_type")? {
        "max" => PoolType::Max,
        "avg" => PoolType::Avg,
        "sum" => PoolType::Sum,
        "lp" => match attrs.opt_int("p_value")? {
            Some(p) if p >= 1 => PoolType::Lp(p as i32),
            Some(p) => return Err(Error::attr("p_value", format!("{OP}: must be at least 1, got {p}"))),
            None => return Err(Error::attr("p_value", format!("{OP}: pool_type='lp' needs p_value"))),
        },
        other => {
            return Err(Error::attr(
                "pool_type",
                format!("{OP}: unknown pool_type `{other}` (avg, lp, max, sum)"),
            ))
        }
    };
    let convention = match attrs.str("pooling_convention")? {
        "valid" => Convention::Valid,
        "full" => Convention::Full,
        "same" => Convention::Same,
        other => {
            return Err(Error::attr(
                "pooling_convention",
                format!("{OP}: unknown pooling_convention `{other}` (full, same, valid)"),
            ))
        }
    };
    let count_include_pad = match attrs.str("count_include_pad")? {
        "None" | "none" | "" | "True" | "true" | "1" => true,
        "False" | "false" | "0" => false,
        other => {
            return Err(Error::attr(
                "count_include_pad",
                format!("{OP}: expected True, False or None, got `{other}`"),
            ))
        }
    };
    let layout = Layout::parse(OP, attrs.str("layout")?, POOL_LAYOUTS)?;
    Ok(PoolParams { pool_type, global: attrs.bool("global_pool")?, convention, count_include_pad, layout })
}

/// The window and output shape for data of shape `data` (complete, in
/// channel-first order).
#[allow(clippy::needless_range_loop)] // per-axis attributes side by side
pub(crate) fn window(attrs: &Attrs, p: &PoolParams, data: &[usize]) -> Result<(Window, Vec<usize>)> {
    if data.len() < 3 || data.len() > 5 {
        return Err(Error::Shape(format!(
            "{OP}: data must be 3-d to 5-d (batch, channel, *spatial), got shape {}",
            fmt_tuple(data)
        )));
    }
    let nd = data.len() - 2;
    let spatial = &data[2..];
    p.layout.check_nd(OP, nd, POOL_LAYOUTS, || format!("data of rank {}", data.len()))?;
    let win = if p.global {
        Window {
            kernel: spatial.to_vec(),
            stride: vec![1; nd],
            dilate: vec![1; nd],
            pad_before: vec![0; nd],
            pad_after: vec![0; nd],
        }
    } else {
        let k = attrs.ints("kernel")?;
        if k.is_empty() {
            return Err(Error::attr(
                "kernel",
                format!("{OP}: `kernel` is required unless global_pool is set"),
            ));
        }
        if k.len() != nd {
            return Err(Error::Shape(format!(
                "{OP}: kernel {k:?} has {} axes, but data of shape {} has {nd} spatial axes",
                k.len(),
                fmt_tuple(data)
            )));
        }
        let pad = spatial_attr(OP, attrs, "pad", nd, 0, 0, true)?;
        Window {
            kernel: spatial_attr(OP, attrs, "kernel", nd, 1, 1, true)?,
            stride: spatial_attr(OP, attrs, "stride", nd, 1, 1, true)?,
            dilate: vec![1; nd],
            pad_after: pad.clone(),
            pad_before: pad,
        }
    };
    let mut win = win;
    let mut out = vec![data[0], data[1]];
    for i in 0..nd {
        let (x, k, s) = (spatial[i], win.kernel[i], win.stride[i]);
        let o = match (p.convention, p.global) {
            (_, true) => 1,
            (Convention::Same, false) => {
                if win.pad_before[i] != 0 {
                    return Err(Error::attr(
                        "pad",
                        format!("{OP}: pooling_convention='same' computes its own padding; pad must be 0"),
                    ));
                }
                let o = x.div_ceil(s);
                let total = ((o.max(1) - 1) * s + k).saturating_sub(x);
                win.pad_before[i] = total / 2;
                win.pad_after[i] = total - total / 2;
                o
            }
            (conv, false) => {
                let padded = x + 2 * win.pad_before[i];
                if k > padded {
                    return Err(Error::Shape(format!(
                        "{OP}: kernel {} exceeds the padded input on spatial axis {i} ({x} + pad {} = {padded}; \
                         data shape {})",
                        fmt_tuple(&win.kernel),
                        2 * win.pad_before[i],
                        fmt_tuple(data)
                    )));
                }
                if conv == Convention::Full {
                    (padded - k).div_ceil(s) + 1
                } else {
                    (padded - k) / s + 1
                }
            }
        };
        out.push(o);
    }
    Ok((win, out))
}

/// Shape inference: the output from the data (nothing is inferred
/// backwards, as in MXNet). Channel-last layouts keep the channel axis
/// last in both.
pub(crate) fn infer_shape(
    attrs: &Attrs,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let p = pool_params(attrs)?;
    if p.layout.channel_last {
        return infer_shape_last(OP, &p.layout, 1, &["data"], ins, outs, |i, o| infer_first(attrs, &p, i, o));
    }
    infer_first(attrs, &p, ins, outs)
}

/// [`infer_shape`] for channel-first shapes.
fn infer_first(
    attrs: &Attrs,
    p: &PoolParams,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let Some(data) = ins[0].clone() else { return Ok(()) };
    if data.len() >= 3 && data[2..].contains(&0) {
        // partially known spatial extents: only batch and channels pass through
        let mut o = vec![0; data.len()];
        o[..2].copy_from_slice(&data[..2]);
        return crate::conv::merge_shape(&mut outs[0], &o, "Pooling: the output", || {
            format!("data of shape {}", fmt_tuple(&data))
        });
    }
    let (_, out) = window(attrs, p, &data)?;
    crate::conv::merge_shape(&mut outs[0], &out, "Pooling: the output", || {
        format!("data of shape {}", fmt_tuple(&data))
    })
}
