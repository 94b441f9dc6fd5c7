//! [`Conv`]: convolution layers over 1 to 3 spatial axes, and their
//! transposed forms (Gluon's `Conv1D`/`Conv2D`/`Conv3D` and
//! `Conv1DTranspose`/`Conv2DTranspose`/`Conv3DTranspose`).

use super::{Activation, OpCall};
use crate::block::{in_block, single_input, Block};
use crate::init::Zero;
use crate::naming::unique_prefix;
use crate::parameter::{Parameter, SharedInit};
use oxnet_core::{AttrValue, DType, Error, NDArray, Result};
use std::sync::{Arc, OnceLock};

/// A convolution layer: `Convolution` (or, transposed, `Deconvolution`)
/// with a learnt `weight` and `bias`, then an optional activation, on
/// `NC<spatial>` data. Parameters and prefix follow MXNet's Gluon
/// (`conv<k>_weight`, `conv<k>_bias`); the weight is
/// `(channels, in_channels / groups, *kernel)`, transposed
/// `(in_channels, channels / groups, *kernel)`, with `in_channels`
/// inferred from the first input unless given.
///
/// ```
/// use oxnet_core::{DType, NDArray};
/// use oxnet_nn::block::Block;
/// use oxnet_nn::init::One;
/// use oxnet_nn::layers::Conv;
/// use oxnet_nn::parameter::shared_init;
///
/// // 3x3 convolution, padding 1, 4 filters over a 2-channel 5x5 input of ones
/// let conv = Conv::conv2d(4, [3, 3]).padding(&[1, 1]).unwrap();
/// conv.initialize(&shared_init(One)).unwrap();
/// let x = NDArray::ones(&[1, 2, 5, 5], DType::F32, Default::default()).unwrap();
/// let y = conv.call(&x).unwrap();
/// assert_eq!(y.shape(), &[1, 4, 5, 5]);
/// assert_eq!(conv.weight().shape(), vec![4, 2, 3, 3]);
/// // the centre sees 2 channels x 9 taps of ones; the bias starts at 0
/// assert_eq!(y.to_vec::<f32>().unwrap()[12], 18.0);
/// ```
pub struct Conv {
    prefix: String,
    kind: &'static str,
    transpose: bool,
    channels: usize,
    kernel: Vec<usize>,
    strides: Vec<usize>,
    padding: Vec<usize>,
    dilation: Vec<usize>,
    output_padding: Vec<usize>,
    groups: usize,
    weight: Parameter,
    bias: Option<Parameter>,
    activation: Option<Activation>,
    /// The operator call, made on first use (builders reset it).
    call: OnceLock<OpCall>,
}

impl Conv {
    fn new(kind: &'static str, transpose: bool, channels: usize, kernel: &[usize]) -> Conv {
        let prefix = unique_prefix("conv");
        let n = kernel.len();
        // (the group-dependent and input-dependent extents are inferred)
        let mut wshape = vec![0usize; n + 2];
        if !transpose {
            wshape[0] = channels;
        }
        wshape[2..].copy_from_slice(kernel);
        let weight = Parameter::new(format!("{prefix}weight"), &wshape).allow_deferred_init(true);
        let bias = Parameter::new(format!("{prefix}bias"), &[channels])
            .allow_deferred_init(true)
            .with_init(Arc::new(Zero));
        Conv {
            prefix,
            kind,
            transpose,
            channels,
            kernel: kernel.to_vec(),
            strides: vec![1; n],
            padding: vec![0; n],
            dilation: vec![1; n],
            output_padding: vec![0; n],
            groups: 1,
            weight,
            bias: Some(bias),
            activation: None,
            call: OnceLock::new(),
        }
    }

    /// `Conv1D`: `channels` filters of width `kernel`, on `NCW` data.
    pub fn conv1d(channels: usize, kernel: usize) -> Conv {
        Conv::new("Conv1D", false, channels, &[kernel])
    }

    /// `Conv2D`: `channels` filters of `kernel` (height, width), on `NCHW` data.
    pub fn conv2d(channels: usize, kernel: [usize; 2]) -> Conv {
        Conv::new("Conv2D", false, channels, &kernel)
    }

    /// `Conv3D`: `channels` filters of `kernel` (depth, height, width), on `NCDHW` data.
    pub fn conv3d(channels: usize, kernel: [usize; 3]) -> Conv {
        Conv::new("Conv3D", false, channels, &kernel)
    }

    /// `Conv1DTranspose`: a transposed convolution to `channels` outputs.
    pub fn conv1d_transpose(channels: usize, kernel: usize) -> Conv {
        Conv::new("Conv1DTranspose", true, channels, &[kernel])
    }

    /// `Conv2DTranspose`: a transposed convolution to `channels` outputs.
    pub fn conv2d_transpose(channels: usize, kernel: [usize; 2]) -> Conv {
        Conv::new("Conv2DTranspose", true, channels, &kernel)
    }

    /// `Conv3DTranspose`: a transposed convolution to `channels` outputs.
    pub fn conv3d_transpose(channels: usize, kernel: [usize; 3]) -> Conv {
        Conv::new("Conv3DTranspose", true, channels, &kernel)
    }

    fn per_axis(&self, what: &str, v: &[usize]) -> Result<Vec<usize>> {
        if v.len() != self.kernel.len() {
            return Err(Error::attr(
                what,
                format!(
                    "{} has {} spatial axes, {what} gives {} values",
                    self.kind,
                    self.kernel.len(),
                    v.len()
                ),
            ));
        }
        Ok(v.to_vec())
    }

