//! `Deconvolution`'s attributes and shape inference.

use super::geometry::{fmt_tuple, spatial_attr, Window};
use super::layout::{infer_shape_last, Layout, CONV_LAYOUTS};
use super::params::{merge, window};
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::{Error, Result};

const OP: &str = "Deconvolution";

/// The parsed attributes of a transposed convolution.
#[derive(Debug, Clone)]
pub(crate) struct DeconvParams {
    /// The window of the convolution this one transposes.
    pub win: Window,
    /// Extra output extent at the end of each axis.
    pub adj: Vec<usize>,
    /// The requested output extents (empty: from pad and adj).
    pub target: Vec<usize>,
    /// Number of output channels.
    pub num_filter: usize,
    /// Number of channel groups.
    pub num_group: usize,
    /// No bias input.
    pub no_bias: bool,
    /// The data layout (channel-last calls run channel-first by
    /// permutation).
    pub layout: Layout,
}

/// Parses and validates the attributes.
pub(crate) fn deconv_params(attrs: &Attrs) -> Result<DeconvParams> {
    let win = window(OP, attrs)?;
    let nd = win.nd();
    let layout = Layout::parse(OP, attrs.str("layout")?, CONV_LAYOUTS)?;
    layout.check_nd(OP, nd, CONV_LAYOUTS, || format!("kernel {}", fmt_tuple(&win.kernel)))?;
    let adj = spatial_attr(OP, attrs, "adj", nd, 0, 0, false)?;
    let target = attrs.ints("target_shape")?;
    let target = if target.is_empty() {
        Vec::new()
    } else {
        spatial_attr(OP, attrs, "target_shape", nd, 1, 1, false)?
    };
    for i in 0..nd {
        if adj[i] >= win.stride[i].max(win.dilate[i]) && target.is_empty() {
            return Err(Error::attr(
                "adj",
                format!(
                    "{OP}: adj {} must be smaller than stride {} or dilate {}",
                    fmt_tuple(&adj),
                    fmt_tuple(&win.stride),
                    fmt_tuple(&win.dilate)
                ),
            ));
        }
    }
    let num_filter = attrs.int("num_filter")?;
    let num_group = attrs.int("num_group")?;
    if num_filter < 1 || num_group < 1 {
        return Err(Error::attr("num_filter", format!("{OP}: num_filter and num_group must be at least 1")));
    }
    if num_filter % num_group != 0 {
        return Err(Error::attr(
            "num_filter",
            format!("{OP}: num_filter={num_filter} is not divisible by num_group={num_group}"),
        ));
    }
    Ok(DeconvParams {
        win,
        adj,
        target,
        num_filter: num_filter as usize,
        num_group: num_group as usize,
        no_bias: attrs.bool("no_bias")?,
        layout,
    })
}

/// The padding and adj per axis for an input of spatial extents `input`
/// (with target_shape, as MXNet derives them: the total padding split with
/// its odd part going to adj).
#[allow(clippy::needless_range_loop)] // per-axis attributes side by side
pub(crate) fn pad_adj(p: &DeconvParams, input: &[usize]) -> Result<(Vec<usize>, Vec<usize>)> {
    if p.target.is_empty() {
        return Ok((p.win.pad_before.clone(), p.adj.clone()));
    }
    let mut pad = Vec::new();
    let mut adj = Vec::new();
    for i in 0..p.win.nd() {
        let full = p.win.stride[i] * input[i].saturating_sub(1) + p.win.span(i);
        if input[i] == 0 {
            pad.push(0);
            adj.push(0);
            continue;
        }
        if full < p.target[i] {
            return Err(Error::attr(
                "target_shape",
                format!(
                    "{OP}: target_shape {} is larger than the largest output ({full}) on spatial axis {i}",
                    fmt_tuple(&p.target)
                ),
            ));
        }
        let total = full - p.target[i];
        pad.push(total.div_ceil(2));
        adj.push(total % 2);
    }
    Ok((pad, adj))
}

/// Output extent of axis `i` for input extent `x` (0 stays unknown).
fn out_extent(
    p: &DeconvParams,
    pad: &[usize],
    adj: &[usize],
    i: usize,
    x: usize,
    data: &[usize],
) -> Result<usize> {
    if x == 0 {
        return Ok(0);
    }
    let full = p.win.stride[i] * (x - 1) + p.win.span(i) + adj[i];
    if 2 * pad[i] >= full {
        return Err(Error::Shape(format!(
            "{OP}: pad {} leaves no output on spatial axis {i} (data shape {})",
            fmt_tuple(pad),
            fmt_tuple(data)
        )));
    }
    Ok(full - 2 * pad[i])
}

/// Shape inference: weight `(C, num_filter/num_group, *kernel)` and bias
/// `(num_filter,)` from data, data's channels from the weight. Channel-last
/// layouts take the same shapes with the channel axis last: data
/// `(N, *spatial, C)`, weight `(C, *kernel, num_filter/num_group)`.
pub(crate) fn infer_shape(
    attrs: &Attrs,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let p = deconv_params(attrs)?;
    if p.layout.channel_last {
        return infer_shape_last(OP, &p.layout, 2, &["data", "weight", "bias"], ins, outs, |i, o| {
            infer_first(&p, i, o)
        });
    }
    infer_first(&p, ins, outs)
}

/// [`infer_shape`] for channel-first shapes.
fn infer_first(p: &DeconvParams, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let nd = p.win.nd();
    let rank = nd + 2;
    for (s, what) in [(&ins[0], "data"), (&ins[1], "weight"), (&outs[0], "output")] {
        if let Some(s) = s {
            if s.len() != rank {
                return Err(Error::Shape(format!(
                    "{OP}: {what} has shape {}, but kernel {} needs a {rank}-d {what}",
                    fmt_tuple(s),
                    fmt_tuple(&p.win.kernel)
                )));
            }
        }
    }
    if ins[0].is_none() && ins[1].is_none() {
        return Ok(());
    }
    let mut data: Vec<usize> = ins[0].as_ref().map(|s| s.to_vec()).unwrap_or_else(|| vec![0; rank]);
    if data[1] == 0 {
        if let Some(w) = &ins[1] {
            data[1] = w[0];
        }
    }
    if data[1] != 0 && !data[1].is_multiple_of(p.num_group) {
        return Err(Error::Shape(format!(
            "{OP}: data has {} channels (shape {}), not divisible by num_group={}",
            data[1],
            fmt_tuple(&data),
            p.num_group
        )));
    }
    let context = || {
        format!(
            "data of shape {} with num_filter={}, num_group={}, kernel {}",
            fmt_tuple(&data),
            p.num_filter,
            p.num_group,
            fmt_tuple(&p.win.kernel)
        )
    };
    let mut wshape = vec![data[1], p.num_filter / p.num_group];
    wshape.extend_from_slice(&p.win.kernel);
    merge(&mut ins[1], &wshape, &format!("{OP}: weight"), context)?;
    if !p.no_bias {
        merge(&mut ins[2], &[p.num_filter], &format!("{OP}: bias"), context)?;
    }
    let (pad, adj) = pad_adj(p, &data[2..])?;
    let mut oshape = vec![data[0], p.num_filter];
    for i in 0..nd {
        oshape.push(out_extent(p, &pad, &adj, i, data[2 + i], &data)?);
    }
    merge(&mut outs[0], &oshape, &format!("{OP}: the output"), context)?;
    merge(&mut ins[0], &data, &format!("{OP}: data"), context)?;
    Ok(())
}
