//! [`Pool`]: max and average pooling over 1 to 3 spatial axes, windowed or
//! global (Gluon's `MaxPool1D/2D/3D`, `AvgPool1D/2D/3D`,
//! `GlobalMaxPool1D/2D/3D`, `GlobalAvgPool1D/2D/3D`).

use super::OpCall;
use crate::block::{in_block, single_input, Block};
use crate::naming::unique_prefix;
use oxnet_core::{AttrValue, Error, NDArray, Result};

/// Which reduction a [`Pool`] applies over each window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolType {
    /// The largest value.
    Max,
    /// The mean.
    Avg,
}

impl PoolType {
    fn as_str(self) -> &'static str {
        match self {
            PoolType::Max => "max",
            PoolType::Avg => "avg",
        }
    }
}

/// A pooling layer (`Pooling` on `NC<spatial>` data), prefix `pool<k>_`
/// as in MXNet's Gluon. Windowed pools take `pool_size` and, by default,
/// strides equal to it, no padding and floor rounding of the output size
/// (`ceil_mode` rounds up); global pools reduce each spatial axis to 1.
///
/// ```
/// use oxnet_core::NDArray;
/// use oxnet_nn::block::Block;
/// use oxnet_nn::layers::{Pool, PoolType};
///
/// let x = NDArray::from_vec((0..16).map(|v| v as f32).collect(), &[1, 1, 4, 4]).unwrap();
/// let max = Pool::new(PoolType::Max, &[2, 2]).unwrap();
/// assert_eq!(max.call(&x).unwrap().to_vec::<f32>().unwrap(), vec![5.0, 7.0, 13.0, 15.0]);
/// let mean = Pool::global(PoolType::Avg, 2).unwrap();
/// assert_eq!(mean.call(&x).unwrap().shape(), &[1, 1, 1, 1]);
/// ```
pub struct Pool {
    prefix: String,
    kind: String,
    call: OpCall,
}

fn ints(v: &[usize]) -> AttrValue {
    AttrValue::Ints(v.iter().map(|&d| d as i64).collect())
}

impl Pool {
    /// A windowed pool of `pool_size` (1 to 3 spatial axes), strides equal
    /// to the window, no padding, floor rounding.
    pub fn new(pool_type: PoolType, pool_size: &[usize]) -> Result<Pool> {
        Pool::with_options(pool_type, pool_size, pool_size, &vec![0; pool_size.len()], false, true)
    }

    /// A windowed pool with every option: `strides` and `padding` per
    /// spatial axis, `ceil_mode` (round the output size up: MXNet's `full`
    /// convention), and for average pools whether padded zeros count in
    /// the mean (`count_include_pad`, true in MXNet).
    pub fn with_options(
        pool_type: PoolType,
        pool_size: &[usize],
        strides: &[usize],
        padding: &[usize],
        ceil_mode: bool,
        count_include_pad: bool,
    ) -> Result<Pool> {
        let n = pool_size.len();
        let kind = format!("{}Pool{n}D", if pool_type == PoolType::Max { "Max" } else { "Avg" });
        if !(1..=3).contains(&n) || strides.len() != n || padding.len() != n {
            return Err(Error::attr(
                "pool_size",
                format!(
                    "{kind}: pool_size, strides and padding need one value per spatial axis (1 to 3), got {}, {} and {}",
                    n,
                    strides.len(),
                    padding.len()
                ),
            ));
        }
        let mut attrs = vec![
            ("kernel", ints(pool_size)),
            ("pool_type", pool_type.as_str().into()),
            ("stride", ints(strides)),
            ("pad", ints(padding)),
            ("pooling_convention", if ceil_mode { "full" } else { "valid" }.into()),
        ];
        if pool_type == PoolType::Avg {
            attrs.push(("count_include_pad", count_include_pad.into()));
        }
        let call = OpCall::new("Pooling", &attrs).map_err(|e| in_block(e, "pool", &kind))?;
        Ok(Pool { prefix: unique_prefix("pool"), kind, call })
    }

    /// A global pool over `spatial_axes` (1 to 3) axes: the output has
    /// extent 1 along each.
    pub fn global(pool_type: PoolType, spatial_axes: usize) -> Result<Pool> {
        let kind =
            format!("Global{}Pool{spatial_axes}D", if pool_type == PoolType::Max { "Max" } else { "Avg" });
        if !(1..=3).contains(&spatial_axes) {
            return Err(Error::attr(
                "spatial_axes",
                format!("{kind}: 1 to 3 spatial axes, got {spatial_axes}"),
            ));
        }
        let call = OpCall::new(
            "Pooling",
            &[
                ("kernel", ints(&vec![1; spatial_axes])),
                ("pool_type", pool_type.as_str().into()),
                ("global_pool", true.into()),
            ],
        )?;
        Ok(Pool { prefix: unique_prefix("pool"), kind, call })
    }
}

impl Block for Pool {
    fn prefix(&self) -> &str {
        &self.prefix
    }

    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        let x = single_input(inputs, self.name())?;
        self.call.call1(&[x]).map(|y| vec![y]).map_err(|e| in_block(e, self.name(), &self.kind))
    }
}
