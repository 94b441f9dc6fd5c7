//! [`BatchNorm`]: batch normalization with learnt scale and shift and
//! running statistics (Gluon's `nn.BatchNorm`).

use super::custom::infer_param_shapes;
use super::OpCall;
use crate::block::{in_block, single_input, Block};
use crate::init::{One, Zero};
use crate::naming::unique_prefix;
use crate::parameter::{GradReq, Parameter};
use oxnet_core::{DType, NDArray, Result};
use std::sync::{Arc, OnceLock};

/// Batch normalization over the channel `axis` (1 by default): in train
/// mode each channel is normalized with the batch's mean and variance and
/// the running statistics move towards them by `1 - momentum`; otherwise
/// (and with `use_global_stats`) the running statistics are used. Then
/// `gamma` scales (unless `scale(false)`: gamma stays 1) and `beta` shifts
/// (unless `center(false)`: beta stays 0). Parameters are MXNet's:
/// `batchnorm<k>_gamma`, `_beta`, `_running_mean`, `_running_var`, of the
/// channel count, inferred from the first input.
///
/// ```
/// use oxnet_core::{autograd, NDArray};
/// use oxnet_nn::block::Block;
/// use oxnet_nn::init::Zero;
/// use oxnet_nn::layers::BatchNorm;
/// use oxnet_nn::parameter::shared_init;
///
/// let bn = BatchNorm::new();
/// bn.initialize(&shared_init(Zero)).unwrap();
/// let x = NDArray::from_vec(vec![1.0f32, 3.0], &[2, 1]).unwrap();
/// let y = {
///     let _train = autograd::train_mode();
///     bn.call(&x).unwrap()
/// };
/// // normalized with the batch's mean 2 and variance 1 (epsilon 1e-5)
/// let y = y.to_vec::<f32>().unwrap();
/// assert!((y[0] + 1.0).abs() < 1e-4 && (y[1] - 1.0).abs() < 1e-4);
/// ```
pub struct BatchNorm {
    prefix: String,
    axis: i64,
    momentum: f64,
    epsilon: f64,
    center: bool,
    scale: bool,
    use_global_stats: bool,
    gamma: Parameter,
    beta: Parameter,
    running_mean: Parameter,
    running_var: Parameter,
    call: OnceLock<OpCall>,
}

impl Default for BatchNorm {
    fn default() -> Self {
        BatchNorm::new()
    }
}

impl BatchNorm {
    /// Axis 1, momentum 0.9, epsilon 1e-5, learnt gamma and beta; the
    /// channel count inferred.
    pub fn new() -> BatchNorm {
        let prefix = unique_prefix("batchnorm");
        let param = |name: &str, init: crate::parameter::SharedInit, req: GradReq| {
            Parameter::new(format!("{prefix}{name}"), &[0])
                .allow_deferred_init(true)
                .with_init(init)
                .with_grad_req(req)
        };
        BatchNorm {
            axis: 1,
            momentum: 0.9,
            epsilon: 1e-5,
            center: true,
            scale: true,
            use_global_stats: false,
            gamma: param("gamma", Arc::new(One), GradReq::Write),
            beta: param("beta", Arc::new(Zero), GradReq::Write),
            running_mean: param("running_mean", Arc::new(Zero), GradReq::Null),
            running_var: param("running_var", Arc::new(One), GradReq::Null),
            prefix,
            call: OnceLock::new(),
        }
    }

    /// The channel axis (1 by default; -1 for channels last).
    pub fn axis(mut self, axis: i64) -> BatchNorm {
        self.axis = axis;
        self.call = OnceLock::new();
        self
    }

    /// How much of the running statistics each training step keeps (0.9).
    pub fn momentum(mut self, momentum: f64) -> BatchNorm {
        self.momentum = momentum;
        self.call = OnceLock::new();
        self
    }

    /// Added to the variance (1e-5).
    pub fn epsilon(mut self, epsilon: f64) -> BatchNorm {
        self.epsilon = epsilon;
        self.call = OnceLock::new();
        self
    }

    /// Whether beta is learnt (true); without it beta stays 0.
    pub fn center(mut self, center: bool) -> BatchNorm {
        self.center = center;
        let _ = self.beta.set_grad_req(if center { GradReq::Write } else { GradReq::Null });
        self
    }

    /// Whether gamma is learnt (true); without it gamma stays 1.
    pub fn scale(mut self, scale: bool) -> BatchNorm {
        self.scale = scale;
        let _ = self.gamma.set_grad_req(if scale { GradReq::Write } else { GradReq::Null });
        self.call = OnceLock::new();
        self
    }

    /// Normalize with the running statistics in train mode too.
    pub fn use_global_stats(mut self, on: bool) -> BatchNorm {
        self.use_global_stats = on;
        self.call = OnceLock::new();
        self
    }

    /// Declares the channel count (no inference needed).
    pub fn in_channels(self, channels: usize) -> Result<BatchNorm> {
        for p in [&self.gamma, &self.beta, &self.running_mean, &self.running_var] {
            p.set_shape(&[channels])?;
        }
        Ok(self)
    }

    /// The parameters' element type (float32 by default).
    pub fn dtype(mut self, dtype: DType) -> BatchNorm {
        self.gamma = self.gamma.with_dtype(dtype);
        self.beta = self.beta.with_dtype(dtype);
        self.running_mean = self.running_mean.with_dtype(dtype);
        self.running_var = self.running_var.with_dtype(dtype);
        self
    }

    /// The running mean (updated in train mode).
    pub fn running_mean(&self) -> &Parameter {
        &self.running_mean
    }

    /// The running variance (updated in train mode).
    pub fn running_var(&self) -> &Parameter {
        &self.running_var
    }

    fn op(&self) -> Result<&OpCall> {
        if let Some(call) = self.call.get() {
            return Ok(call);
        }
        let call = OpCall::new(
            "BatchNorm",
            &[
                ("axis", self.axis.into()),
                ("eps", self.epsilon.into()),
                ("momentum", self.momentum.into()),
                ("fix_gamma", (!self.scale).into()),
                ("use_global_stats", self.use_global_stats.into()),
            ],
        )?;
        Ok(self.call.get_or_init(|| call))
    }

    fn run(&self, x: &NDArray) -> Result<NDArray> {
        let call = self.op()?;
        let params = [&self.gamma, &self.beta, &self.running_mean, &self.running_var];
        infer_param_shapes(&call.op, &call.attrs, &[x], &params, self.name())?;
        let values = params.iter().map(|p| p.data()).collect::<Result<Vec<_>>>()?;
        let mut inputs = vec![x];
        inputs.extend(values.iter());
        call.call1(&inputs)
    }
}

impl Block for BatchNorm {
    fn prefix(&self) -> &str {
        &self.prefix
    }

    fn params(&self) -> Vec<(String, Parameter)> {
        vec![
            ("gamma".to_string(), self.gamma.clone()),
            ("beta".to_string(), self.beta.clone()),
            ("running_mean".to_string(), self.running_mean.clone()),
            ("running_var".to_string(), self.running_var.clone()),
        ]
    }

    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        let x = single_input(inputs, self.name())?;
        self.run(x).map(|y| vec![y]).map_err(|e| in_block(e, self.name(), "BatchNorm"))
    }
}
