//! Initializers: how a parameter's array gets its first values.
//!
//! An [`Initializer`] fills an existing array in place. Which of its methods
//! runs depends on the parameter's name, as in MXNet 1.x ([`dispatch`]):
//! names ending in `weight` get [`Initializer::init_weight`], `bias`/`beta`/
//! `min` get zeros, `gamma`/`max` get ones, and an `__init__` attribute on the
//! parameter (an initializer's JSON, as [`Initializer::to_json`] writes it)
//! overrides all of that. Names with no rule are an error.
//!
//! The built-ins are [`Zero`], [`One`], [`Constant`], [`Uniform`],
//! [`Normal`], [`Xavier`], [`MSRAPrelu`], [`Orthogonal`], [`Bilinear`],
//! [`LSTMBias`], [`Mixed`] and [`Load`]. Random draws come from oxnet's global
//! generator ([`oxnet_core::random`]), so `random::seed` makes them
//! reproducible.
//!
//! Initializers serialise to MXNet's `dumps()` form,
//! `["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 3}]`,
//! and [`from_json`] reads that form back, as well as bare names (`"zeros"`,
//! `"Xavier"`) and the `{"initializer": "xavier", ...}` form.

mod basic;
mod bilinear;
mod compose;
mod fill;
mod json;
mod orthogonal;
mod xavier;

pub use basic::{Constant, LSTMBias, Normal, One, Uniform, Zero};
pub use bilinear::Bilinear;
pub use compose::{Load, Mixed};
pub use json::{from_json, from_value, register, registered_names, Args, Factory};
pub use orthogonal::{OrthoRandType, Orthogonal};
pub use xavier::{fans, FactorType, MSRAPrelu, RandType, Xavier};

use oxnet_core::{Error, NDArray, Result};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// The attribute that names a parameter's own initializer (MXNet's
/// `__init__`), overriding the name-based rules of [`dispatch`].
pub const INIT_ATTR: &str = "__init__";

/// What an initializer knows about the array it fills (MXNet's `InitDesc`):
/// the parameter's name and its attributes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InitDesc {
    /// The parameter's name, such as `dense0_weight`.
    pub name: String,
    /// The parameter's attributes (`__init__`, `__lr_mult__`, ...).
    pub attrs: BTreeMap<String, String>,
}

impl InitDesc {
    /// A descriptor with a name and no attributes.
    pub fn new(name: impl Into<String>) -> InitDesc {
        InitDesc { name: name.into(), attrs: BTreeMap::new() }
    }

    /// A descriptor with a name and attributes.
    pub fn with_attrs(name: impl Into<String>, attrs: BTreeMap<String, String>) -> InitDesc {
        InitDesc { name: name.into(), attrs }
    }

    /// A descriptor whose `__init__` attribute holds `init`'s JSON, so that
    /// [`dispatch`] fills it with `init.init_weight` whatever its name.
    pub fn with_init(name: impl Into<String>, init: &dyn Initializer) -> Result<InitDesc> {
        let mut desc = InitDesc::new(name);
        desc.attrs.insert(INIT_ATTR.to_string(), init.to_json()?);
        Ok(desc)
    }

    /// The `__init__` attribute, when present and not empty.
    pub fn init_attr(&self) -> Option<&str> {
        self.attrs.get(INIT_ATTR).map(String::as_str).filter(|s| !s.is_empty())
    }
}

impl fmt::Display for InitDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// An initializer: fills arrays in place, chosen by parameter name.
///
/// Implementors write [`Initializer::init_weight`] (and may override the
/// other `init_*` methods, whose defaults are MXNet's); [`Initializer::init`]
/// picks the method from the descriptor ([`dispatch`]).
pub trait Initializer: Send + Sync + fmt::Debug {
    /// The name this initializer serialises under (lower case, `"xavier"`).
    fn name(&self) -> &str;

    /// The constructor arguments, in order, as [`Initializer::to_json`]
    /// writes them (MXNet's `_kwargs`).
    fn kwargs(&self) -> Result<Vec<(String, Value)>>;

    /// Fills a weight (and whatever an `__init__` attribute names).
    fn init_weight(&self, desc: &InitDesc, arr: &NDArray) -> Result<()>;

    /// Fills a bias: zeros.
    fn init_bias(&self, _desc: &InitDesc, arr: &NDArray) -> Result<()> {
        arr.fill(0.0)
    }

    /// Fills a normalisation scale (`gamma`): ones.
    fn init_gamma(&self, _desc: &InitDesc, arr: &NDArray) -> Result<()> {
        arr.fill(1.0)
    }

    /// Fills a normalisation shift (`beta`): zeros.
    fn init_beta(&self, _desc: &InitDesc, arr: &NDArray) -> Result<()> {
        arr.fill(0.0)
    }

    /// Fills with zeros (`*min`, and running means by legacy name).
    fn init_zero(&self, _desc: &InitDesc, arr: &NDArray) -> Result<()> {
        arr.fill(0.0)
    }

    /// Fills with ones (`*max`, and running variances by legacy name).
    fn init_one(&self, _desc: &InitDesc, arr: &NDArray) -> Result<()> {
        arr.fill(1.0)
    }

    /// Fills a quantized weight: integers drawn uniformly from `[-127, 127)`.
    fn init_quantized_weight(&self, _desc: &InitDesc, arr: &NDArray) -> Result<()> {
        let draws = fill::uniform_draws(arr.size(), -127.0, 127.0);
        fill::fill_values(arr, draws.into_iter().map(f64::floor).collect())
    }

    /// Fills a quantized bias: zeros.
    fn init_quantized_bias(&self, _desc: &InitDesc, arr: &NDArray) -> Result<()> {
        arr.fill(0.0)
    }

