//! Orthogonal initialization (Saxe et al., "Exact solutions to the nonlinear
//! dynamics of learning in deep linear neural networks").

use super::fill::{arg_error, fill_values, normal_draws, uniform_draws};
use super::json::num;
use super::{InitDesc, Initializer};
use oxnet_core::{Error, NDArray, Result};
use serde_json::Value;
use std::fmt;

/// Which distribution [`Orthogonal`] orthonormalises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrthoRandType {
    /// Uniform on `[-1, 1]`.
    Uniform,
    /// Standard normal.
    Normal,
}

impl OrthoRandType {
    /// Parses MXNet's `rand_type` (`"uniform"` or `"normal"`).
    pub fn parse(s: &str) -> Result<OrthoRandType> {
        match s {
            "uniform" => Ok(OrthoRandType::Uniform),
            "normal" => Ok(OrthoRandType::Normal),
            other => Err(arg_error(
                "orthogonal",
                "rand_type",
                format!("unknown random type `{other}` (uniform or normal)"),
            )),
        }
    }
}

impl fmt::Display for OrthoRandType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OrthoRandType::Uniform => "uniform",
            OrthoRandType::Normal => "normal",
        })
    }
}

/// A scaled (semi-)orthogonal matrix: the weight, seen as `rows = shape[0]`
/// by `cols = product of the other axes`, has orthonormal rows when
/// `rows <= cols` and orthonormal columns otherwise, times `scale`. The basis
/// comes from random draws (MXNet's defaults: scale 1.414, uniform).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Orthogonal {
    /// The factor applied to the orthonormal matrix.
    pub scale: f64,
    /// The distribution the basis is drawn from.
    pub rand_type: OrthoRandType,
}

impl Orthogonal {
    /// Orthogonal initialization with explicit settings.
    pub fn new(scale: f64, rand_type: OrthoRandType) -> Orthogonal {
        Orthogonal { scale, rand_type }
    }

    fn draw(&self, n: usize) -> Vec<f64> {
        match self.rand_type {
            OrthoRandType::Uniform => uniform_draws(n, -1.0, 1.0),
            OrthoRandType::Normal => normal_draws(n, 0.0, 1.0),
        }
    }

    /// `count` orthonormal vectors of length `len` (`count <= len`), each a
    /// random draw made orthogonal to the ones before it (Gram-Schmidt, run
    /// twice for accuracy; a draw that collapses is drawn again).
    fn orthonormal(&self, count: usize, len: usize) -> Result<Vec<Vec<f64>>> {
        let mut basis: Vec<Vec<f64>> = Vec::with_capacity(count);
        for _ in 0..count {
            let mut tries = 0;
            loop {
                let mut v = self.draw(len);
                let before = norm(&v);
                for _pass in 0..2 {
                    for q in &basis {
                        let d = dot(&v, q);
                        v.iter_mut().zip(q).for_each(|(x, y)| *x -= d * y);
                    }
                }
                let after = norm(&v);
                if after > 1e-6 * before && after > 0.0 {
                    v.iter_mut().for_each(|x| *x /= after);
                    basis.push(v);
                    break;
                }
                tries += 1;
                if tries > 16 {
                    return Err(Error::Invalid("orthogonal: random draws keep collapsing".into()));
                }
            }
        }
        Ok(basis)
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

impl Default for Orthogonal {
    fn default() -> Orthogonal {
        Orthogonal::new(1.414, OrthoRandType::Uniform)
    }
}

impl Initializer for Orthogonal {
    fn name(&self) -> &str {
        "orthogonal"
    }
    fn kwargs(&self) -> Result<Vec<(String, Value)>> {
        Ok(vec![
            ("scale".into(), num(self.scale)),
            ("rand_type".into(), Value::from(self.rand_type.to_string())),
        ])
    }
    fn init_weight(&self, desc: &InitDesc, arr: &NDArray) -> Result<()> {
        let Some(&rows) = arr.shape().first() else {
            return Err(Error::Shape(format!(
                "initializer `orthogonal` for `{}`: needs at least one axis, got a scalar",
                desc.name
            )));
        };
        if arr.size() == 0 {
            return Ok(());
        }
        let cols = arr.size() / rows;
        let mut values = vec![0.0; arr.size()];
        if rows <= cols {
            for (r, v) in self.orthonormal(rows, cols)?.iter().enumerate() {
                for (c, x) in v.iter().enumerate() {
                    values[r * cols + c] = self.scale * x;
                }
            }
        } else {
            for (c, v) in self.orthonormal(cols, rows)?.iter().enumerate() {
                for (r, x) in v.iter().enumerate() {
                    values[r * cols + c] = self.scale * x;
                }
            }
        }
        fill_values(arr, values)
    }
}
