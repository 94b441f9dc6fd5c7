//! Bilinear interpolation kernels for upsampling (deconvolution) layers.

use super::fill::fill_values;
use super::{InitDesc, Initializer};
use oxnet_core::{Error, NDArray, Result};
use serde_json::Value;

/// Fills a `(out, in, height, width)` kernel with a bilinear interpolation
/// filter, as MXNet's `Bilinear`: with `f = ceil(width / 2)` and
/// `c = (2f - 1 - f mod 2) / 2f`, element `(.., y, x)` is
/// `(1 - |x/f - c|) (1 - |y/f - c|)`, rounded to f32 as MXNet computes it.
/// (MXNet uses `f` from the width for both axes; so does this.)
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bilinear;

impl Initializer for Bilinear {
    fn name(&self) -> &str {
        "bilinear"
    }
    fn kwargs(&self) -> Result<Vec<(String, Value)>> {
        Ok(Vec::new())
    }
    fn init_weight(&self, desc: &InitDesc, arr: &NDArray) -> Result<()> {
        let shape = arr.shape();
        if shape.len() < 4 {
            return Err(Error::Shape(format!(
                "initializer `bilinear` for `{}`: needs a 4-D kernel (out, in, height, width), got shape {shape:?}",
                desc.name
            )));
        }
        let (height, width) = (shape[2], shape[3]);
        let f = (width as f64 / 2.0).ceil();
        let c = (2.0 * f - 1.0 - f % 2.0) / (2.0 * f);
        let values = (0..arr.size())
            .map(|i| {
                let x = (i % width) as f64;
                let y = ((i / width) % height) as f64;
                let w = (1.0 - (x / f - c).abs()) * (1.0 - (y / f - c).abs());
                w as f32 as f64
            })
            .collect();
        fill_values(arr, values)
    }
}
