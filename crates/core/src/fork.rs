//! Locks that stay usable in a child process made by `fork()`.
//!
//! A fork copies the memory of the whole process but only the thread that
//! forked. A lock that another thread held at that instant is copied held,
//! and nobody in the child will ever release it: the child's first use of
//! it waits forever. `gluon.data.DataLoader` forks its workers while other
//! threads of the parent may be drawing random numbers (holding the global
//! generator's lock) or looking operators up, so the engine's process-wide
//! locks must survive a fork.
//!
//! The mechanism, for the locks declared with [`ForkMutex`] or
//! [`ForkRwLock`] and listed in [`FORK_LOCKS`]:
//!
//! - *before the fork* (a `pthread_atfork` prepare handler, run by the
//!   forking thread), every listed lock is acquired, so that no other
//!   thread is inside any of them when the memory is copied;
//! - *after the fork*, in the parent and in the child alike, the forking
//!   thread releases them again. The child thus starts with every one of
//!   them unlocked and its data consistent (no update was half done).
//!
//! The guards taken by the prepare handler are ordinary std guards: the
//! three handlers run one after the other on the forking thread (the only
//! thread of the child), so the guards wait in a thread-local between them
//! and are dropped by the parent and child handlers. Nothing has to be
//! unlocked by force.
//!
//! The locks are taken with a back-off that cannot deadlock whatever order
//! other code nests them in: block on one, *try* the others, and on a
//! failure release all and start again by blocking on the one that was busy.
//!
//! The list is filled at link time (as operator registrars are, see
//! [`registry`](crate::registry)), so any crate can protect its own
//! process-wide locks without core naming it:
//!
//! ```
//! use oxnet_core::fork::ForkMutex;
//!
//! static COUNTER: ForkMutex<u64> = ForkMutex::new(0);
//! oxnet_core::fork_safe!(COUNTER);
//!
//! *COUNTER.lock() += 1;
//! assert_eq!(*COUNTER.lock(), 1);
//! ```
//!
//! The handlers are installed on the first use of any such lock (a lock
//! that was never taken cannot be held at a fork). Rules for the protected
//! locks: hold them briefly, never fork while holding one, and never wait
//! for something a forking thread may hold (the Python GIL) while holding
//! one, or the prepare handler waits for them forever.
//!
//! On platforms without `fork` (not Unix) these are plain locks.

use std::any::Any;
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};

