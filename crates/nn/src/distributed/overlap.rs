//! [`GradientOverlap`]: summing gradients over the ranks while the backward
//! pass still runs.
//!
//! The backward pass announces each parameter's gradient the moment it is
//! complete in its buffer (a gradient-ready hook,
//! [`oxnet_core::autograd::set_grad_ready_hook`]); a communication thread
//! sums it over the ranks, bucket by bucket, on a duplicate of the
//! communicator while the earlier layers' gradients are still computed.
//! [`GradientOverlap::finish`], called by the step after backward, waits
//! for what is left: the last bucket and any bucket still on its way.
//!
//! Buckets of up to `OXNET_BUCKET_BYTES` (1 MiB by default) are cut along
//! the parameters in reverse at first, then, after the first step whose
//! backward pass announced gradients, along rank 0's order of
//! announcements. Every rank sums them in the same order whatever order the
//! signals arrive in, so the collectives match even where a gradient is
//! never announced (its bucket waits for the step). Sums land in buffers of
//! their own; a gradient announced again after its bucket was summed (a
//! second backward pass before the step) is noticed, every rank learns it
//! with the last bucket, and all sum every gradient again.
//!
//! `OXNET_OVERLAP` (`1`, `0`, or `auto`, the default: on where each rank
//! on the machine has two cores or more) decides whether a
//! [`Trainer`](crate::trainer::Trainer) overlaps; the Python store follows
//! the same rules.

use super::{collectives, Communicator};
use oxnet_core::{autograd, Error, NDArray, Req, Result};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Whether a trainer over `comm` overlaps (see the module): `OXNET_OVERLAP`
/// and, by default, at least two cores for each rank on this machine; never
/// for a world of one or a communicator whose collectives cannot run on
/// two threads at once.
pub fn overlap_enabled(comm: &dyn Communicator) -> Result<bool> {
    let wanted = match std::env::var("OXNET_OVERLAP").unwrap_or_default().trim().to_ascii_lowercase().as_str()
    {
        "" | "auto" => {
            let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
            cores / comm.local_size().max(1) >= 2
        }
        "1" | "true" | "on" => true,
        "0" | "false" | "off" => false,
        other => return Err(Error::Invalid(format!("OXNET_OVERLAP=`{other}`: expected 1, 0 or auto"))),
    };
    Ok(wanted && comm.size() > 1 && comm.concurrent())
}

/// The largest bucket summed while backward runs, in bytes (`OXNET_BUCKET_BYTES`).
pub fn bucket_bytes() -> Result<usize> {
    match std::env::var("OXNET_BUCKET_BYTES") {
        Err(_) => Ok(1 << 20),
        Ok(raw) => match raw.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(Error::Invalid(format!(
                "OXNET_BUCKET_BYTES=`{raw}`: expected a positive number of bytes"
            ))),
        },
    }
}

/// The positions of `order` cut into consecutive buckets of at most
/// `limit` bytes (`sizes[i]`: position `i`'s bytes; a larger one goes alone).
pub fn make_buckets(order: &[usize], sizes: &[usize], limit: usize) -> Vec<Vec<usize>> {
    let (mut buckets, mut current, mut filled) = (Vec::new(), Vec::new(), 0);
    for &i in order {
        if !current.is_empty() && filled + sizes[i] > limit {
            buckets.push(std::mem::take(&mut current));
            filled = 0;
        }
        current.push(i);
        filled += sizes[i];
    }
    if !current.is_empty() {
        buckets.push(current);
    }
    buckets
}

/// The bytes of each gradient.
fn sizes(grads: &[NDArray]) -> Vec<usize> {
    grads.iter().map(|g| g.size() * g.dtype().size()).collect()
}

/// The buckets an overlap starts with for `grads`: the positions in
/// reverse (backward's usual order), cut at [`bucket_bytes`]. Every rank
/// must agree on them before making a [`GradientOverlap`].
pub fn first_buckets(grads: &[NDArray]) -> Result<Vec<Vec<usize>>> {
    let order: Vec<usize> = (0..grads.len()).rev().collect();
    Ok(make_buckets(&order, &sizes(grads), bucket_bytes()?))
}

enum Message {
    /// The gradient at this position is complete.
    Ready(usize),
    /// The step asks for every bucket but the last.
    Step,
    Stop,
}

/// The buckets, and for each position its bucket.
#[derive(Clone)]
struct Layout {
    buckets: Vec<Vec<usize>>,
    bucket_of: Vec<usize>,
}

impl Layout {
    fn new(buckets: Vec<Vec<usize>>, n: usize) -> Layout {
        let mut bucket_of = vec![0; n];
        for (b, members) in buckets.iter().enumerate() {
            for &i in members {
                bucket_of[i] = b;
            }
        }
        Layout { buckets, bucket_of }
    }
}

