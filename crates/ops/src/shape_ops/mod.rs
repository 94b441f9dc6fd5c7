//! Built-in operators that move data without arithmetic: reshaping,
//! transposing, joining, splitting, slicing, tiling, broadcasting and
//! casting (gathering by index is [`indexing`](crate::indexing)).
//!
//! Most kernels build a zero-copy view of the input (see
//! [`NDArray::reshape`], [`NDArray::transpose`], [`NDArray::slice`],
//! [`NDArray::broadcast_to`]) and copy it into the output once. Gradients are
//! rules composed of operators, so higher-order gradients work; the
//! scattering gradient of `slice` uses the hidden helper `_backward_slice`,
//! which is differentiable in turn.

mod join;
mod reshape;

pub(crate) use reshape::lhs_dtype;
mod amp_cast;
mod broadcast_axis;
mod crop;
mod depth_to_space;
mod diag;
mod pad;
mod reverse;
mod shape_array;
mod slice;
mod slice_assign;
mod slice_like;
mod split_v2;
mod tile;

use oxnet_core::shape::{broadcast_strides, Shape};
use oxnet_core::strided::for_each_offsets;
use oxnet_core::{AttrValue, Element, Error, NDArray, Req, Result};

/// Registers this module's operators.
pub(crate) fn register() {
    reshape::register();
    join::register();
    slice::register();
    slice_assign::register();
    slice_like::register();
    reverse::register();
    shape_array::register();
    broadcast_axis::register();
    pad::register();
    split_v2::register();
    tile::register();
    depth_to_space::register();
    diag::register();
    amp_cast::register();
    crop::register();
}

/// Fills an inferred shape slot, or checks it against what it already holds.
pub(crate) fn set_shape(slot: &mut Option<Shape>, shape: Shape, what: &str) -> Result<()> {
    match slot {
        Some(have) if *have != shape => Err(Error::Shape(format!(
            "{what} must have shape {:?}, got {:?}",
            shape.as_slice(),
            have.as_slice()
        ))),
        _ => {
            *slot = Some(shape);
            Ok(())
        }
    }
}

/// Errors when an array of `shape` would have more elements than memory can
/// address (user-given shapes are checked before anything multiplies them).
pub(crate) fn check_size(shape: &[usize], what: &str) -> Result<()> {
    shape
        .iter()
        .try_fold(1usize, |acc, d| acc.checked_mul(*d))
        .filter(|n| n.checked_mul(8).is_some())
        .map(|_| ())
        .ok_or_else(|| Error::Shape(format!("{what}: shape {shape:?} is too large")))
}

/// Stores the array `src` (any layout, same shape) into the contiguous
/// kernel output `dst` under `req`, without a detour through `f64` when the
/// dtypes agree.
pub(super) fn store_view(req: Req, dst: &NDArray, src: &NDArray) -> Result<()> {
    if req == Req::Null {
        return Ok(());
    }
    if dst.dtype() != src.dtype()
        || dst.shape() != src.shape()
        || !dst.is_contiguous()
        || dst.shares_storage(src)
    {
        return store_into_view(req, dst, src);
    }
    oxnet_core::with_dtype!(dst.dtype(), T => {
        let d = dst.as_mut_slice::<T>()?;
        if src.is_contiguous() {
            oxnet_core::store::store_slice(req, d, src.as_slice::<T>()?);
        } else {
            copy_strided::<T>(req, d, src)?;
        }
    });
    Ok(())
}

/// Copies a strided `src` of `T` into the dense slice `dst` in row-major order.
fn copy_strided<T: Element>(req: Req, dst: &mut [T], src: &NDArray) -> Result<()> {
    if dst.len() != src.size() {
        return Err(Error::Shape(format!("cannot store {} elements into {}", src.size(), dst.len())));
    }
    let p = src.data_ptr::<T>()? as *const T;
    let mut it = dst.iter_mut();
    let add = req == Req::Add;
    for_each_offsets(src.shape(), [src.strides()], [0], |[o]| {
        if let Some(d) = it.next() {
            // SAFETY: the offsets of a view stay inside its storage.
            let v = unsafe { *p.offset(o) };
            *d = if add { d.add(v) } else { v };
        }
    });
    Ok(())
}

/// Stores `src` into `dst` under `req`, where `dst` may itself be a strided
/// view of a kernel output (broadcasting and converting `src` as
/// [`NDArray::assign_from`] does).
pub(super) fn store_into_view(req: Req, dst: &NDArray, src: &NDArray) -> Result<()> {
    match req {
        Req::Null => Ok(()),
        Req::Write | Req::Inplace => dst.assign_from(src),
        Req::Add => {
            let src = if src.dtype() != dst.dtype() || src.shares_storage(dst) {
                src.astype(dst.dtype())?
            } else {
                src.clone()
            };
            let ss = broadcast_strides(src.shape(), src.strides(), dst.shape()).map_err(|_| {
                Error::Shape(format!(
                    "cannot add an array of shape {:?} into one of shape {:?}",
                    src.shape(),
                    dst.shape()
                ))
            })?;
            dst.check_writable()?;
            oxnet_core::with_dtype!(dst.dtype(), T => {
                let dp = dst.data_ptr::<T>()?;
                let sp = src.data_ptr::<T>()? as *const T;
                for_each_offsets(dst.shape(), [dst.strides(), &ss], [0, 0], |[o, i]| {
                    // SAFETY: offsets stay inside both views; they do not share storage.
                    unsafe { *dp.offset(o) = (*dp.offset(o)).add(*sp.offset(i)) };
                });
            });
            Ok(())
        }
    }
}