/// Every lock the fork handlers hold across a fork, collected at link
/// time: add one with [`fork_safe!`](crate::fork_safe).
#[linkme::distributed_slice]
pub static FORK_LOCKS: [&'static dyn ForkLock];

/// A guard of a protected lock, kept by the prepare handler until the fork
/// is over.
pub type Held = Box<dyn Any>;

/// A lock the fork handlers can take before a fork and release after it.
/// Implemented by [`ForkMutex`] and [`ForkRwLock`].
pub trait ForkLock: Sync {
    /// Takes the lock exclusively, waiting for it.
    fn hold(&'static self) -> Held;
    /// Takes the lock exclusively if it is free now.
    fn try_hold(&'static self) -> Option<Held>;
}

/// Lists the static `lock` (a [`ForkMutex`] or a [`ForkRwLock`]) in
/// [`FORK_LOCKS`], so that a fork never leaves it held in the child. A
/// protected lock that is not listed panics on its first use in debug
/// builds.
#[macro_export]
macro_rules! fork_safe {
    ($lock:path) => {
        const _: () = {
            #[$crate::linkme::distributed_slice($crate::fork::FORK_LOCKS)]
            #[linkme(crate = $crate::linkme)]
            static FORK_LOCK: &'static dyn $crate::fork::ForkLock = &$lock;
        };
    };
}

/// A mutex that a fork never leaves held in the child (see the [module
/// documentation](self)). List it with [`fork_safe!`](crate::fork_safe).
/// Poisoning is ignored: a panic while it was held leaves the data as the
/// panic left it.
pub struct ForkMutex<T> {
    inner: Mutex<T>,
}

impl<T> ForkMutex<T> {
    /// A new unlocked mutex holding `value`.
    pub const fn new(value: T) -> Self {
        ForkMutex { inner: Mutex::new(value) }
    }
}

impl<T: Send + 'static> ForkMutex<T> {
    /// Locks the mutex, waiting for it.
    pub fn lock(&'static self) -> MutexGuard<'static, T> {
        prepare_use(self);
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T: Send + 'static> ForkLock for ForkMutex<T> {
    fn hold(&'static self) -> Held {
        Box::new(self.inner.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn try_hold(&'static self) -> Option<Held> {
        match self.inner.try_lock() {
            Ok(guard) => Some(Box::new(guard)),
            Err(TryLockError::Poisoned(e)) => Some(Box::new(e.into_inner())),
            Err(TryLockError::WouldBlock) => None,
        }
    }
}

/// A readers-writer lock that a fork never leaves held in the child (see
/// the [module documentation](self)). List it with
/// [`fork_safe!`](crate::fork_safe). Poisoning is ignored.
pub struct ForkRwLock<T> {
    inner: RwLock<T>,
}

impl<T> ForkRwLock<T> {
    /// A new unlocked lock holding `value`.
    pub const fn new(value: T) -> Self {
        ForkRwLock { inner: RwLock::new(value) }
    }
}

impl<T: Send + Sync + 'static> ForkRwLock<T> {
    /// Shared access, waiting for writers to finish.
    pub fn read(&'static self) -> RwLockReadGuard<'static, T> {
        prepare_use(self);
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Exclusive access, waiting for readers and writers to finish.
    pub fn write(&'static self) -> RwLockWriteGuard<'static, T> {
        prepare_use(self);
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T: Send + Sync + 'static> ForkLock for ForkRwLock<T> {
    fn hold(&'static self) -> Held {
        Box::new(self.inner.write().unwrap_or_else(PoisonError::into_inner))
    }

    fn try_hold(&'static self) -> Option<Held> {
        match self.inner.try_write() {
            Ok(guard) => Some(Box::new(guard)),
            Err(TryLockError::Poisoned(e)) => Some(Box::new(e.into_inner())),
            Err(TryLockError::WouldBlock) => None,
        }
    }
}

/// Called before every use of a protected lock: installs the handlers (on
/// the first use) and, in debug builds, checks that the lock is listed.
#[inline]
fn prepare_use<L: ForkLock>(lock: &'static L) {
    imp::install();
    debug_assert!(
        is_listed(lock),
        "a fork-safe lock is used without being listed in FORK_LOCKS (oxnet_core::fork_safe!)"
    );
}

/// Whether `lock` is in [`FORK_LOCKS`].
fn is_listed<L: ForkLock>(lock: &'static L) -> bool {
    let address = lock as *const L as *const ();
    FORK_LOCKS.iter().any(|l| std::ptr::eq(*l as *const dyn ForkLock as *const (), address))
}

/// Takes every lock of [`FORK_LOCKS`] (each once, whatever order other code
/// nests them in) and returns their guards: block on one, try the others,
/// and when one is busy release everything and start again by blocking on
/// that one. A thread holding one lock while waiting for another thus never
/// waits for this one.
fn hold_all() -> Vec<Held> {
    let locks = distinct_locks();
    let mut held = Vec::with_capacity(locks.len());
    let mut first = 0;
    'again: loop {
        held.clear();
        let Some(lock) = locks.get(first) else { return held };
        held.push(lock.hold());
        for (i, lock) in locks.iter().enumerate().filter(|&(i, _)| i != first) {
            match lock.try_hold() {
                Some(guard) => held.push(guard),
                None => {
                    // Release in the reverse order, then wait for the busy one.
                    while held.pop().is_some() {}
                    first = i;
                    std::thread::yield_now();
                    continue 'again;
                }
            }
        }
        return held;
    }
}

/// [`FORK_LOCKS`] without repeats (a lock listed twice would deadlock its
/// own taker).
fn distinct_locks() -> Vec<&'static dyn ForkLock> {
    let mut locks: Vec<&'static dyn ForkLock> = Vec::with_capacity(FORK_LOCKS.len());
    for &lock in FORK_LOCKS.iter() {
        let address = lock as *const dyn ForkLock as *const ();
        if !locks.iter().any(|l| std::ptr::eq(*l as *const dyn ForkLock as *const (), address)) {
            locks.push(lock);
        }
    }
    locks
}

/// Whether the fork handlers are installed in this process (they are once
/// any protected lock was used).
pub fn installed() -> bool {
    imp::installed()
}

#[cfg(unix)]
mod imp {
    use super::Held;
    use std::cell::{Cell, RefCell};
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Set once a thread installed the handlers.
    static INSTALLED: AtomicBool = AtomicBool::new(false);

    thread_local! {
        /// The guards the prepare handler took, until the parent or child
        /// handler drops them (all three run on the forking thread).
        static HELD: RefCell<Vec<Held>> = const { RefCell::new(Vec::new()) };
        /// How many prepare handlers ran without their parent or child
        /// handler yet: only the first takes the locks, only the last
        /// releases them. (Two threads racing at the very first use may
        /// both install the handlers; this keeps that harmless.)
        static DEPTH: Cell<usize> = const { Cell::new(0) };
    }

    /// Installs the handlers unless installed. A race between first users
    /// may install them twice, which [`DEPTH`] makes harmless; unlike a
    /// `Once`, nothing here can be left half done by a fork (a child would
    /// wait forever for a `Once` another thread was running).
    #[inline]
    pub(super) fn install() {
        if !INSTALLED.load(Ordering::Acquire) {
            install_now();
        }
    }

    #[cold]
    fn install_now() {
        // SAFETY: the handlers are plain functions that live as long as the
        // process; registering them has no other precondition.
        let rc = unsafe { libc::pthread_atfork(Some(prepare), Some(after), Some(after)) };
        if rc == 0 {
            INSTALLED.store(true, Ordering::Release);
        } else {
            eprintln!(
                "oxnet warning: pthread_atfork failed ({rc}); a forked child may hang on an engine lock"
            );
        }
    }

    pub(super) fn installed() -> bool {
        INSTALLED.load(Ordering::Acquire)
    }

    /// Before a fork: takes every protected lock.
    extern "C" fn prepare() {
        let first = DEPTH.try_with(|d| {
            d.set(d.get() + 1);
            d.get() == 1
        });
        if first == Ok(true) {
            let guards = super::hold_all();
            let _ = HELD.try_with(|h| *h.borrow_mut() = guards);
        }
    }

    /// After a fork, in the parent and in the child: releases them (the
    /// guards are dropped on the thread that took them, and in the child
    /// that thread is the only one).
    extern "C" fn after() {
        let last = DEPTH.try_with(|d| {
            d.set(d.get().saturating_sub(1));
            d.get() == 0
        });
        if last == Ok(true) {
            let mut guards = HELD.try_with(|h| std::mem::take(&mut *h.borrow_mut())).unwrap_or_default();
            // Released in the reverse order of taking.
            while guards.pop().is_some() {}
        }
    }
}

#[cfg(not(unix))]
mod imp {
    /// Nothing to install without `fork`.
    #[inline]
    pub(super) fn install() {}

    pub(super) fn installed() -> bool {
        false
    }
}
