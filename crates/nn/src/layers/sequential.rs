//! [`Sequential`]: blocks run one after the other.

use crate::block::{in_block, Block};
use crate::naming::{unique_prefix, with_name_scope};
use oxnet_core::{NDArray, Result};

/// Blocks run in order, each one's outputs the next one's inputs
/// (Gluon's `nn.Sequential`; hybridize it with [`Block::hybridize`] to get
/// `HybridSequential`'s behaviour). Children are saved as `0.weight`,
/// `1.bias`, ...
///
/// ```
/// use oxnet_nn::block::Block;
/// use oxnet_nn::layers::{Dense, Sequential};
///
/// let mut net = Sequential::new();
/// // layers made in the name scope get the sequence's prefix
/// net.name_scope(|net| {
///     net.add(Dense::new(4));
/// });
/// net.add(Dense::new(2));
/// let names = net.collect_params().unwrap();
/// let names = names.names();
/// assert!(names[0].starts_with(net.prefix()) && names[0].ends_with("dense0_weight"));
/// assert_eq!(net.len(), 2);
/// ```
pub struct Sequential {
    prefix: String,
    blocks: Vec<Box<dyn Block>>,
}

impl Sequential {
    /// An empty sequence named `sequential<k>_`.
    pub fn new() -> Sequential {
        Sequential { prefix: unique_prefix("sequential"), blocks: Vec::new() }
    }

    /// Appends a block.
    pub fn add(&mut self, block: impl Block + 'static) -> &mut Sequential {
        self.blocks.push(Box::new(block));
        self
    }

    /// Appends a boxed block.
    pub fn add_boxed(&mut self, block: Box<dyn Block>) -> &mut Sequential {
        self.blocks.push(block);
        self
    }

    /// Runs `f` with blocks created inside it named under this sequence's
    /// prefix (MXNet's `with net.name_scope():`).
    pub fn name_scope<R>(&mut self, f: impl FnOnce(&mut Sequential) -> R) -> R {
        let prefix = self.prefix.clone();
        with_name_scope(&prefix, || f(self))
    }

    /// The number of blocks.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// True without blocks.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// The block at `index`.
    pub fn get(&self, index: usize) -> Option<&dyn Block> {
        self.blocks.get(index).map(|b| b.as_ref())
    }
}

impl Default for Sequential {
    fn default() -> Sequential {
        Sequential::new()
    }
}

impl Block for Sequential {
    fn prefix(&self) -> &str {
        &self.prefix
    }

    fn children(&self) -> Vec<(String, &dyn Block)> {
        self.blocks.iter().enumerate().map(|(i, b)| (i.to_string(), b.as_ref())).collect()
    }

    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        let mut xs = inputs.to_vec();
        for b in &self.blocks {
            xs = b.forward(&xs).map_err(|e| in_block(e, self.name(), "Sequential"))?;
        }
        Ok(xs)
    }
}