    /// Fills an upsampling kernel (legacy names starting with `upsampling`).
    fn init_bilinear(&self, desc: &InitDesc, arr: &NDArray) -> Result<()> {
        Bilinear.init_weight(desc, arr)
    }

    /// Fills a spatial transformer's localisation bias with the identity
    /// transform `[1, 0, 0, 0, 1, 0]` (legacy names `stn_loc*bias`).
    fn init_loc_bias(&self, desc: &InitDesc, arr: &NDArray) -> Result<()> {
        if arr.shape().first() != Some(&6) {
            return Err(Error::Shape(format!(
                "parameter `{}`: a localisation bias needs 6 rows, it has shape {:?}",
                desc.name,
                arr.shape()
            )));
        }
        Constant::from_values(vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0], vec![6])?.init_weight(desc, arr)
    }

    /// Fills a parameter whose name matches no rule: an error by default.
    fn init_default(&self, desc: &InitDesc, _arr: &NDArray) -> Result<()> {
        Err(Error::Invalid(format!(
            "unknown initialization pattern for `{}`: without an explicit initializer only names \
             ending in weight, bias (0.0), gamma (1.0), beta (0.0), min (0.0) and max (1.0) can be \
             initialized; give the parameter its own initializer (init=...)",
            desc.name
        )))
    }

    /// Fills `arr` by the rules of [`dispatch`] (MXNet's `__call__` with an
    /// `InitDesc`).
    fn init(&self, desc: &InitDesc, arr: &NDArray) -> Result<()> {
        dispatch(self, desc, arr)
    }

    /// Fills `arr` by the older rules MXNet applies to a bare name
    /// ([`dispatch_legacy`]).
    fn init_legacy(&self, name: &str, arr: &NDArray) -> Result<()> {
        dispatch_legacy(self, name, arr)
    }

    /// MXNet's `dumps()`: `["name", {kwargs}]`.
    fn to_json(&self) -> Result<String> {
        Ok(json::dumps(self.name(), &self.kwargs()?))
    }
}

/// Fills `arr` for the parameter `desc` with `init`, by MXNet 1.x's rules
/// for a descriptor:
///
/// 1. a non-empty `__init__` attribute: the initializer it names (parsed by
///    [`from_json`]) fills the array with its `init_weight`;
/// 2. otherwise by the name's ending, first match wins: `weight` →
///    `init_weight`, `bias` → `init_bias`, `gamma` → `init_gamma`, `beta` →
///    `init_beta`, `min` → `init_zero`, `max` → `init_one`,
///    `weight_quantize` → `init_quantized_weight`, `bias_quantize` →
///    `init_quantized_bias`, anything else → `init_default` (an error).
///
/// Running statistics (`running_mean`, `moving_var`) have no rule here:
/// the layers that own them name their initializer in `__init__`.
pub fn dispatch<I: Initializer + ?Sized>(init: &I, desc: &InitDesc, arr: &NDArray) -> Result<()> {
    if let Some(spec) = desc.init_attr() {
        return from_json(spec)?.init_weight(desc, arr);
    }
    let n = desc.name.as_str();
    if n.ends_with("weight") {
        init.init_weight(desc, arr)
    } else if n.ends_with("bias") {
        init.init_bias(desc, arr)
    } else if n.ends_with("gamma") {
        init.init_gamma(desc, arr)
    } else if n.ends_with("beta") {
        init.init_beta(desc, arr)
    } else if n.ends_with("min") {
        init.init_zero(desc, arr)
    } else if n.ends_with("max") {
        init.init_one(desc, arr)
    } else if n.ends_with("weight_quantize") {
        init.init_quantized_weight(desc, arr)
    } else if n.ends_with("bias_quantize") {
        init.init_quantized_bias(desc, arr)
    } else {
        init.init_default(desc, arr)
    }
}

/// Fills `arr` for a parameter known only by `name`, by the rules MXNet 1.x
/// applies when its initializer is called with a plain string, first match
/// wins: prefix `upsampling` → `init_bilinear`; `stn_loc…weight` → zeros;
/// `stn_loc…bias` → `init_loc_bias`; then endings `bias`, `gamma`, `beta`,
/// `weight` as in [`dispatch`]; `moving_mean`, `moving_inv_var`,
/// `moving_avg`, `min` → zeros; `moving_var`, `max` → ones; anything else →
/// `init_default`.
pub fn dispatch_legacy<I: Initializer + ?Sized>(init: &I, name: &str, arr: &NDArray) -> Result<()> {
    let desc = InitDesc::new(name);
    let d = &desc;
    if name.starts_with("upsampling") {
        init.init_bilinear(d, arr)
    } else if name.starts_with("stn_loc") && name.ends_with("weight") {
        init.init_zero(d, arr)
    } else if name.starts_with("stn_loc") && name.ends_with("bias") {
        init.init_loc_bias(d, arr)
    } else if name.ends_with("bias") {
        init.init_bias(d, arr)
    } else if name.ends_with("gamma") {
        init.init_gamma(d, arr)
    } else if name.ends_with("beta") {
        init.init_beta(d, arr)
    } else if name.ends_with("weight") {
        init.init_weight(d, arr)
    } else if name.ends_with("moving_mean") {
        init.init_zero(d, arr)
    } else if name.ends_with("moving_var") {
        init.init_one(d, arr)
    } else if name.ends_with("moving_inv_var") || name.ends_with("moving_avg") || name.ends_with("min") {
        init.init_zero(d, arr)
    } else if name.ends_with("max") {
        init.init_one(d, arr)
    } else {
        init.init_default(d, arr)
    }
}
