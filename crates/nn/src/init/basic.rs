//! The simple initializers: constants and plain random draws.

use super::fill::{arg_error, assign_broadcast, fill_values, normal_draws, uniform_draws};
use super::json::num;
use super::{InitDesc, Initializer};
use oxnet_core::{Error, NDArray, Result};
use serde_json::Value;

/// Fills weights with zeros (MXNet's `Zero`, also named `zeros`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Zero;

impl Initializer for Zero {
    fn name(&self) -> &str {
        "zero"
    }
    fn kwargs(&self) -> Result<Vec<(String, Value)>> {
        Ok(Vec::new())
    }
    fn init_weight(&self, _desc: &InitDesc, arr: &NDArray) -> Result<()> {
        arr.fill(0.0)
    }
}

/// Fills weights with ones (MXNet's `One`, also named `ones`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct One;

impl Initializer for One {
    fn name(&self) -> &str {
        "one"
    }
    fn kwargs(&self) -> Result<Vec<(String, Value)>> {
        Ok(Vec::new())
    }
    fn init_weight(&self, _desc: &InitDesc, arr: &NDArray) -> Result<()> {
        arr.fill(1.0)
    }
}

/// Fills weights with a given value: a scalar, or an array broadcast to the
/// parameter's shape as MXNet's `arr[:] = value` broadcasts (leading axes of
/// length 1 dropped, then numpy's rules).
#[derive(Clone, Debug)]
pub struct Constant {
    value: ConstantValue,
}

#[derive(Clone, Debug)]
enum ConstantValue {
    Scalar(f64),
    Array(NDArray),
}

impl Constant {
    /// Every element set to `value`.
    pub fn new(value: f64) -> Constant {
        Constant { value: ConstantValue::Scalar(value) }
    }

    /// Elements copied from `value` (broadcast to the parameter's shape).
    /// The array is held, not copied.
    pub fn from_array(value: NDArray) -> Constant {
        Constant { value: ConstantValue::Array(value) }
    }

    /// Elements copied from row-major `values` of `shape`.
    pub fn from_values(values: Vec<f64>, shape: Vec<usize>) -> Result<Constant> {
        Ok(Constant::from_array(NDArray::from_vec(values, &shape)?))
    }

    /// Reads a value as MXNet serialises it: a number or nested lists.
    pub fn from_json_value(value: &Value) -> Result<Constant> {
        match value {
            Value::Number(_) | Value::String(_) => Ok(Constant::new(json_number(value, "value")?)),
            Value::Array(_) => {
                let mut values = Vec::new();
                let shape = nested_shape(value, &mut values)?;
                Constant::from_values(values, shape)
            }
            other => Err(arg_error("constant", "value", format!("expected a number or a list, got {other}"))),
        }
    }

    /// The scalar value, if this constant is one.
    pub fn scalar(&self) -> Option<f64> {
        match self.value {
            ConstantValue::Scalar(v) => Some(v),
            ConstantValue::Array(_) => None,
        }
    }
}

fn json_number(value: &Value, arg: &str) -> Result<f64> {
    match value {
        Value::Number(n) => n.as_f64().ok_or_else(|| arg_error("constant", arg, "number out of range")),
        Value::String(s) => {
            s.trim().parse().map_err(|_| arg_error("constant", arg, format!("`{s}` is not a number")))
        }
        other => Err(arg_error("constant", arg, format!("expected a number, got {other}"))),
    }
}

/// The shape of rectangular nested lists, pushing their numbers to `out`.
fn nested_shape(value: &Value, out: &mut Vec<f64>) -> Result<Vec<usize>> {
    match value {
        Value::Array(items) => {
            let mut inner: Option<Vec<usize>> = None;
            for item in items {
                let shape = nested_shape(item, out)?;
                match &inner {
                    None => inner = Some(shape),
                    Some(s) if *s == shape => {}
                    Some(s) => {
                        return Err(arg_error(
                            "constant",
                            "value",
                            format!("ragged nested list: sub-lists of shapes {s:?} and {shape:?}"),
                        ))
                    }
                }
            }
            let mut shape = vec![items.len()];
            shape.extend(inner.unwrap_or_default());
            Ok(shape)
        }
        other => {
            out.push(json_number(other, "value")?);
            Ok(Vec::new())
        }
    }
}

/// Nested JSON lists holding `values` of `shape`.
fn nested_value(values: &[f64], shape: &[usize]) -> Value {
    match shape.split_first() {
        None => num(values.first().copied().unwrap_or(0.0)),
        Some((&n, rest)) => {
            let step: usize = rest.iter().product();
            Value::Array((0..n).map(|i| nested_value(&values[i * step..(i + 1) * step], rest)).collect())
        }
    }
}

