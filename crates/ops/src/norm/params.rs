//! `BatchNorm`'s attributes, the channel view of its data, and shape
//! inference.

use crate::conv::geometry::fmt_tuple;
use crate::conv::merge_shape;
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::{DType, Error, Result};

/// The parsed attributes.
#[derive(Debug, Clone)]
pub(crate) struct BnParams {
    /// Added to the variance.
    pub eps: f64,
    /// Decay of the moving statistics (rounded to float32, as MXNet holds it).
    pub momentum: f64,
    /// Gamma is taken as 1.
    pub fix_gamma: bool,
    /// Normalise with the moving statistics in train mode too.
    pub use_global_stats: bool,
    /// The channel axis (may be negative).
    pub axis: i64,
    /// The third output is the variance (`BatchNorm_v1`, `SyncBatchNorm`)
    /// rather than the inverse standard deviation (`BatchNorm`).
    pub var_output: bool,
}

/// Parses and validates the attributes of `op`: operators without an
/// `axis` attribute normalise along axis 1.
pub(crate) fn parse_bn_params(op: &str, attrs: &Attrs, var_output: bool) -> Result<BnParams> {
    let eps = attrs.float("eps")?;
    if eps.is_nan() || eps <= 0.0 {
        return Err(Error::attr("eps", format!("{op}: must be positive, got {eps}")));
    }
    let momentum = attrs.float("momentum")?;
    if !(0.0..=1.0).contains(&momentum) {
        return Err(Error::attr("momentum", format!("{op}: must lie in [0, 1], got {momentum}")));
    }
    // MXNet holds momentum as a float: 0.9 decays by 0.89999997615814209,
    // which the moving statistics of float64 data show
    let momentum = f64::from(momentum as f32);
    let axis = match attrs.get("axis") {
        Ok(_) => attrs.int("axis")?,
        Err(_) => 1,
    };
    Ok(BnParams {
        eps,
        momentum,
        fix_gamma: attrs.bool("fix_gamma")?,
        use_global_stats: attrs.bool("use_global_stats")?,
        axis,
        var_output,
    })
}

/// The parameters of a call: those its operator prepared, else
/// `BatchNorm`'s reading of the attributes.
pub(crate) fn bn_params(attrs: &Attrs) -> Result<BnParams> {
    match attrs.prepared::<BnParams>() {
        Some(p) => Ok(p.clone()),
        None => parse_bn_params("BatchNorm", attrs, false),
    }
}

/// Data of shape `shape` seen as `(outer, channels, inner)` around `axis`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChannelView {
    /// Product of the axes before the channel axis.
    pub outer: usize,
    /// Number of channels.
    pub channels: usize,
    /// Product of the axes after the channel axis.
    pub inner: usize,
}

impl ChannelView {
    /// The view, or an error naming the axis and the shape.
    pub fn new(shape: &[usize], axis: i64) -> Result<ChannelView> {
        let rank = shape.len() as i64;
        let a = if axis < 0 { axis + rank } else { axis };
        if rank == 0 || a < 0 || a >= rank {
            return Err(Error::attr(
                "axis",
                format!("BatchNorm: axis {axis} is out of range for data of shape {}", fmt_tuple(shape)),
            ));
        }
        let a = a as usize;
        Ok(ChannelView {
            outer: shape[..a].iter().product(),
            channels: shape[a],
            inner: shape[a + 1..].iter().product(),
        })
    }

    /// Elements per channel (the batch statistics' sample count).
    pub fn per_channel(&self) -> usize {
        self.outer * self.inner
    }
}

/// Shape inference: gamma, beta, moving_mean and moving_var are
/// `(channels,)`; the output has data's shape; mean and var (with
/// output_mean_var) are `(channels,)`. Partial shapes (0 unknown) are
/// understood.
pub(crate) fn infer_shape(
    attrs: &Attrs,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let p = bn_params(attrs)?;
    let data = match (&ins[0], &outs[0]) {
        (Some(d), _) | (None, Some(d)) => d.clone(),
        (None, None) => return Ok(()),
    };
    let view = ChannelView::new(&data, p.axis)?;
    let context = || format!("data of shape {} with axis={}", fmt_tuple(&data), p.axis);
    for (i, name) in ["gamma", "beta", "moving_mean", "moving_var"].iter().enumerate() {
        merge_shape(&mut ins[i + 1], &[view.channels], &format!("BatchNorm: {name}"), context)?;
    }
    merge_shape(&mut ins[0], &data, "BatchNorm: data", context)?;
    merge_shape(&mut outs[0], &data, "BatchNorm: the output", context)?;
    for slot in outs.iter_mut().skip(1) {
        merge_shape(slot, &[view.channels], "BatchNorm: mean/var", context)?;
    }
    Ok(())
}

/// Dtype inference, as MXNet's: gamma, beta, the moving statistics and the
/// mean/var outputs are float32 for float16 (or bfloat16) data and the
/// data's dtype otherwise; the output has the data's dtype.
pub(crate) fn infer_type(_: &Attrs, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    let Some(data) = ins[0].or(outs[0]) else {
        return Err(Error::DType("BatchNorm: the dtype of data is not known".into()));
    };
    if !data.is_float() {
        return Err(Error::DType(format!("BatchNorm: data must be a float array, got {data}")));
    }
    let param = if matches!(data, DType::F16 | DType::BF16) { DType::F32 } else { data };
    let names = ["data", "gamma", "beta", "moving_mean", "moving_var"];
    for (i, slot) in ins.iter_mut().enumerate() {
        let want = if i == 0 { data } else { param };
        match slot {
            Some(have) if *have != want => {
                return Err(Error::DType(format!(
                    "BatchNorm: {} has dtype {have}, but data of dtype {data} needs {want}",
                    names.get(i).copied().unwrap_or("input")
                )))
            }
            _ => *slot = Some(want),
        }
    }
    for (k, slot) in outs.iter_mut().enumerate() {
        *slot = Some(if k == 0 { data } else { param });
    }
    Ok(())
}
