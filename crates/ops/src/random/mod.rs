//! Random sampling: MXNet's samplers and density operators.
//!
//! Every draw comes from oxnet's one global generator
//! ([`oxnet_core::random`]), so `random::seed(s)` (`mx.random.seed`) makes
//! whole runs reproducible, in imperative calls and in graphs alike.
//!
//! | file | operators |
//! |---|---|
//! | [`dists`] | the distributions themselves: parameter checks and draws |
//! | `scalar` | `_random_<dist>` (scalar parameters, a `shape`), `_random_<dist>_like`, `_random_randint` |
//! | `sample` | `_sample_<dist>`: one distribution per element of parameter arrays |
//! | `multinomial` | `_sample_multinomial` and its gradient for `get_prob` |
//! | `shuffle` | `_shuffle`: a random permutation along the first axis |
//! | `zipfian` | `_sample_unique_zipfian`: unique log-uniform classes |
//! | `pdf` | `_random_pdf_<dist>`: densities (or their logs) of samples, with gradients |

pub mod dists;
mod multinomial;
mod pdf;
mod pdf_maths;
mod sample;
mod scalar;
mod shuffle;
mod zipfian;

#[cfg(test)]
mod tests;

use oxnet_core::store::store_slice;
use oxnet_core::{AttrKind, AttrSpec, AttrValue, Attrs, DType, Error, NDArray, Req, Result, Shape};

/// Registers this module's operators.
pub(crate) fn register() {
    scalar::register();
    sample::register();
    multinomial::register();
    shuffle::register();
    zipfian::register();
    pdf::register();
}

/// The `dtype` attribute of a float sampler: `None` (float32 unless the
/// output's dtype is known otherwise) or a float type.
fn float_dtype_spec() -> AttrSpec {
    AttrSpec::optional(
        "dtype",
        AttrKind::DType,
        AttrValue::None,
        "Output dtype: float16, float32 or float64 (None: float32, or the dtype the graph expects).",
    )
}

/// The sampler's `dtype`, checked to be a float type (`None` when unset).
fn float_dtype(attrs: &Attrs) -> Result<Option<DType>> {
    match attrs.dtype("dtype")? {
        Some(dt @ (DType::F16 | DType::F32 | DType::F64)) => Ok(Some(dt)),
        Some(other) => Err(Error::attr("dtype", format!("must be float16, float32 or float64, got {other}"))),
        None => Ok(None),
    }
}

/// Output dtype inference of a sampler: the `dtype` attribute, else what
/// the output already holds, else `fallback`.
fn infer_out_dtype(outs: &mut [Option<DType>], given: Option<DType>, fallback: DType) -> Result<()> {
    match (given, outs[0]) {
        (Some(want), Some(have)) if want != have => {
            Err(Error::DType(format!("the output must have dtype {want}, got {have}")))
        }
        (Some(want), _) => {
            outs[0] = Some(want);
            Ok(())
        }
        (None, Some(_)) => Ok(()),
        (None, None) => {
            outs[0] = Some(fallback);
            Ok(())
        }
    }
}

/// The `shape` attribute as a shape (`None` when unset).
fn shape_attr(attrs: &Attrs) -> Result<Option<Shape>> {
    let Some(dims) = attrs.opt_ints("shape")? else { return Ok(None) };
    dims.iter()
        .map(|&d| usize::try_from(d).map_err(|_| Error::attr("shape", format!("extent {d} is negative"))))
        .collect::<Result<Shape>>()
        .map(Some)
}

/// Fills an inferred shape slot, or checks it against what it holds.
fn set_shape(slot: &mut Option<Shape>, shape: Shape, what: &str) -> Result<()> {
    crate::shape_ops::set_shape(slot, shape, what)
}

/// Stores `values` (computed in f64) into `out` under `req`.
fn store_f64(out: &NDArray, req: Req, values: &[f64]) -> Result<()> {
    if req == Req::Null {
        return Ok(());
    }
    oxnet_core::with_dtype!(out.dtype(), T => {
        let v: Vec<T> = values.iter().map(|&x| oxnet_core::Element::from_f64(x)).collect();
        store_slice(req, out.as_mut_slice::<T>()?, &v);
    });
    Ok(())
}

/// An array's values as f64.
fn values_f64(a: &NDArray) -> Result<Vec<f64>> {
    a.to_vec::<f64>()
}

/// Held by every test of this crate that seeds or draws from the global
/// generator: it is one per process and tests run on parallel threads, so
/// one test's draw could land between another's `seed` and its draws.
#[cfg(test)]
pub(crate) fn generator() -> std::sync::MutexGuard<'static, ()> {
    static GENERATOR: std::sync::Mutex<()> = std::sync::Mutex::new(());
    GENERATOR.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
