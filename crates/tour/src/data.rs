//! A generated classification data set: Gaussian blobs, one per class.

use oxnet_core::{DType, NDArray, Result};

/// `n` samples of `dim` features in `classes` blobs, with float labels.
pub fn blobs(n: usize, dim: usize, classes: usize, spread: f64) -> Result<(NDArray, NDArray)> {
    let centers = NDArray::random_uniform(-2.0, 2.0, &[classes, dim], DType::F64)?.to_vec::<f64>()?;
    let noise = NDArray::random_normal(0.0, spread, &[n, dim], DType::F64)?.to_vec::<f64>()?;
    let mut x = Vec::with_capacity(n * dim);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let c = i % classes;
        for d in 0..dim {
            x.push((centers[c * dim + d] + noise[i * dim + d]) as f32);
        }
        y.push(c as f32);
    }
    Ok((NDArray::from_vec(x, &[n, dim])?, NDArray::from_vec(y, &[n])?))
}
