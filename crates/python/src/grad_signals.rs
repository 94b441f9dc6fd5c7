//! `GradSignals`: a queue of "this gradient is complete" signals from the
//! backward pass, read by a communication thread (the distributed store
//! sums gradients over the workers while backward still runs).

use crate::array::PyNDArray;
use oxnet_core::autograd;
use oxnet_core::Req;
use pyo3::prelude::*;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Signals, in the order they happen, that variables' gradients are
/// complete in their buffers. `watch(variables, grads)` sets a
/// gradient-ready hook on each variable that posts its position in the
/// list; `get()` waits for the next signal (the GIL released); `post(n)`
/// adds one by hand (a thread's control message). A variable has one hook:
/// watching it again from another queue replaces this one's.
#[pyclass(frozen, module = "oxnet._oxnet")]
pub struct GradSignals {
    tx: Mutex<Sender<i64>>,
    rx: Mutex<Receiver<i64>>,
}

#[pymethods]
impl GradSignals {
    #[new]
    fn new() -> Self {
        let (tx, rx) = channel();
        GradSignals { tx: Mutex::new(tx), rx: Mutex::new(rx) }
    }

    /// Hooks `variables[i]` to post `i` once a backward pass completes its
    /// gradient. Only a variable whose gradient buffer is `grads[i]` itself
    /// and whose request is `write` is hooked (with `add` a gradient is
    /// complete only after the caller's last pass, which no pass knows);
    /// returns which were.
    fn watch(
        &self,
        variables: Vec<PyRef<'_, PyNDArray>>,
        grads: Vec<PyRef<'_, PyNDArray>>,
    ) -> PyResult<Vec<bool>> {
        if variables.len() != grads.len() {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "GradSignals.watch: {} variables but {} gradient buffers",
                variables.len(),
                grads.len()
            )));
        }
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner()).clone();
        Ok(variables
            .iter()
            .zip(&grads)
            .enumerate()
            .map(|(i, (v, g))| {
                let own = autograd::grad_of(&v.inner).is_some_and(|b| b.same_handle(&g.inner));
                if !own || autograd::grad_req_of(&v.inner) != Some(Req::Write) {
                    return false;
                }
                let tx = Mutex::new(tx.clone());
                let position = i as i64;
                autograd::set_grad_ready_hook(
                    &v.inner,
                    Some(Arc::new(move || {
                        // a closed queue (its reader gone) just drops the signal
                        let _ = tx.lock().unwrap_or_else(|e| e.into_inner()).send(position);
                    })),
                )
            })
            .collect())
    }

    /// Removes the hooks of `variables` (whoever set them).
    fn unwatch(&self, variables: Vec<PyRef<'_, PyNDArray>>) {
        for v in &variables {
            autograd::set_grad_ready_hook(&v.inner, None);
        }
    }

    /// Adds `value` to the queue.
    fn post(&self, value: i64) {
        let _ = self.tx.lock().unwrap_or_else(|e| e.into_inner()).send(value);
    }

    /// The next signal, waiting for it without the GIL (at most `timeout`
    /// seconds when given; then None).
    #[pyo3(signature = (timeout=None))]
    fn get(&self, py: Python<'_>, timeout: Option<f64>) -> Option<i64> {
        py.detach(|| {
            let rx = self.rx.lock().unwrap_or_else(|e| e.into_inner());
            match timeout {
                None => rx.recv().ok(),
                Some(t) => rx.recv_timeout(Duration::from_secs_f64(t.max(0.0))).ok(),
            }
        })
    }
}