    /// The step between windows per spatial axis (1 by default).
    pub fn strides(mut self, strides: &[usize]) -> Result<Conv> {
        self.strides = self.per_axis("strides", strides)?;
        self.call = OnceLock::new();
        Ok(self)
    }

    /// Zeros added on both sides of each spatial axis (0 by default).
    pub fn padding(mut self, padding: &[usize]) -> Result<Conv> {
        self.padding = self.per_axis("padding", padding)?;
        self.call = OnceLock::new();
        Ok(self)
    }

    /// The spacing between kernel taps per spatial axis (1 by default).
    pub fn dilation(mut self, dilation: &[usize]) -> Result<Conv> {
        self.dilation = self.per_axis("dilation", dilation)?;
        self.call = OnceLock::new();
        Ok(self)
    }

    /// Extra output size on one side (transposed convolutions only; MXNet's `adj`).
    pub fn output_padding(mut self, output_padding: &[usize]) -> Result<Conv> {
        if !self.transpose {
            return Err(Error::attr("output_padding", format!("{} has no output padding", self.kind)));
        }
        self.output_padding = self.per_axis("output_padding", output_padding)?;
        self.call = OnceLock::new();
        Ok(self)
    }

    /// Splits the channels into `groups` independent convolutions
    /// (`groups == in_channels == channels` is depth-wise).
    pub fn groups(mut self, groups: usize) -> Result<Conv> {
        if groups == 0 || self.channels % groups != 0 {
            return Err(Error::attr(
                "groups",
                format!("{}: {} channels cannot be split into {groups} groups", self.kind, self.channels),
            ));
        }
        self.groups = groups;
        self.call = OnceLock::new();
        Ok(self)
    }

    /// Declares the input channels (no inference needed).
    pub fn in_channels(self, in_channels: usize) -> Result<Conv> {
        if in_channels % self.groups != 0 {
            return Err(Error::attr(
                "in_channels",
                format!(
                    "{}: {in_channels} input channels cannot be split into {} groups",
                    self.kind, self.groups
                ),
            ));
        }
        let mut shape = self.weight.shape();
        if self.transpose {
            shape[0] = in_channels;
            shape[1] = self.channels / self.groups;
        } else {
            shape[1] = in_channels / self.groups;
        }
        self.weight.set_shape(&shape)?;
        Ok(self)
    }

    /// Applies an activation (`relu`, `sigmoid`, `tanh`, `softrelu`,
    /// `softsign`) to the output.
    pub fn activation(mut self, act_type: &str) -> Result<Conv> {
        self.activation = Some(Activation::with_prefix(act_type, format!("{}{act_type}_", self.prefix))?);
        Ok(self)
    }

    /// Whether the layer has a bias (true by default).
    pub fn use_bias(mut self, use_bias: bool) -> Conv {
        if !use_bias {
            self.bias = None;
        }
        self.call = OnceLock::new();
        self
    }

    /// The weight's own initializer (the block's one otherwise).
    pub fn weight_init(mut self, init: SharedInit) -> Conv {
        self.weight = self.weight.with_init(init);
        self
    }

    /// The bias's initializer (zeros by default).
    pub fn bias_init(mut self, init: SharedInit) -> Conv {
        self.bias = self.bias.map(|b| b.with_init(init));
        self
    }

    /// The parameters' element type (float32 by default).
    pub fn dtype(mut self, dtype: DType) -> Conv {
        self.weight = self.weight.with_dtype(dtype);
        self.bias = self.bias.map(|b| b.with_dtype(dtype));
        self
    }

    /// The number of output channels.
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// The weight.
    pub fn weight(&self) -> &Parameter {
        &self.weight
    }

    /// The bias, `(channels,)`, if the layer has one.
    pub fn bias(&self) -> Option<&Parameter> {
        self.bias.as_ref()
    }

    fn op(&self) -> Result<&OpCall> {
        if let Some(call) = self.call.get() {
            return Ok(call);
        }
        let ints = |v: &[usize]| AttrValue::Ints(v.iter().map(|&d| d as i64).collect());
        let mut attrs = vec![
            ("kernel", ints(&self.kernel)),
            ("stride", ints(&self.strides)),
            ("dilate", ints(&self.dilation)),
            ("pad", ints(&self.padding)),
            ("num_filter", self.channels.into()),
            ("num_group", self.groups.into()),
            ("no_bias", self.bias.is_none().into()),
        ];
        if self.transpose {
            attrs.push(("adj", ints(&self.output_padding)));
        }
        let call = OpCall::new(if self.transpose { "Deconvolution" } else { "Convolution" }, &attrs)?;
        Ok(self.call.get_or_init(|| call))
    }

    fn run(&self, x: &NDArray) -> Result<NDArray> {
        let y = self.op()?.call_weighted(x, &self.weight, self.bias.as_ref(), self.name())?;
        match &self.activation {
            Some(act) => act.apply(&y),
            None => Ok(y),
        }
    }
}

impl Block for Conv {
    fn prefix(&self) -> &str {
        &self.prefix
    }

    fn params(&self) -> Vec<(String, Parameter)> {
        let mut out = vec![("weight".to_string(), self.weight.clone())];
        out.extend(self.bias.iter().map(|b| ("bias".to_string(), b.clone())));
        out
    }

    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        let x = single_input(inputs, self.name())?;
        self.run(x).map(|y| vec![y]).map_err(|e| in_block(e, self.name(), self.kind))
    }
}
