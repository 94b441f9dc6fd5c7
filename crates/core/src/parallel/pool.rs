//! The fork-join pool behind [`super::for_each`]: helper threads that spin
//! for a while after each job before they sleep.
//!
//! One job runs at a time. A job is `tasks` calls of one closure, `f(0)` to
//! `f(tasks - 1)`; the caller and the helpers claim indices from a shared
//! counter, so a helper that is slow to wake leaves its share to the caller
//! instead of holding it up.
//!
//! Safety of the borrowed closure: the claim counter is tagged with the
//! job's epoch, so a helper can only claim an index of the job that is
//! running; the caller waits until every index has been claimed *and*
//! finished before it returns, and no index can be claimed after that.
//! Hence the closure is only ever called while the caller's frame, which
//! owns it, is alive.

use std::any::Any;
use std::cell::Cell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A job's closure with its lifetime erased (see the module docs for why
/// it is only called while alive).
type TaskFn = dyn Fn(usize) + Sync;

#[derive(Clone, Copy)]
struct Job {
    epoch: u32,
    tasks: usize,
    f: *const TaskFn,
}

// SAFETY: the closure behind `f` is `Sync`; the pointer is only dereferenced
// under the claim protocol described in the module docs.
unsafe impl Send for Job {}

thread_local! {
    /// True on the pool's helpers and on a caller while its job runs: a
    /// nested call then runs inline instead of waiting for itself.
    static IN_JOB: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with every parallel call it makes (on this thread) inline.
pub(super) fn inline<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            IN_JOB.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(IN_JOB.with(|c| c.replace(true)));
    f()
}

/// Spin rounds between two offers of the CPU to other threads.
const YIELD_EVERY: u32 = 512;

