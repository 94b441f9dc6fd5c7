//! The [`CustomOp`] and [`CustomOpProp`] traits.

use crate::{DType, Device, Error, NDArray, Req, Result, Shape};
use std::sync::Arc;

/// Stores `src` into `dst` as `req` says: `null` skips, `write`/`inplace`
/// overwrite, `add` accumulates (the seeds' `self.assign`).
pub fn assign(dst: &NDArray, req: Req, src: &NDArray) -> Result<()> {
    crate::store::store(req, dst, src)
}

/// The computation of a custom operator.
///
/// `in_data` are the engine's input buffers, read-only for the call, `out_data`
/// and `in_grad` the engine's output buffers (no copies); use
/// [`NDArray::as_slice`], [`NDArray::as_mut_slice`], [`NDArray::view`] for
/// `ndarray` views, or call operators. Operators called here are not
/// recorded by autograd.
pub trait CustomOp: Send + Sync {
    /// Computes the outputs.
    fn forward(
        &self,
        is_train: bool,
        req: &[Req],
        in_data: &[NDArray],
        out_data: &[NDArray],
        aux: &[NDArray],
    ) -> Result<()>;

    /// Computes the input gradients. The default says the operator has no backward.
    fn backward(
        &self,
        req: &[Req],
        out_grad: &[NDArray],
        in_data: &[NDArray],
        out_data: &[NDArray],
        in_grad: &[NDArray],
        aux: &[NDArray],
    ) -> Result<()> {
        let _ = (req, out_grad, in_data, out_data, in_grad, aux);
        Err(Error::custom_msg("this custom operator does not implement backward"))
    }

    /// What the profiler calls this operator's own code: events are named
    /// `<op_type>::<label>` (MXNet's Python operators are `pure_python`).
    fn profiler_label(&self) -> &str {
        "native"
    }
}

/// One array a backward pass may depend on (see
/// [`CustomOpProp::declare_backward_dependency`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dependency {
    /// The gradient of output `i`.
    OutGrad(usize),
    /// Input `i`.
    InData(usize),
    /// Output `i`.
    OutData(usize),
}

/// The description of a custom operator, with the reference's defaults.
pub trait CustomOpProp: Send + Sync {
    /// Whether backward reads the output gradients (default true).
    fn need_top_grad(&self) -> bool {
        true
    }

    /// Argument names (default `["data"]`).
    fn list_arguments(&self) -> Vec<String> {
        vec!["data".into()]
    }

    /// Output names (default `["output"]`).
    fn list_outputs(&self) -> Vec<String> {
        vec!["output".into()]
    }

    /// Auxiliary-state names (default none).
    fn list_auxiliary_states(&self) -> Vec<String> {
        Vec::new()
    }

    /// Shapes of (arguments, outputs, aux states) from the argument shapes.
    /// The returned argument shapes may refine the given ones. Default:
    /// everything takes the first argument's shape.
    fn infer_shape(&self, in_shapes: &[Shape]) -> Result<(Vec<Shape>, Vec<Shape>, Vec<Shape>)> {
        let first = in_shapes
            .first()
            .cloned()
            .ok_or_else(|| Error::Shape("the default infer_shape needs at least one argument".into()))?;
        Ok((
            in_shapes.to_vec(),
            vec![first.clone(); self.list_outputs().len()],
            vec![first; self.list_auxiliary_states().len()],
        ))
    }

    /// Dtypes of (arguments, outputs, aux states). Default: the first argument's dtype.
    fn infer_type(&self, in_types: &[DType]) -> Result<(Vec<DType>, Vec<DType>, Vec<DType>)> {
        let first = *in_types.first().unwrap_or(&DType::F32);
        Ok((
            vec![first; in_types.len()],
            vec![first; self.list_outputs().len()],
            vec![first; self.list_auxiliary_states().len()],
        ))
    }

    /// Which arrays backward reads. Default: the output gradients (if
    /// [`need_top_grad`](Self::need_top_grad)), all inputs and all outputs.
    fn declare_backward_dependency(
        &self,
        out_grad: &[Dependency],
        in_data: &[Dependency],
        out_data: &[Dependency],
    ) -> Vec<Dependency> {
        let mut deps = Vec::new();
        if self.need_top_grad() {
            deps.extend_from_slice(out_grad);
        }
        deps.extend_from_slice(in_data);
        deps.extend_from_slice(out_data);
        deps
    }

    /// Creates the operator for these input shapes and dtypes on `device`.
    /// oxnet calls this once per distinct (attributes, shapes, dtypes, device)
    /// and reuses the operator.
    fn create_operator(
        &self,
        device: Device,
        in_shapes: &[Shape],
        in_dtypes: &[DType],
    ) -> Result<Arc<dyn CustomOp>>;
}
