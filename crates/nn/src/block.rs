//! The [`Block`] trait: a layer or a model, made of parameters and child
//! blocks, run imperatively by `forward` or as one cached graph once
//! hybridized ([`crate::hybrid::Hybridized`]).
//!
//! A block names its parameters with its prefix, as MXNet 1.x does:
//! `dense0_weight`, and `sequential0_dense0_weight` for a dense layer made
//! inside its parent's name scope ([`crate::naming`]).
//! [`Block::collect_params`] gathers them by those names;
//! [`Block::save_parameters`] writes them by structure (`0.weight`,
//! `1.bias`), as `save_parameters` does in Gluon.
//!
//! Implement `prefix`, `forward`, and `params`/`children` when the block
//! has any:
//!
//! ```
//! use oxnet_core::{invoke1, NDArray, Result};
//! use oxnet_nn::block::Block;
//! use oxnet_nn::naming::unique_prefix;
//! use oxnet_nn::parameter::Parameter;
//!
//! /// `y = x * scale`, with a learnt scale per feature.
//! struct Scale {
//!     prefix: String,
//!     scale: Parameter,
//! }
//!
//! impl Scale {
//!     fn new(features: usize) -> Scale {
//!         let prefix = unique_prefix("scale");
//!         let scale = Parameter::new(format!("{prefix}weight"), &[features]);
//!         Scale { prefix, scale }
//!     }
//! }
//!
//! impl Block for Scale {
//!     fn prefix(&self) -> &str {
//!         &self.prefix
//!     }
//!     fn params(&self) -> Vec<(String, Parameter)> {
//!         vec![("weight".into(), self.scale.clone())]
//!     }
//!     fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
//!         Ok(vec![invoke1("broadcast_mul", &[&inputs[0], &self.scale.data()?], &[])?])
//!     }
//! }
//!
//! let block = Scale::new(2);
//! block.initialize(&oxnet_nn::parameter::shared_init(oxnet_nn::init::One)).unwrap();
//! let x = NDArray::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
//! assert_eq!(block.call(&x).unwrap().to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
//! assert_eq!(block.collect_params().unwrap().names(), [format!("{}weight", block.prefix())]);
//! ```

use crate::collection::{load_checked, read_named, LoadOptions, ParameterCollection};
use crate::hybrid::Hybridized;
use crate::io::{self, ParamList};
use crate::parameter::{Parameter, SharedInit};
use oxnet_core::{Error, NDArray, Result};
use std::path::Path;

/// A layer or a model: parameters, child blocks and a forward computation.
pub trait Block: Send + Sync {
    /// The prefix of this block's parameter names, such as `dense0_`.
    fn prefix(&self) -> &str;

    /// Runs the block on `inputs` and returns its outputs. Operators called
    /// here are recorded by autograd, and traced when the block is
    /// hybridized, so write it with operator calls and
    /// [`Parameter::data`].
    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>>;

    /// This block's own parameters, by local name (`weight`, `bias`).
    fn params(&self) -> Vec<(String, Parameter)> {
        Vec::new()
    }

    /// The child blocks, by local name (`0`, `1` in a sequence).
    fn children(&self) -> Vec<(String, &dyn Block)> {
        Vec::new()
    }

    /// The prefix without its trailing underscore (`dense0`).
    fn name(&self) -> &str {
        let p = self.prefix();
        p.strip_suffix('_').unwrap_or(p)
    }

    /// Runs the block on one input and returns its one output.
    fn call(&self, x: &NDArray) -> Result<NDArray> {
        let mut outs = self.forward(std::slice::from_ref(x))?;
        if outs.len() != 1 {
            return Err(Error::Invalid(format!(
                "block `{}` returned {} outputs; use forward() for blocks with several",
                self.name(),
                outs.len()
            )));
        }
        Ok(outs.swap_remove(0))
    }

