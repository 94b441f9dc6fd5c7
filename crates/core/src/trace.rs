//! Tracing: running imperative code to record a graph instead of computing.
//!
//! While a trace sink is installed on this thread ([`start`]), every
//! operator call made through the dispatcher runs only the operator's own
//! shape and dtype inference, hands the call to the sink, and returns
//! *traced* arrays: arrays with a shape and a dtype but no values
//! ([`NDArray::meta`]). No kernel runs. Reading a traced array's values is
//! an error. The graph layer installs a sink that turns the calls into
//! graph nodes, so code written once runs eagerly or as a graph, and
//! gradient rules (written with operators) trace into backward graphs.

use crate::attrs::Attrs;
use crate::registry::Op;
use crate::shape::numel;
use crate::storage::Storage;
use crate::{DType, Device, Error, NDArray, Result, Shape};
use std::cell::RefCell;
use std::sync::Arc;

/// Receives each operator call made while tracing: the operator, its
/// attributes, its inputs (traced or real arrays) and its traced outputs.
pub type TraceSink = Box<dyn FnMut(&Op, &Attrs, &[NDArray], &[NDArray]) -> Result<()>>;

thread_local! {
    static SINK: RefCell<Option<TraceSink>> = const { RefCell::new(None) };
}

/// Ends a trace when dropped, restoring the sink that was installed before.
pub struct TraceGuard {
    previous: Option<TraceSink>,
}

impl Drop for TraceGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        SINK.with(|s| *s.borrow_mut() = previous);
    }
}

/// Starts tracing on this thread: operator calls go to `sink` until the
/// guard drops. Traces nest (the inner one wins while it lasts).
pub fn start(sink: TraceSink) -> TraceGuard {
    let previous = SINK.with(|s| s.borrow_mut().replace(sink));
    TraceGuard { previous }
}

/// True while a trace is running on this thread.
#[inline]
pub fn is_tracing() -> bool {
    SINK.with(|s| s.borrow().is_some())
}

impl NDArray {
    /// A traced array: shape and dtype, no values (see [`crate::trace`]).
    pub fn meta(shape: &[usize], dtype: DType, device: Device) -> NDArray {
        let bytes = numel(shape).saturating_mul(dtype.size());
        NDArray::from_parts(
            Arc::new(Storage::meta(bytes, device)),
            Shape::from_slice(shape),
            crate::shape::contiguous_strides(shape),
            0,
            dtype,
        )
    }
}

/// Records one call with the installed sink and returns traced outputs.
pub(crate) fn record(
    op: &Op,
    attrs: &Attrs,
    inputs: &[&NDArray],
    shapes: &[Shape],
    dtypes: &[DType],
    device: Device,
) -> Result<Vec<NDArray>> {
    let outputs: Vec<NDArray> =
        shapes.iter().zip(dtypes).map(|(s, d)| NDArray::meta(s, *d, device)).collect();
    let inputs: Vec<NDArray> = inputs.iter().map(|x| (*x).clone()).collect();
    // Take the sink out while it runs, so that it may itself call operators
    // eagerly (a nested call then computes instead of recording).
    let mut sink =
        SINK.with(|s| s.borrow_mut().take()).ok_or_else(|| Error::Invalid("no trace is running".into()))?;
    let result = sink(op, attrs, &inputs, &outputs);
    SINK.with(|s| *s.borrow_mut() = Some(sink));
    result.map(|_| outputs)
}
