//! Backward steps writing gradients straight into the caller's arrays
//! (bound `write` gradient arrays, or the buffers a cached graph's backward
//! pass is offered) instead of planned buffers and a copy.

use super::Executor;
use oxnet_core::{NDArray, Req, Result};

impl Executor {
    /// The step and output slot that could write argument `i`'s gradient
    /// into a caller's array (see the field `redirectable`).
    pub(super) fn redirectable_slot(&self, i: usize) -> Option<(usize, usize)> {
        if !matches!(self.reqs[i], Req::Write | Req::Inplace) {
            return None;
        }
        let e = self.grad_entries[i]?;
        let shared = self.grad_entries.iter().enumerate().any(|(j, g)| j != i && *g == Some(e));
        if shared || self.head_entries.contains(&e) || self.buffers[e].is_none() || self.plan.in_place[e] {
            return None;
        }
        let n = self.graph.row_ptr.partition_point(|&p| p <= e) - 1;
        let s = self.steps.iter().position(|st| st.node == n)?;
        let read = self
            .steps
            .iter()
            .any(|st| self.graph.inputs[st.node].iter().any(|&(m, k)| self.graph.entry(m, k) == e));
        (s >= self.forward_steps.len() && !read).then(|| (s, e - self.graph.entry(n, 0)))
    }

    /// Makes the backward steps write argument `i`'s gradient straight into
    /// `dests[i]` (such as the variable's own gradient buffer) instead of
    /// the planned buffer, which saves copying it there afterwards. Only
    /// where that is safe: see the field `redirectable`; besides, `dests[i]`
    /// must be contiguous, of the gradient's shape, dtype and device, and
    /// share memory with no bound input and no other destination. Elsewhere,
    /// and where `dests[i]` is `None`, the planned buffer is used again. The
    /// choice stays until the next call: offering the same arrays each time
    /// costs a few comparisons.
    pub(crate) fn redirect_gradients(&mut self, dests: &[Option<NDArray>]) -> Result<()> {
        for i in 0..self.args.len() {
            let Some((s, k)) = self.redirectable[i] else { continue };
            let want = dests.get(i).and_then(Option::as_ref).filter(|d| {
                let planned = &self.steps[s].outputs[k];
                d.shape() == planned.shape()
                    && d.dtype() == planned.dtype()
                    && d.device() == self.device
                    && d.is_contiguous()
                    && !self.args.iter().chain(&self.aux).any(|a| a.shares_storage(d))
                    && !dests
                        .iter()
                        .enumerate()
                        .any(|(j, o)| j != i && o.as_ref().is_some_and(|o| o.shares_storage(d)))
            });
            let unchanged = match (want, &self.redirected[i]) {
                (None, None) => true,
                (Some(a), Some(b)) => a.same_handle(b),
                _ => false,
            };
            if unchanged {
                continue;
            }
            let e = self.grad_entries[i].expect("redirectable gradients have an entry");
            let target = match want {
                Some(d) => d.clone(),
                None => self.buffers[e].clone().expect("redirectable gradients are planned"),
            };
            self.steps[s].outputs[k] = target;
            self.redirected[i] = want.cloned();
        }
        Ok(())
    }
}
