//! Activation layers: [`Activation`] (relu, sigmoid, tanh, softrelu,
//! softsign), and the rectifier family of `LeakyReLU`: [`LeakyReLU`],
//! [`ELU`], [`SELU`], [`GELU`]; and [`Swish`].

use super::OpCall;
use crate::block::{in_block, single_input, Block};
use crate::naming::unique_prefix;
use oxnet_core::{NDArray, Result};

/// An element-wise activation by name (Gluon's `nn.Activation`): `relu`,
/// `sigmoid`, `tanh`, `softrelu` (`log(1 + exp(x))`) or `softsign`.
///
/// ```
/// use oxnet_core::NDArray;
/// use oxnet_nn::block::Block;
/// use oxnet_nn::layers::Activation;
///
/// let relu = Activation::new("relu").unwrap();
/// let x = NDArray::from_vec(vec![-1.0f32, 2.0], &[2]).unwrap();
/// assert_eq!(relu.call(&x).unwrap().to_vec::<f32>().unwrap(), vec![0.0, 2.0]);
/// assert!(Activation::new("wobbly").is_err());
/// ```
pub struct Activation {
    prefix: String,
    act_type: String,
    call: OpCall,
}

impl Activation {
    /// The activation `act_type` (an error for an unknown one).
    pub fn new(act_type: &str) -> Result<Activation> {
        Activation::with_prefix(act_type, unique_prefix(act_type))
    }

    pub(crate) fn with_prefix(act_type: &str, prefix: String) -> Result<Activation> {
        let call = OpCall::new("Activation", &[("act_type", act_type.into())])?;
        Ok(Activation { prefix, act_type: act_type.to_string(), call })
    }

    /// The activation's name.
    pub fn act_type(&self) -> &str {
        &self.act_type
    }

    pub(crate) fn apply(&self, x: &NDArray) -> Result<NDArray> {
        self.call.call1(&[x])
    }
}

impl Block for Activation {
    fn prefix(&self) -> &str {
        &self.prefix
    }

    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        let x = single_input(inputs, self.name())?;
        self.apply(x).map(|y| vec![y]).map_err(|e| in_block(e, self.name(), "Activation"))
    }
}

/// A layer calling one `LeakyReLU` variant.
struct Rectifier {
    prefix: String,
    kind: &'static str,
    call: OpCall,
}

impl Rectifier {
    fn new(kind: &'static str, hint: &str, act_type: &str, slope: Option<f64>) -> Result<Rectifier> {
        let mut attrs = vec![("act_type", act_type.into())];
        if let Some(s) = slope {
            attrs.push(("slope", s.into()));
        }
        Ok(Rectifier { prefix: unique_prefix(hint), kind, call: OpCall::new("LeakyReLU", &attrs)? })
    }

    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        let name = self.prefix.strip_suffix('_').unwrap_or(&self.prefix);
        let x = single_input(inputs, name)?;
        self.call.call1(&[x]).map(|y| vec![y]).map_err(|e| in_block(e, name, self.kind))
    }
}

macro_rules! rectifier_block {
    ($ty:ident) => {
        impl Block for $ty {
            fn prefix(&self) -> &str {
                &self.0.prefix
            }

            fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
                self.0.forward(inputs)
            }
        }
    };
}

/// `x` above 0, `alpha·x` below (Gluon's `nn.LeakyReLU`).
///
/// ```
/// use oxnet_core::NDArray;
/// use oxnet_nn::block::Block;
/// use oxnet_nn::layers::LeakyReLU;
///
/// let x = NDArray::from_vec(vec![-2.0f32, 3.0], &[2]).unwrap();
/// let y = LeakyReLU::new(0.1).unwrap().call(&x).unwrap();
/// assert_eq!(y.to_vec::<f32>().unwrap(), vec![-0.2, 3.0]);
/// ```
pub struct LeakyReLU(Rectifier);

impl LeakyReLU {
    /// The slope `alpha` below 0 (an error if negative, as in Gluon).
    pub fn new(alpha: f64) -> Result<LeakyReLU> {
        if alpha < 0.0 {
            return Err(oxnet_core::Error::attr("alpha", format!("LeakyReLU needs alpha >= 0, got {alpha}")));
        }
        Ok(LeakyReLU(Rectifier::new("LeakyReLU", "leakyrelu", "leaky", Some(alpha))?))
    }
}
rectifier_block!(LeakyReLU);

/// `x` above 0, `alpha·(exp(x) - 1)` below (Gluon's `nn.ELU`).
pub struct ELU(Rectifier);

impl ELU {
    /// With `alpha` (Gluon's default is 1.0).
    pub fn new(alpha: f64) -> Result<ELU> {
        Ok(ELU(Rectifier::new("ELU", "elu", "elu", Some(alpha))?))
    }
}
rectifier_block!(ELU);

/// The scaled ELU with SELU's fixed constants (Gluon's `nn.SELU`).
pub struct SELU(Rectifier);

impl SELU {
    /// The layer.
    pub fn new() -> Result<SELU> {
        Ok(SELU(Rectifier::new("SELU", "selu", "selu", None)?))
    }
}
rectifier_block!(SELU);

/// `x·Φ(x)` with `Φ` the standard normal distribution function (Gluon's
/// `nn.GELU`).
pub struct GELU(Rectifier);

impl GELU {
    /// The layer.
    pub fn new() -> Result<GELU> {
        Ok(GELU(Rectifier::new("GELU", "gelu", "gelu", None)?))
    }
}
rectifier_block!(GELU);

/// `x · sigmoid(beta·x)` (Gluon's `nn.Swish`).
///
/// ```
/// use oxnet_core::NDArray;
/// use oxnet_nn::block::Block;
/// use oxnet_nn::layers::Swish;
///
/// let x = NDArray::from_vec(vec![0.0f32, 2.0], &[2]).unwrap();
/// let y = Swish::new(1.0).unwrap().call(&x).unwrap().to_vec::<f32>().unwrap();
/// assert!((y[1] - 2.0 / (1.0 + (-2.0f32).exp())).abs() < 1e-6);
/// ```
pub struct Swish {
    prefix: String,
    scale: OpCall,
    sigmoid: OpCall,
    mul: OpCall,
}

impl Swish {
    /// With `beta` (Gluon's default is 1.0).
    pub fn new(beta: f64) -> Result<Swish> {
        Ok(Swish {
            prefix: unique_prefix("swish"),
            scale: OpCall::new("_mul_scalar", &[("scalar", beta.into())])?,
            sigmoid: OpCall::new("sigmoid", &[])?,
            mul: OpCall::new("elemwise_mul", &[])?,
        })
    }

    fn run(&self, x: &NDArray) -> Result<NDArray> {
        let s = self.sigmoid.call1(&[&self.scale.call1(&[x])?])?;
        self.mul.call1(&[x, &s])
    }
}

impl Block for Swish {
    fn prefix(&self) -> &str {
        &self.prefix
    }

    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        let x = single_input(inputs, self.name())?;
        self.run(x).map(|y| vec![y]).map_err(|e| in_block(e, self.name(), "Swish"))
    }
}
