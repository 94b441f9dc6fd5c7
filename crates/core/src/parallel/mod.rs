//! Intra-operator parallelism: the engine's one fork-join thread pool.
//!
//! Kernels split their work into independent tasks and hand them to
//! [`for_each`] (or the slice helpers built on it); the calling thread takes
//! part and the call returns when every task is done. Nothing is
//! asynchronous: a kernel that returns has finished.
//!
//! Why not rayon: between the operators of a training step the pool sits
//! idle for tens of microseconds, and rayon's workers go to sleep that fast;
//! on this project's 2-vCPU virtual machines waking one costs more than a
//! mid-sized matrix product gains from it (a 64×256×256 product split in
//! two took 115–174 µs through `rayon::join` with 20–500 µs of serial work
//! between calls, against 85 µs on one thread and 45–57 µs here). This
//! pool's helpers spin for a while after each job before sleeping, as
//! OpenMP runtimes do, so back-to-back operators find them awake. Every
//! few microseconds of spinning (the helpers', and the caller's while it
//! waits for a job's last task) offers the CPU to other threads, so that
//! on a machine with more runnable threads than cores the spinning does
//! not hold off the thread it waits for (a small CNN's training step next
//! to one busy process: 44.6 ms with plain spinning, 34.4 ms with the
//! offers, against 19.8 ms alone).
//!
//! Settings, read once from the environment when the pool first runs:
//!
//! * `OXNET_NUM_THREADS` (else `OMP_NUM_THREADS`, else the number of CPUs):
//!   threads a kernel may use, the caller included; `1` runs everything on
//!   the calling thread.
//! * `OXNET_SPIN_US` (default 2000): microseconds an idle helper spins
//!   before it sleeps; `0` sleeps at once (no busy-waiting, slower wake-ups).
//!
//! Calls made from inside a task, from a forked child process, or from a
//! second thread while the pool is busy run inline on the calling thread,
//! so parallel kernels compose and never deadlock.

mod pool;

#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use pool::Pool;

/// Default spin time of an idle helper, in microseconds.
const DEFAULT_SPIN_US: u64 = 2000;

fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok()?.trim().parse().ok().filter(|&n| n > 0)
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<&'static Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = env_usize("OXNET_NUM_THREADS")
            .or_else(|| env_usize("OMP_NUM_THREADS"))
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let spin_us = std::env::var("OXNET_SPIN_US")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(DEFAULT_SPIN_US);
        let pool: &'static Pool = Box::leak(Box::new(Pool::new(threads, Duration::from_micros(spin_us))));
        pool.start();
        pool
    })
}

/// Threads a parallel kernel may use, the calling thread included.
pub fn num_threads() -> usize {
    pool().threads()
}

/// Runs `f` on the calling thread alone: the parallel kernels it calls
/// run their tasks inline (for single-thread measurements, or inside code
/// that already keeps every core busy).
///
/// ```
/// let main = std::thread::current().id();
/// let same = std::sync::atomic::AtomicBool::new(true);
/// oxnet_core::parallel::on_this_thread(|| {
///     oxnet_core::parallel::for_each(8, |_| {
///         if std::thread::current().id() != main {
///             same.store(false, std::sync::atomic::Ordering::Relaxed);
///         }
///     })
/// });
/// assert!(same.into_inner());
/// ```
pub fn on_this_thread<R>(f: impl FnOnce() -> R) -> R {
    pool::inline(f)
}

/// Calls `f(i)` for every `i` in `0..tasks`, spread over the pool, and
/// returns when all calls have returned. A panic in any call is re-raised
/// on the caller once the others have finished.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// let sum = AtomicUsize::new(0);
/// oxnet_core::parallel::for_each(100, |i| {
///     sum.fetch_add(i, Ordering::Relaxed);
/// });
/// assert_eq!(sum.into_inner(), 4950);
/// ```
pub fn for_each(tasks: usize, f: impl Fn(usize) + Sync) {
    pool().run(tasks, &f);
}

/// Like [`for_each`], stopping at the first error (tasks already started
/// finish; which error is returned when several fail is unspecified).
pub fn try_for_each<E: Send>(tasks: usize, f: impl Fn(usize) -> Result<(), E> + Sync) -> Result<(), E> {
    let first = FirstError::default();
    for_each(tasks, |i| first.run(|| f(i)));
    first.into_result()
}

/// Like [`for_each_chunk_mut`], stopping at the first error (as
/// [`try_for_each`]).
pub fn try_for_each_chunk_mut<T: Send, E: Send>(
    data: &mut [T],
    chunk: usize,
    f: impl Fn(usize, &mut [T]) -> Result<(), E> + Sync,
) -> Result<(), E> {
    let first = FirstError::default();
    for_each_chunk_mut(data, chunk, |c, part| first.run(|| f(c, part)));
    first.into_result()
}

/// The first error of a parallel loop; later tasks are skipped once set.
struct FirstError<E> {
    failed: AtomicBool,
    error: Mutex<Option<E>>,
}

impl<E> Default for FirstError<E> {
    fn default() -> Self {
        Self { failed: AtomicBool::new(false), error: Mutex::new(None) }
    }
}

impl<E> FirstError<E> {
    fn run(&self, task: impl FnOnce() -> Result<(), E>) {
        if self.failed.load(Ordering::Relaxed) {
            return;
        }
        if let Err(e) = task() {
            self.failed.store(true, Ordering::Relaxed);
            self.error.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(e);
        }
    }

    fn into_result(self) -> Result<(), E> {
        match self.error.into_inner().unwrap_or_else(PoisonError::into_inner) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// `f(i)` for every `i` in `0..tasks`, computed in parallel, in order.
pub fn map<R: Send>(tasks: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let mut out: Vec<Option<R>> = (0..tasks).map(|_| None).collect();
    for_each_chunk_mut(&mut out, 1, |i, slot| slot[0] = Some(f(i)));
    out.into_iter().map(|r| r.expect("every task stores its result")).collect()
}

/// Splits `data` into consecutive chunks of `chunk` elements (the last may
/// be shorter) and calls `f(chunk index, chunk)` for each, in parallel.
///
/// ```
/// let mut v = vec![0u32; 10];
/// oxnet_core::parallel::for_each_chunk_mut(&mut v, 3, |c, part| part.fill(c as u32));
/// assert_eq!(v, [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]);
/// ```
///
/// # Panics
/// If `chunk` is zero.
pub fn for_each_chunk_mut<T: Send>(data: &mut [T], chunk: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    assert!(chunk > 0, "parallel::for_each_chunk_mut: chunk size is zero");
    let len = data.len();
    let base = SendPtr(data.as_mut_ptr());
    for_each(len.div_ceil(chunk), |c| {
        let start = c * chunk;
        let n = chunk.min(len - start);
        // SAFETY: chunk `c` covers `start..start + n`, inside `data`; chunks
        // of distinct indices are disjoint and each index runs once, so no
        // two live `&mut` overlap; `data` is borrowed mutably for the call.
        let part = unsafe { std::slice::from_raw_parts_mut(base.get().add(start), n) };
        f(c, part);
    });
}

/// A raw pointer that may cross to the pool's threads (disjointness is the
/// user's proof).
struct SendPtr<T>(*mut T);

impl<T> Clone for SendPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for SendPtr<T> {}

impl<T> SendPtr<T> {
    fn get(self) -> *mut T {
        self.0
    }
}

// SAFETY: only used by `for_each_chunk_mut` for disjoint chunks of a slice
// of `Send` elements.
unsafe impl<T: Send> Send for SendPtr<T> {}
unsafe impl<T: Send> Sync for SendPtr<T> {}