/// `shape` as an attribute value.
pub(crate) fn ints_attr(shape: &[usize]) -> AttrValue {
    AttrValue::Ints(shape.iter().map(|d| *d as i64).collect())
}

/// Reshapes a gradient to `shape` through the `reshape` operator (so that
/// the result stays differentiable).
pub(super) fn reshape_grad(g: &NDArray, shape: &[usize]) -> Result<NDArray> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    if shape.contains(&0) {
        // no elements: nothing flows, and code 0 would mean "copy" to reshape
        return NDArray::zeros(shape, g.dtype(), g.device());
    }
    crate::util::call("reshape", &[g], &[("shape", ints_attr(shape))])
}

/// Sums `g` over `axes` (keeping them as length-1 axes) through the `sum`
/// operator, then reshapes to `shape`.
pub(super) fn sum_to(g: &NDArray, axes: &[usize], shape: &[usize]) -> Result<NDArray> {
    if oxnet_core::shape::numel(shape) == 0 {
        return NDArray::zeros(shape, g.dtype(), g.device());
    }
    let summed = if axes.is_empty() {
        g.clone()
    } else {
        let axes: Vec<i64> = axes.iter().map(|a| *a as i64).collect();
        crate::util::call(
            "sum",
            &[g],
            &[("axis", AttrValue::Ints(axes)), ("keepdims", AttrValue::Bool(true))],
        )?
    };
    reshape_grad(&summed, shape)
}

#[cfg(test)]
pub(crate) mod testutil {
    use oxnet_core::autograd::{self, BackwardOptions};
    use oxnet_core::{AttrValue, DType, NDArray, Req};

    /// 0, 1, 2, ... as float64 with `shape`.
    pub fn iota(shape: &[usize]) -> NDArray {
        let n: usize = shape.iter().product();
        NDArray::from_vec((0..n).map(|i| i as f64).collect::<Vec<f64>>(), shape).unwrap()
    }

    /// Distinct, non-integral float64 values with `shape`.
    pub fn sample(shape: &[usize]) -> NDArray {
        let n: usize = shape.iter().product();
        NDArray::from_vec((0..n).map(|i| 0.25 + i as f64 * 0.5 - (i % 3) as f64).collect::<Vec<f64>>(), shape)
            .unwrap()
    }

    /// The values of `x` as f64.
    pub fn vals(x: &NDArray) -> Vec<f64> {
        x.to_vec::<f64>().unwrap()
    }

    /// `x` converted to `dtype`.
    pub fn cast(x: &NDArray, dtype: DType) -> NDArray {
        x.astype(dtype).unwrap()
    }

    /// Checks the second-order path of an operator affine in x = `inputs[0]`
    /// (the other inputs are constants), y = A x + b: the gradient A^T v,
    /// recorded with `create_graph`, differentiated with respect to v along
    /// w must give A w = op(w) - op(0).
    pub fn check_second_order(op: &str, inputs: &[NDArray], attrs: &[(&str, AttrValue)]) {
        let x = inputs[0].copy().unwrap();
        x.attach_grad(Req::Write).unwrap();
        let mut args: Vec<&NDArray> = vec![&x];
        args.extend(inputs[1..].iter());
        let y = {
            let _r = autograd::record();
            oxnet_core::invoke1(op, &args, attrs).unwrap()
        };
        let v = sample(y.shape());
        v.attach_grad(Req::Write).unwrap();
        let opts = BackwardOptions { create_graph: true, retain_graph: true, ..Default::default() };
        let gx = autograd::grad(&[&y], &[&x], &[Some(&v)], opts).unwrap().remove(0);
        assert_eq!(gx.shape(), x.shape());
        let w = sample(x.shape());
        autograd::backward(&[&gx], &[Some(&w)], BackwardOptions::default()).unwrap();
        let mut wargs: Vec<&NDArray> = vec![&w];
        wargs.extend(inputs[1..].iter());
        let at_w = vals(&oxnet_core::invoke1(op, &wargs, attrs).unwrap());
        let zeros = NDArray::zeros_like(&w).unwrap();
        wargs[0] = &zeros;
        let at_0 = vals(&oxnet_core::invoke1(op, &wargs, attrs).unwrap());
        let want: Vec<f64> = at_w.iter().zip(&at_0).map(|(a, b)| a - b).collect();
        oxnet_core::check::compare(
            op,
            "second-order gradient",
            &vals(&v.grad().unwrap()),
            &want,
            1e-12,
            1e-12,
        )
        .unwrap();
    }

    /// The message of an error result, with its whole chain.
    pub fn err_msg<T: std::fmt::Debug>(r: oxnet_core::Result<T>) -> String {
        r.expect_err("expected an error").to_string()
    }
}
