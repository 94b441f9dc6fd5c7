//! `Convolution`'s attributes and shape inference.

use super::geometry::{fmt_tuple, spatial_attr, Window};
use super::layout::{infer_shape_last, Layout, CONV_LAYOUTS};
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::{Error, Result};

/// The parsed attributes of a convolution.
#[derive(Debug, Clone)]
pub(crate) struct ConvParams {
    /// The window (padding is symmetric).
    pub win: Window,
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

/// Parses the kernel and its per-axis attributes (shared with
/// `Deconvolution`-like operators): `kernel` must have 1 to 3 entries.
pub(crate) fn window(op: &str, attrs: &Attrs) -> Result<Window> {
    let k = attrs.ints("kernel")?;
    if k.is_empty() || k.len() > 3 {
        return Err(Error::attr("kernel", format!("{op}: `kernel` must have 1 to 3 entries, got {k:?}")));
    }
    let nd = k.len();
    let kernel = spatial_attr(op, attrs, "kernel", nd, 1, 1, false)?;
    let pad = spatial_attr(op, attrs, "pad", nd, 0, 0, false)?;
    Ok(Window {
        stride: spatial_attr(op, attrs, "stride", nd, 1, 1, false)?,
        dilate: spatial_attr(op, attrs, "dilate", nd, 1, 1, false)?,
        pad_after: pad.clone(),
        pad_before: pad,
        kernel,
    })
}

/// Parses and validates a convolution's attributes.
pub(crate) fn conv_params(attrs: &Attrs) -> Result<ConvParams> {
    let op = "Convolution";
    let win = window(op, attrs)?;
    let layout = Layout::parse(op, attrs.str("layout")?, CONV_LAYOUTS)?;
    layout.check_nd(op, win.nd(), CONV_LAYOUTS, || format!("kernel {}", fmt_tuple(&win.kernel)))?;
    let num_filter = attrs.int("num_filter")?;
    if num_filter < 1 {
        return Err(Error::attr("num_filter", format!("{op}: must be at least 1, got {num_filter}")));
    }
    let num_group = attrs.int("num_group")?;
    if num_group < 1 {
        return Err(Error::attr("num_group", format!("{op}: must be at least 1, got {num_group}")));
    }
    if num_filter % num_group != 0 {
        return Err(Error::attr(
            "num_filter",
            format!("{op}: num_filter={num_filter} is not divisible by num_group={num_group}"),
        ));
    }
    Ok(ConvParams {
        win,
        num_filter: num_filter as usize,
        num_group: num_group as usize,
        no_bias: attrs.bool("no_bias")?,
        layout,
    })
}

/// Output extent of one axis, or an error when the (dilated) kernel does
/// not fit into the padded input. 0 (unknown) stays 0.
pub(crate) fn conv_out_extent(op: &str, w: &Window, i: usize, input: usize, data: &[usize]) -> Result<usize> {
    if input == 0 {
        return Ok(0);
    }
    let padded = input + w.pad_before[i] + w.pad_after[i];
    let span = w.span(i);
    if span > padded {
        return Err(Error::Shape(format!(
            "{op}: kernel {} with dilate {} spans {span} on spatial axis {i}, more than the padded input \
             ({input} + pad {} = {padded}; data shape {})",
            fmt_tuple(&w.kernel),
            fmt_tuple(&w.dilate),
            w.pad_before[i] + w.pad_after[i],
            fmt_tuple(data)
        )));
    }
    Ok((padded - span) / w.stride[i] + 1)
}

/// Merges `want` (0: unknown) into `slot`, or errs naming `what`.
pub(crate) fn merge(
    slot: &mut Option<Shape>,
    want: &[usize],
    what: &str,
    context: impl Fn() -> String,
) -> Result<()> {
    match slot {
        None => {
            *slot = Some(Shape::from_slice(want));
            Ok(())
        }
        Some(have) => {
            let fits =
                have.len() == want.len() && have.iter().zip(want).all(|(&h, &w)| h == 0 || w == 0 || h == w);
            if !fits {
                return Err(Error::Shape(format!(
                    "{what} has shape {}, but {} needs {}",
                    fmt_tuple(have),
                    context(),
                    fmt_tuple(want)
                )));
            }
            for (h, &w) in have.iter_mut().zip(want) {
                if *h == 0 {
                    *h = w;
                }
            }
            Ok(())
        }
    }
}

/// Shape inference for `Convolution`, over complete or partial shapes (a
/// dimension of 0 is unknown): weight `(num_filter, C/num_group, *kernel)`
/// and bias `(num_filter,)` from data; data's channels from the weight, its
/// batch from the output, and its spatial extents from the output where
/// the stride is 1 (as MXNet does). Channel-last layouts take the same
/// shapes with the channel axis last: data `(N, *spatial, C)`, weight
/// `(num_filter, *kernel, C/num_group)`, output `(N, *spatial, num_filter)`.
pub(crate) fn infer_shape(
    attrs: &Attrs,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let p = conv_params(attrs)?;
    if p.layout.channel_last {
        return infer_shape_last(
            "Convolution",
            &p.layout,
            2,
            &["data", "weight", "bias"],
            ins,
            outs,
            |i, o| infer_first(&p, i, o),
        );
    }
    infer_first(&p, ins, outs)
}

/// [`infer_shape`] for channel-first shapes.
fn infer_first(p: &ConvParams, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let op = "Convolution";
    let nd = p.win.nd();
    let rank = nd + 2;
    let check_rank = |s: &Option<Shape>, what: &str| -> Result<()> {
        match s {
            Some(s) if s.len() != rank => Err(Error::Shape(format!(
                "{op}: {what} has shape {}, but kernel {} needs a {rank}-d {what} ({})",
                fmt_tuple(s),
                fmt_tuple(&p.win.kernel),
                if what == "weight" {
                    "num_filter, channels/num_group, *kernel"
                } else {
                    "batch, channels, *spatial"
                }
            ))),
            _ => Ok(()),
        }
    };
    check_rank(&ins[0], "data")?;
    check_rank(&ins[1], "weight")?;
    check_rank(&outs[0], "output")?;
    if ins[0].is_none() && ins[1].is_none() && outs[0].is_none() {
        return Ok(());
    }
    let mut data: Vec<usize> = ins[0].as_ref().map(|s| s.to_vec()).unwrap_or_else(|| vec![0; rank]);
    if data[1] == 0 {
        if let Some(w) = &ins[1] {
            data[1] = w[1] * p.num_group;
        }
    }
    if let Some(o) = &outs[0] {
        if data[0] == 0 {
            data[0] = o[0];
        }
        for i in 0..nd {
            let (span, pad) = (p.win.span(i), p.win.pad_before[i] + p.win.pad_after[i]);
            if data[2 + i] == 0 && o[2 + i] != 0 && p.win.stride[i] == 1 && o[2 + i] + span > pad + 1 {
                data[2 + i] = o[2 + i] + span - 1 - pad;
            }
        }
    }
    let channels = data[1];
    if channels != 0 && !channels.is_multiple_of(p.num_group) {
        return Err(Error::Shape(format!(
            "{op}: data has {channels} channels (shape {}), not divisible by num_group={}",
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
    let mut wshape = vec![p.num_filter, channels / p.num_group];
    wshape.extend_from_slice(&p.win.kernel);
    merge(&mut ins[1], &wshape, &format!("{op}: weight"), context)?;
    if !p.no_bias {
        merge(&mut ins[2], &[p.num_filter], &format!("{op}: bias"), context)?;
    }
    let mut oshape = vec![data[0], p.num_filter];
    for i in 0..nd {
        oshape.push(conv_out_extent(op, &p.win, i, data[2 + i], &data)?);
    }
    merge(&mut outs[0], &oshape, &format!("{op}: the output"), context)?;
    merge(&mut ins[0], &data, &format!("{op}: data"), context)?;
    Ok(())
}