/// One round of a spin-wait. Every [`YIELD_EVERY`] rounds (a few
/// microseconds) the thread offers its CPU to others: when the machine has
/// more runnable threads than cores (another process, or a thread of ours
/// that was preempted mid-task and holds the job's last index), spinning
/// through a whole time slice would keep the very thread it waits for off
/// the CPU. With nothing else to run, the offer returns at once.
#[inline]
fn polite_spin(rounds: u32) {
    if rounds.is_multiple_of(YIELD_EVERY) {
        std::thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}

/// Shared state of the pool.
pub(super) struct Pool {
    /// Threads a job may use, the caller included.
    threads: usize,
    /// How long an idle helper spins before it sleeps.
    spin: Duration,
    /// The process that started the helpers (a forked child has none).
    pid: u32,
    /// Set while a caller owns the pool.
    busy: AtomicBool,
    /// Bumped once per job; helpers wait for it to change.
    epoch: AtomicU32,
    /// The running job.
    job: Mutex<Option<Job>>,
    /// `epoch << 32 | next unclaimed index`.
    claim: AtomicU64,
    /// Finished indices of the running job.
    done: AtomicUsize,
    /// The first panic of the running job, re-raised on the caller.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    /// Helpers asleep (or about to be) on `wake`.
    sleepers: AtomicUsize,
    sleep_lock: Mutex<()>,
    wake: Condvar,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Nothing is ever left half-written under these locks.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Pool {
    /// A pool of `threads` threads (the caller and `threads - 1` helpers,
    /// started by [`Pool::start`]) whose helpers spin `spin` before sleeping.
    pub(super) fn new(threads: usize, spin: Duration) -> Self {
        Self {
            threads: threads.max(1),
            spin,
            pid: std::process::id(),
            busy: AtomicBool::new(false),
            epoch: AtomicU32::new(0),
            job: Mutex::new(None),
            claim: AtomicU64::new(0),
            done: AtomicUsize::new(0),
            panic: Mutex::new(None),
            sleepers: AtomicUsize::new(0),
            sleep_lock: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    /// Starts the helpers. A helper that cannot be spawned is left out (the
    /// caller then simply does more of each job itself).
    pub(super) fn start(&'static self) {
        for i in 1..self.threads {
            let _ =
                std::thread::Builder::new().name(format!("oxnet-worker-{i}")).spawn(move || self.helper());
        }
    }

    /// Threads a job may use, the caller included.
    pub(super) fn threads(&self) -> usize {
        self.threads
    }

    /// Calls `f(i)` for every `i < tasks`, on the pool when it is free, and
    /// returns once all calls have returned. A panic in a call is re-raised
    /// here after the job has finished.
    pub(super) fn run(&self, tasks: usize, f: &(dyn Fn(usize) + Sync)) {
        let inline = tasks <= 1
            || self.threads == 1
            || IN_JOB.with(Cell::get)
            || std::process::id() != self.pid
            || self.busy.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err();
        if inline {
            (0..tasks).for_each(f);
            return;
        }
        // SAFETY (lifetime erasure): see the module docs; `f` outlives this
        // call and the call does not return before the job is over.
        let erased: *const TaskFn =
            unsafe { std::mem::transmute::<*const (dyn Fn(usize) + Sync + '_), *const TaskFn>(f) };
        let epoch = self.epoch.load(Ordering::Relaxed).wrapping_add(1);
        self.done.store(0, Ordering::Relaxed);
        *lock(&self.job) = Some(Job { epoch, tasks, f: erased });
        self.claim.store(u64::from(epoch) << 32, Ordering::Release);
        self.epoch.store(epoch, Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            let _guard = lock(&self.sleep_lock);
            self.wake.notify_all();
        }
        IN_JOB.with(|c| c.set(true));
        self.work(epoch, tasks, f);
        IN_JOB.with(|c| c.set(false));
        let mut rounds: u32 = 0;
        while self.done.load(Ordering::Acquire) < tasks {
            rounds = rounds.wrapping_add(1);
            polite_spin(rounds);
        }
        let panic = lock(&self.panic).take();
        self.busy.store(false, Ordering::Release);
        if let Some(payload) = panic {
            resume_unwind(payload);
        }
    }

    /// Claims and runs indices of job `epoch` until none is left.
    fn work(&self, epoch: u32, tasks: usize, f: &(dyn Fn(usize) + Sync)) {
        loop {
            let claim = self.claim.load(Ordering::Acquire);
            let index = (claim & u64::from(u32::MAX)) as usize;
            if (claim >> 32) as u32 != epoch || index >= tasks {
                return;
            }
            if self
                .claim
                .compare_exchange_weak(claim, claim + 1, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| f(index))) {
                lock(&self.panic).get_or_insert(payload);
            }
            self.done.fetch_add(1, Ordering::Release);
        }
    }

    /// A helper's life: wait for a job (spinning, then asleep), take part.
    fn helper(&self) {
        IN_JOB.with(|c| c.set(true));
        let mut seen = self.epoch.load(Ordering::Acquire);
        loop {
            seen = self.wait_for_job(seen);
            let job = *lock(&self.job);
            if let Some(job) = job {
                // SAFETY: `work` only calls `f` after claiming an index of
                // `job.epoch`, which proves that job's caller is still
                // waiting (module docs).
                self.work(job.epoch, job.tasks, unsafe { &*job.f });
            }
        }
    }

    /// Waits until the epoch differs from `seen` and returns it: spins for
    /// `self.spin`, then sleeps on `wake`.
    fn wait_for_job(&self, seen: u32) -> u32 {
        let start = Instant::now();
        let mut rounds: u32 = 0;
        loop {
            let now = self.epoch.load(Ordering::Acquire);
            if now != seen {
                return now;
            }
            rounds = rounds.wrapping_add(1);
            if rounds.is_multiple_of(YIELD_EVERY) && start.elapsed() >= self.spin {
                let mut guard = lock(&self.sleep_lock);
                self.sleepers.fetch_add(1, Ordering::SeqCst);
                while self.epoch.load(Ordering::SeqCst) == seen {
                    guard = self.wake.wait(guard).unwrap_or_else(PoisonError::into_inner);
                }
                self.sleepers.fetch_sub(1, Ordering::SeqCst);
                return self.epoch.load(Ordering::Acquire);
            }
            polite_spin(rounds);
        }
    }
}
