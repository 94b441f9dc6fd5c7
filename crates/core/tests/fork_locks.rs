//! A fork never leaves an engine lock held in the child: threads keep
//! taking the global generator's lock, the operator registry's lock and a
//! lock of this crate (another crate than core, listed with
//! `oxnet_core::fork_safe!`) while the test forks again and again, and
//! every child must take all three and exit within a bounded time.
//!
//! Without the fork handlers a child that forks while a thread holds one of
//! them waits forever; the parent then kills it and the test fails.
//!
//! This file is its own test binary with one test, so no other test's
//! threads are around when it forks.

#![cfg(unix)]

use oxnet_core::fork::ForkMutex;
use oxnet_core::{random, registry};
use rand::Rng;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A process-wide lock of a crate above core.
static MINE: ForkMutex<Vec<u64>> = ForkMutex::new(Vec::new());
oxnet_core::fork_safe!(MINE);

/// How many children are forked.
const FORKS: usize = 150;
/// How long a child may take (it needs well under a millisecond).
const CHILD_LIMIT: Duration = Duration::from_secs(5);

/// What a child does: takes each lock once, then leaves without running
/// any of the parent's exit code. Exit code 0 when everything was usable.
fn child() -> ! {
    let draw = random::with_rng(|r| r.random::<u64>());
    random::seed(draw);
    let found = registry::get("Custom").is_ok();
    MINE.lock().push(draw);
    // SAFETY: `_exit` ends the child at once; nothing is left to run.
    unsafe { libc::_exit(if found { 0 } else { 3 }) }
}

/// Waits for `pid` to exit within [`CHILD_LIMIT`]: its exit status, or
/// None after killing it when it did not exit in time.
fn wait_bounded(pid: libc::pid_t) -> Option<libc::c_int> {
    let start = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: waiting for our own child with a valid status pointer.
        let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        assert!(rc >= 0, "waitpid failed: {}", std::io::Error::last_os_error());
        if rc == pid {
            return Some(status);
        }
        if start.elapsed() > CHILD_LIMIT {
            // SAFETY: killing and reaping our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn children_forked_while_threads_hold_engine_locks_never_hang() {
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    // Draws that keep the generator's lock most of the time.
    workers.push(std::thread::spawn({
        let stop = stop.clone();
        move || {
            while !stop.load(Ordering::Relaxed) {
                random::with_rng(|r| (0..2_000).fold(0u64, |a, _| a ^ r.random::<u64>()));
            }
        }
    }));
    // Reseeding, registering and looking up: the other two locks, nested
    // inside the generator's lock and around it.
    workers.push(std::thread::spawn({
        let stop = stop.clone();
        move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                random::seed(n);
                random::with_rng(|_| {
                    let _ = registry::get("Custom");
                    MINE.lock().push(n);
                });
                let mut mine = MINE.lock();
                mine.clear();
                let _ = registry::get("Custom");
                random::with_rng(|r| mine.push(r.random()));
            }
        }
    }));
    // Let the threads start holding the locks.
    std::thread::sleep(Duration::from_millis(50));

    let mut hung = 0;
    let mut failed = Vec::new();
    for _ in 0..FORKS {
        // SAFETY: the child only takes the engine's locks (which the fork
        // handlers leave unlocked), allocates and calls `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed: {}", std::io::Error::last_os_error());
        if pid == 0 {
            child();
        }
        match wait_bounded(pid) {
            None => {
                // One is enough to fail; do not wait for more.
                hung += 1;
                break;
            }
            Some(status) if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) => {
                failed.push(status)
            }
            Some(_) => {}
        }
    }
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.join().unwrap();
    }
    assert!(oxnet_core::fork::installed(), "the fork handlers were never installed");
    assert_eq!(hung, 0, "a forked child hung on an engine lock (killed after {CHILD_LIMIT:?})");
    assert!(failed.is_empty(), "children failed with wait statuses {failed:?}");
}