/// Sums gradients over the ranks as the backward pass completes them (see
/// the module).
pub struct GradientOverlap {
    variables: Vec<NDArray>,
    grads: Vec<NDArray>,
    sums: Vec<NDArray>,
    sizes: Vec<usize>,
    layout: Arc<Mutex<Layout>>,
    comm: Arc<dyn Communicator>,
    tx: Sender<Message>,
    replies: Receiver<Result<(bool, Vec<usize>)>>,
    thread: Option<JoinHandle<()>>,
    early: Arc<AtomicUsize>,
    redone: usize,
    steps: usize,
}

impl GradientOverlap {
    /// Hooks `variables[i]` (whose gradient buffer `grads[i]` is; those
    /// with another buffer or a request other than `write` are left to the
    /// step) and starts the thread on a duplicate of `comm` (a collective:
    /// every rank makes its overlap together, for the same gradients).
    pub fn new(comm: &dyn Communicator, variables: &[NDArray], grads: &[NDArray]) -> Result<GradientOverlap> {
        let n = grads.len();
        let layout = Arc::new(Mutex::new(Layout::new(first_buckets(grads)?, n)));
        let sums = grads.iter().map(NDArray::zeros_like).collect::<Result<Vec<_>>>()?;
        let dup = comm.duplicate()?;
        let (tx, rx) = channel::<Message>();
        let (reply_tx, replies) = channel();
        let early = Arc::new(AtomicUsize::new(0));
        let worker = Worker {
            grads: grads.to_vec(),
            sums: sums.clone(),
            layout: layout.clone(),
            comm: dup.clone(),
            early: early.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("oxnet-allreduce".into())
            .spawn(move || worker.run(rx, reply_tx))
            .map_err(|e| Error::Invalid(format!("cannot start the gradient communication thread: {e}")))?;
        for (i, (v, g)) in variables.iter().zip(grads).enumerate() {
            let own = autograd::grad_of(v).is_some_and(|b| b.same_handle(g));
            if own && autograd::grad_req_of(v) == Some(Req::Write) {
                let tx = Mutex::new(tx.clone());
                autograd::set_grad_ready_hook(
                    v,
                    Some(Arc::new(move || {
                        let _ = tx.lock().unwrap_or_else(|e| e.into_inner()).send(Message::Ready(i));
                    })),
                );
            }
        }
        Ok(GradientOverlap {
            variables: variables.to_vec(),
            grads: grads.to_vec(),
            sums,
            sizes: sizes(grads),
            layout,
            comm: dup,
            tx,
            replies,
            thread: Some(thread),
            early,
            redone: 0,
            steps: 0,
        })
    }

    /// Whether this overlap sums exactly these gradient buffers.
    pub fn serves(&self, grads: &[NDArray]) -> bool {
        grads.len() == self.grads.len() && grads.iter().zip(&self.grads).all(|(a, b)| a.same_handle(b))
    }

    /// The buckets, in the order they are summed.
    pub fn buckets(&self) -> Vec<Vec<usize>> {
        self.layout.lock().unwrap_or_else(|e| e.into_inner()).buckets.clone()
    }

    /// Buckets summed while backward ran, so far.
    pub fn summed_early(&self) -> usize {
        self.early.load(Ordering::Relaxed)
    }

    /// Steps that summed every gradient again (one changed after its bucket was summed).
    pub fn redone(&self) -> usize {
        self.redone
    }

    /// Completes this step's sums and writes them into the gradient
    /// buffers: waits for the thread's buckets, sums the last one (with
    /// whether any rank saw a gradient change after its bucket was summed;
    /// then every gradient is summed again).
    pub fn finish(&mut self) -> Result<()> {
        self.sum()?;
        for (g, s) in self.grads.iter().zip(&self.sums) {
            g.assign_from(s)?;
        }
        Ok(())
    }

    /// [`finish`](Self::finish) without writing the sums into the gradient
    /// buffers: ends the thread's step (as every rank must).
    pub fn sum(&mut self) -> Result<()> {
        self.tx.send(Message::Step).map_err(|_| stopped())?;
        let (changed, arrivals) = self.replies.recv().map_err(|_| stopped())??;
        let last =
            self.layout.lock().unwrap_or_else(|e| e.into_inner()).buckets.last().cloned().unwrap_or_default();
        let mut arrays: Vec<NDArray> = Vec::with_capacity(last.len() + 1);
        for &i in &last {
            self.sums[i].assign_from(&self.grads[i])?;
            arrays.push(self.sums[i].clone());
        }
        let flag = NDArray::from_vec(vec![if changed { 1.0f64 } else { 0.0 }], &[1])?;
        arrays.push(flag.clone());
        collectives::allreduce_sum(self.comm.as_ref(), &arrays)?;
        if flag.to_vec::<f64>()?[0] > 0.0 {
            for (s, g) in self.sums.iter().zip(&self.grads) {
                s.assign_from(g)?;
            }
            collectives::allreduce_sum(self.comm.as_ref(), &self.sums)?;
            self.redone += 1;
        }
        self.steps += 1;
        if self.steps == 2 {
            // the first step whose backward pass announced: cut the buckets along rank 0's order
            self.relayout(arrivals)?;
        }
        Ok(())
    }

    fn relayout(&mut self, arrivals: Vec<usize>) -> Result<()> {
        let n = self.grads.len();
        let mut order = arrivals;
        let mut seen = vec![false; n];
        order.retain(|&i| i < n && !std::mem::replace(&mut seen[i], true));
        let layout = self.layout.lock().unwrap_or_else(|e| e.into_inner());
        order.extend(layout.buckets.iter().flatten().filter(|&&i| !seen[i]));
        drop(layout);
        let mut bytes: Vec<u8> = order.iter().flat_map(|&i| (i as u32).to_le_bytes()).collect();
        self.comm.broadcast_bytes(&mut bytes, 0)?;
        let order: Vec<usize> =
            bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as usize).collect();
        let buckets = make_buckets(&order, &self.sizes, bucket_bytes()?);
        *self.layout.lock().unwrap_or_else(|e| e.into_inner()) = Layout::new(buckets, n);
        Ok(())
    }
}

