//! Xavier (Glorot) and MSRA (He) initialization: random draws scaled by the
//! parameter's fan-in and fan-out.

use super::fill::{arg_error, fill_values, normal_draws, uniform_draws};
use super::json::num;
use super::{InitDesc, Initializer};
use oxnet_core::{Error, NDArray, Result};
use serde_json::Value;
use std::fmt;

/// Which distribution [`Xavier`] draws from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RandType {
    /// Uniform on `[-c, c]`.
    Uniform,
    /// Normal with deviation `c`.
    Gaussian,
}

impl RandType {
    /// Parses MXNet's `rnd_type` (`"uniform"` or `"gaussian"`).
    pub fn parse(s: &str) -> Result<RandType> {
        match s {
            "uniform" => Ok(RandType::Uniform),
            "gaussian" => Ok(RandType::Gaussian),
            other => Err(arg_error(
                "xavier",
                "rnd_type",
                format!("unknown random type `{other}` (uniform or gaussian)"),
            )),
        }
    }
}

impl fmt::Display for RandType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RandType::Uniform => "uniform",
            RandType::Gaussian => "gaussian",
        })
    }
}

/// Which fan [`Xavier`] scales by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FactorType {
    /// The mean of fan-in and fan-out.
    Avg,
    /// Fan-in.
    In,
    /// Fan-out.
    Out,
}

impl FactorType {
    /// Parses MXNet's `factor_type` (`"avg"`, `"in"` or `"out"`); `init`
    /// names the initializer in the error.
    pub fn parse(s: &str, init: &str) -> Result<FactorType> {
        match s {
            "avg" => Ok(FactorType::Avg),
            "in" => Ok(FactorType::In),
            "out" => Ok(FactorType::Out),
            other => {
                Err(arg_error(init, "factor_type", format!("unknown factor type `{other}` (avg, in or out)")))
            }
        }
    }
}

impl fmt::Display for FactorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FactorType::Avg => "avg",
            FactorType::In => "in",
            FactorType::Out => "out",
        })
    }
}

/// `(fan_in, fan_out)` of a weight as MXNet computes them: `shape[1]` and
/// `shape[0]`, each times the product of the axes after the second (a
/// convolution kernel's spatial size). Errors, naming parameter `name`, for
/// shapes with fewer than two axes.
pub fn fans(name: &str, shape: &[usize]) -> Result<(f64, f64)> {
    if shape.len() < 2 {
        return Err(Error::Shape(format!(
            "Xavier initializer cannot be applied to vector `{name}` of shape {shape:?}: it requires at least 2 dimensions"
        )));
    }
    let hw: f64 = shape[2..].iter().map(|&d| d as f64).product();
    Ok((shape[1] as f64 * hw, shape[0] as f64 * hw))
}

/// Xavier initialization: draws scaled by `c = sqrt(magnitude / factor)`,
/// where the factor is fan-in, fan-out or their mean ([`fans`]). Uniform draws
/// lie in `[-c, c]`; Gaussian draws have deviation `c`. MXNet's defaults are
/// uniform, avg, magnitude 3.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Xavier {
    /// The distribution.
    pub rnd_type: RandType,
    /// The fan to scale by.
    pub factor_type: FactorType,
    /// The scale's numerator.
    pub magnitude: f64,
}

impl Xavier {
    /// Xavier initialization with explicit settings.
    pub fn new(rnd_type: RandType, factor_type: FactorType, magnitude: f64) -> Xavier {
        Xavier { rnd_type, factor_type, magnitude }
    }

    /// The scale `c` for a parameter of `shape` named `name`.
    pub fn scale(&self, name: &str, shape: &[usize]) -> Result<f64> {
        let (fan_in, fan_out) = fans(name, shape)?;
        let factor = match self.factor_type {
            FactorType::Avg => (fan_in + fan_out) / 2.0,
            FactorType::In => fan_in,
            FactorType::Out => fan_out,
        };
        Ok((self.magnitude / factor).sqrt())
    }

    fn draw(&self, desc: &InitDesc, arr: &NDArray) -> Result<()> {
        let scale = self.scale(&desc.name, arr.shape())?;
        if arr.size() == 0 {
            return Ok(());
        }
        if !(scale.is_finite() && scale >= 0.0) {
            return Err(arg_error(
                "xavier",
                "magnitude",
                format!("gives scale {scale} for `{}` of shape {:?}", desc.name, arr.shape()),
            ));
        }
        let values = match self.rnd_type {
            RandType::Uniform => uniform_draws(arr.size(), -scale, scale),
            RandType::Gaussian => normal_draws(arr.size(), 0.0, scale),
        };
        fill_values(arr, values)
    }
}

impl Default for Xavier {
    fn default() -> Xavier {
        Xavier::new(RandType::Uniform, FactorType::Avg, 3.0)
    }
}

impl Initializer for Xavier {
    fn name(&self) -> &str {
        "xavier"
    }
    fn kwargs(&self) -> Result<Vec<(String, Value)>> {
        Ok(vec![
            ("rnd_type".into(), Value::from(self.rnd_type.to_string())),
            ("factor_type".into(), Value::from(self.factor_type.to_string())),
            ("magnitude".into(), num(self.magnitude)),
        ])
    }
    fn init_weight(&self, desc: &InitDesc, arr: &NDArray) -> Result<()> {
        self.draw(desc, arr)
    }
}

/// MSRA ("He") initialization for layers followed by a (P)ReLU: Gaussian
/// [`Xavier`] with magnitude `2 / (1 + slope²)`. MXNet's defaults are
/// factor avg, slope 0.25.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MSRAPrelu {
    /// The fan to scale by.
    pub factor_type: FactorType,
    /// The initial slope of the following PReLU (0 for ReLU).
    pub slope: f64,
}

impl MSRAPrelu {
    /// MSRA initialization with explicit settings.
    pub fn new(factor_type: FactorType, slope: f64) -> MSRAPrelu {
        MSRAPrelu { factor_type, slope }
    }

    /// The equivalent [`Xavier`] initializer.
    pub fn as_xavier(&self) -> Xavier {
        Xavier::new(RandType::Gaussian, self.factor_type, 2.0 / (1.0 + self.slope * self.slope))
    }
}

impl Default for MSRAPrelu {
    fn default() -> MSRAPrelu {
        MSRAPrelu::new(FactorType::Avg, 0.25)
    }
}

impl Initializer for MSRAPrelu {
    fn name(&self) -> &str {
        "msraprelu"
    }
    fn kwargs(&self) -> Result<Vec<(String, Value)>> {
        Ok(vec![
            ("factor_type".into(), Value::from(self.factor_type.to_string())),
            ("slope".into(), num(self.slope)),
        ])
    }
    fn init_weight(&self, desc: &InitDesc, arr: &NDArray) -> Result<()> {
        self.as_xavier().draw(desc, arr)
    }
}