    /// Every parameter of this block and its descendants, by full name.
    fn collect_params(&self) -> Result<ParameterCollection> {
        let mut out = ParameterCollection::new();
        for (_, p) in self.params() {
            out.insert(p)?;
        }
        for (_, child) in self.children() {
            out.extend(&child.collect_params()?)?;
        }
        Ok(out)
    }

    /// The parameters matching the regular expression `pattern` (MXNet's
    /// `collect_params(select)`).
    fn collect_params_matching(&self, pattern: &str) -> Result<ParameterCollection> {
        self.collect_params()?.select(pattern)
    }

    /// Every parameter by structural name: local names joined with dots
    /// through the children (`0.weight`, `1.bias`), as files store them.
    fn collect_params_with_prefix(&self) -> Vec<(String, Parameter)> {
        let mut out: Vec<(String, Parameter)> = self.params();
        for (name, child) in self.children() {
            for (k, p) in child.collect_params_with_prefix() {
                out.push((format!("{name}.{k}"), p));
            }
        }
        out
    }

    /// Initialises every parameter (`init` serves those without their own
    /// initializer; shapes still unknown wait for the first call).
    fn initialize(&self, init: &SharedInit) -> Result<()> {
        self.collect_params()?.initialize(init)
    }

    /// Zeroes every parameter's gradient.
    fn zero_grad(&self) -> Result<()> {
        self.collect_params()?.zero_grad()
    }

    /// Saves the parameters by structural name in MXNet's `.params` format
    /// (a parameter shared by several blocks is saved under each name).
    fn save_parameters(&self, path: &Path) -> Result<()> {
        let mut named = Vec::new();
        for (k, p) in self.collect_params_with_prefix() {
            named.push((k, p.data()?.copy()?));
        }
        io::save(path, &ParamList::Named(named))
    }

    /// Loads parameters saved by [`Block::save_parameters`] (here or by
    /// MXNet's Gluon); every name must match both ways. A failed load leaves
    /// the parameters as they were.
    fn load_parameters(&self, path: &Path) -> Result<()> {
        self.load_parameters_with(path, LoadOptions::default())
    }

    /// [`Block::load_parameters`] with missing or extra names, or other
    /// dtypes, allowed by `options`. Files with full names and no structure
    /// (`dense0_weight`, as `ParameterCollection::save` writes) load too.
    fn load_parameters_with(&self, path: &Path, options: LoadOptions) -> Result<()> {
        let arrays = read_named(path)?;
        let targets = self.collect_params_with_prefix();
        if arrays.is_empty() && targets.is_empty() {
            return Ok(());
        }
        if !arrays.is_empty() && !arrays.iter().any(|(k, _)| k.contains('.')) {
            return self.collect_params()?.load(path, self.prefix(), options);
        }
        load_checked(&targets, &arrays, path, options)
    }

    /// This block, run as one cached graph traced from `forward`.
    fn hybridize(self) -> Hybridized<Self>
    where
        Self: Sized,
    {
        Hybridized::new(self)
    }
}

impl<B: Block + ?Sized> Block for Box<B> {
    fn prefix(&self) -> &str {
        (**self).prefix()
    }
    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        (**self).forward(inputs)
    }
    fn params(&self) -> Vec<(String, Parameter)> {
        (**self).params()
    }
    fn children(&self) -> Vec<(String, &dyn Block)> {
        (**self).children()
    }
}

/// The one input of a block that takes exactly one, or an error naming it.
pub fn single_input<'a>(inputs: &'a [NDArray], block: &str) -> Result<&'a NDArray> {
    match inputs {
        [x] => Ok(x),
        _ => Err(Error::Invalid(format!("block `{block}` takes one input, got {}", inputs.len()))),
    }
}

/// Wraps `e` so that it names block `name` of kind `kind`.
pub fn in_block(e: Error, name: &str, kind: &str) -> Error {
    e.in_node(name, kind)
}