impl Initializer for Constant {
    fn name(&self) -> &str {
        "constant"
    }
    fn kwargs(&self) -> Result<Vec<(String, Value)>> {
        let value = match &self.value {
            ConstantValue::Scalar(v) => num(*v),
            ConstantValue::Array(a) => nested_value(&a.to_vec::<f64>()?, a.shape()),
        };
        Ok(vec![("value".into(), value)])
    }
    fn init_weight(&self, desc: &InitDesc, arr: &NDArray) -> Result<()> {
        match &self.value {
            ConstantValue::Scalar(v) => arr.fill(*v),
            ConstantValue::Array(src) => assign_broadcast(arr, src).map_err(|e| {
                Error::Shape(format!(
                    "initializer `constant` for `{}`: a value of shape {:?} cannot fill shape {:?} ({e})",
                    desc.name,
                    src.shape(),
                    arr.shape()
                ))
            }),
        }
    }
}

/// Uniform draws from `[-scale, scale]` (MXNet's `Uniform`, default scale 0.07).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Uniform {
    /// The bound of the range.
    pub scale: f64,
}

impl Uniform {
    /// Draws from `[-scale, scale]`.
    pub fn new(scale: f64) -> Uniform {
        Uniform { scale }
    }
}

impl Default for Uniform {
    fn default() -> Uniform {
        Uniform::new(0.07)
    }
}

impl Initializer for Uniform {
    fn name(&self) -> &str {
        "uniform"
    }
    fn kwargs(&self) -> Result<Vec<(String, Value)>> {
        Ok(vec![("scale".into(), num(self.scale))])
    }
    fn init_weight(&self, _desc: &InitDesc, arr: &NDArray) -> Result<()> {
        if !(self.scale >= 0.0 && self.scale.is_finite()) {
            return Err(arg_error(
                "uniform",
                "scale",
                format!("must be finite and non-negative, got {}", self.scale),
            ));
        }
        fill_values(arr, uniform_draws(arr.size(), -self.scale, self.scale))
    }
}

/// Normal draws with mean 0 and deviation `sigma` (MXNet's `Normal`,
/// default sigma 0.01).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Normal {
    /// The standard deviation.
    pub sigma: f64,
}

impl Normal {
    /// Draws from N(0, sigma²).
    pub fn new(sigma: f64) -> Normal {
        Normal { sigma }
    }
}

impl Default for Normal {
    fn default() -> Normal {
        Normal::new(0.01)
    }
}

impl Initializer for Normal {
    fn name(&self) -> &str {
        "normal"
    }
    fn kwargs(&self) -> Result<Vec<(String, Value)>> {
        Ok(vec![("sigma".into(), num(self.sigma))])
    }
    fn init_weight(&self, _desc: &InitDesc, arr: &NDArray) -> Result<()> {
        if !(self.sigma >= 0.0 && self.sigma.is_finite()) {
            return Err(arg_error(
                "normal",
                "sigma",
                format!("must be finite and non-negative, got {}", self.sigma),
            ));
        }
        fill_values(arr, normal_draws(arr.size(), 0.0, self.sigma))
    }
}

/// An LSTM cell's biases: zeros, except the forget gate's (the second of the
/// four gate blocks along axis 0), which get `forget_bias` (MXNet's
/// `LSTMBias`, default 1.0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LSTMBias {
    /// The forget gate's bias.
    pub forget_bias: f64,
}

impl LSTMBias {
    /// Forget-gate bias `forget_bias`, all else zero.
    pub fn new(forget_bias: f64) -> LSTMBias {
        LSTMBias { forget_bias }
    }
}

impl Default for LSTMBias {
    fn default() -> LSTMBias {
        LSTMBias::new(1.0)
    }
}

impl Initializer for LSTMBias {
    fn name(&self) -> &str {
        "lstmbias"
    }
    fn kwargs(&self) -> Result<Vec<(String, Value)>> {
        Ok(vec![("forget_bias".into(), num(self.forget_bias))])
    }
    fn init_weight(&self, desc: &InitDesc, arr: &NDArray) -> Result<()> {
        let Some(&rows) = arr.shape().first() else {
            return Err(Error::Shape(format!(
                "initializer `lstmbias` for `{}`: needs at least one axis, got a scalar",
                desc.name
            )));
        };
        let per_row = arr.size().checked_div(rows).unwrap_or(0);
        let hidden = rows / 4;
        let mut values = vec![0.0; arr.size()];
        values[hidden * per_row..2 * hidden * per_row].fill(self.forget_bias);
        fill_values(arr, values)
    }
}