impl Drop for GradientOverlap {
    fn drop(&mut self) {
        for v in &self.variables {
            autograd::set_grad_ready_hook(v, None);
        }
        let _ = self.tx.send(Message::Stop);
        // not joined: the thread ends once it has finished what it was given
        // (a bucket the other ranks sum too)
        drop(self.thread.take());
    }
}

fn stopped() -> Error {
    Error::Invalid("the gradient communication thread has stopped; the trainer cannot step".into())
}

/// The communication thread's side.
struct Worker {
    grads: Vec<NDArray>,
    sums: Vec<NDArray>,
    layout: Arc<Mutex<Layout>>,
    comm: Arc<dyn Communicator>,
    early: Arc<AtomicUsize>,
}

impl Worker {
    fn sum_bucket(&self, members: &[usize]) -> Result<()> {
        for &i in members {
            self.sums[i].assign_from(&self.grads[i])?;
        }
        let arrays: Vec<NDArray> = members.iter().map(|&i| self.sums[i].clone()).collect();
        collectives::allreduce_sum(self.comm.as_ref(), &arrays)
    }

    fn run(self, rx: Receiver<Message>, replies: Sender<Result<(bool, Vec<usize>)>>) {
        // the step's state, set up at its first message (the buckets may be cut anew between steps)
        let mut state: Option<StepState> = None;
        while let Ok(message) = rx.recv() {
            let st = state.get_or_insert_with(|| StepState::new(&self.layout, self.grads.len()));
            let last = st.layout.buckets.len() - 1;
            let result = match message {
                Message::Stop => return,
                Message::Step => {
                    let mut result = Ok(());
                    while result.is_ok() && st.done < last {
                        result = self.sum_bucket(&st.layout.buckets[st.done]);
                        st.done += 1;
                    }
                    let failed = result.is_err();
                    let _ = replies.send(result.map(|()| (st.changed, std::mem::take(&mut st.arrivals))));
                    state = None;
                    if failed {
                        return;
                    }
                    continue;
                }
                Message::Ready(i) => {
                    let b = st.layout.bucket_of[i];
                    if b < st.done {
                        st.changed = true; // announced again after its bucket was summed
                    } else if !std::mem::replace(&mut st.seen[i], true) {
                        st.missing[b] -= 1;
                        st.arrivals.push(i);
                    }
                    let mut result = Ok(());
                    while result.is_ok() && st.done < last && st.missing[st.done] == 0 {
                        result = self.sum_bucket(&st.layout.buckets[st.done]);
                        st.done += 1;
                        self.early.fetch_add(1, Ordering::Relaxed);
                    }
                    result
                }
            };
            if let Err(e) = result {
                let _ = replies.send(Err(e)); // the step reports it
                return;
            }
        }
    }
}

/// What the communication thread knows of the current step.
struct StepState {
    layout: Layout,
    /// Positions announced this step.
    seen: Vec<bool>,
    /// Per bucket, how many of its positions are still to be announced.
    missing: Vec<usize>,
    /// Buckets summed so far (in order).
    done: usize,
    /// Whether a position was announced after its bucket was summed.
    changed: bool,
    /// Positions in the order they were first announced.
    arrivals: Vec<usize>,
}

impl StepState {
    fn new(layout: &Mutex<Layout>, n: usize) -> StepState {
        let layout = layout.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let missing = layout.buckets.iter().map(Vec::len).collect();
        StepState { layout, seen: vec![false; n], missing, done: 0, changed: false, arrivals: Vec::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::make_buckets;

    #[test]
    fn buckets_follow_the_order_and_hold_at_most_the_limit() {
        let sizes = [400, 100, 100, 900, 50];
        assert_eq!(make_buckets(&[4, 3, 2, 1, 0], &sizes, 500), vec![vec![4], vec![3], vec![2, 1], vec![0]]);
        assert_eq!(make_buckets(&[0, 1, 2], &sizes, 1000), vec![vec![0, 1, 2]]);
        assert_eq!(make_buckets(&[3, 0], &sizes, 8), vec![vec![3], vec![0]]);
        assert!(make_buckets(&[], &sizes, 8).is_empty());
    }
}
