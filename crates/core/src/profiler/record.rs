//! Recorded events: one buffer per thread while running, gathered into one
//! list (and the aggregate statistics) when dumped.

use super::aggregate::Stats;
use crate::fork::ForkMutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

/// What a marker marks (`Marker.mark(scope)`): the Chrome trace's instant
/// scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerScope {
    /// Every process.
    Global,
    /// This process.
    Process,
    /// This thread.
    Thread,
}

impl MarkerScope {
    /// Parses MXNet's scope names (`global`, `process`, `thread`; `task`
    /// and `marker` mark the thread).
    pub fn parse(s: &str) -> Option<MarkerScope> {
        match s {
            "global" => Some(MarkerScope::Global),
            "process" => Some(MarkerScope::Process),
            "thread" | "task" | "marker" => Some(MarkerScope::Thread),
            _ => None,
        }
    }

    pub(crate) fn letter(self) -> &'static str {
        match self {
            MarkerScope::Global => "g",
            MarkerScope::Process => "p",
            MarkerScope::Thread => "t",
        }
    }
}

/// The kind of a recorded event.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Kind {
    /// Something that ran for `dur_ns`.
    Span { dur_ns: u64 },
    /// A counter's new value.
    Counter { value: i64 },
    /// An instant.
    Marker(MarkerScope),
}

/// One recorded event.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    pub name: String,
    pub domain: Arc<str>,
    pub kind: Kind,
    pub start_ns: u64,
    pub thread: u32,
    /// Extra detail shown in the trace (a graph node's name).
    pub detail: Option<String>,
}

impl Record {
    pub fn span(name: String, domain: Arc<str>, start_ns: u64, dur_ns: u64) -> Record {
        Record { name, domain, kind: Kind::Span { dur_ns }, start_ns, thread: 0, detail: None }
    }

    pub fn counter(name: String, domain: Arc<str>, value: i64) -> Record {
        Record { name, domain, kind: Kind::Counter { value }, start_ns: now_ns(), thread: 0, detail: None }
    }

    pub fn marker(name: String, domain: Arc<str>, scope: MarkerScope) -> Record {
        Record { name, domain, kind: Kind::Marker(scope), start_ns: now_ns(), thread: 0, detail: None }
    }
}

/// Nanoseconds since the profiler's clock started (the first call).
pub fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

struct ThreadBuffer {
    id: u32,
    events: Mutex<Vec<Record>>,
}

/// Every thread's buffer, and the thread names for the trace.
struct Threads {
    buffers: Vec<Arc<ThreadBuffer>>,
    names: Vec<(u32, String)>,
}

static THREADS: ForkMutex<Threads> = ForkMutex::new(Threads { buffers: Vec::new(), names: Vec::new() });
crate::fork_safe!(THREADS);

/// Events gathered from the thread buffers, and the statistics over them.
struct Gathered {
    events: Vec<Record>,
    stats: Stats,
}

static GATHERED: ForkMutex<Option<Gathered>> = ForkMutex::new(None);
crate::fork_safe!(GATHERED);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

thread_local! {
    static LOCAL: Arc<ThreadBuffer> = register_thread();
}

fn register_thread() -> Arc<ThreadBuffer> {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let buffer = Arc::new(ThreadBuffer { id, events: Mutex::new(Vec::new()) });
    let current = std::thread::current();
    let name = current.name().map(str::to_string).unwrap_or_else(|| format!("thread {id}"));
    let mut threads = THREADS.lock();
    threads.buffers.push(buffer.clone());
    threads.names.push((id, name));
    buffer
}

/// Appends `record` to this thread's buffer.
pub(crate) fn push(record: Record) {
    let mut slot = Some(record);
    let _ = LOCAL.try_with(|buffer| {
        if let Some(mut r) = slot.take() {
            r.thread = buffer.id;
            lock(&buffer.events).push(r);
        }
    });
    if let Some(record) = slot {
        // the thread is exiting: straight to the gathered list
        let mut gathered = GATHERED.lock();
        let g = gathered.get_or_insert_with(empty);
        g.stats.add(&record);
        g.events.push(record);
    }
}

fn empty() -> Gathered {
    Gathered { events: Vec::new(), stats: Stats::default() }
}

/// Moves every thread's events into the gathered list and the statistics.
pub(crate) fn gather() {
    let buffers: Vec<Arc<ThreadBuffer>> = {
        let mut threads = THREADS.lock();
        // a buffer only this list holds belongs to a thread that ended
        let live: Vec<Arc<ThreadBuffer>> = threads.buffers.clone();
        threads.buffers.retain(|b| Arc::strong_count(b) > 2);
        live
    };
    let mut gathered = GATHERED.lock();
    let g = gathered.get_or_insert_with(empty);
    for buffer in buffers {
        let drained = std::mem::take(&mut *lock(&buffer.events));
        for r in &drained {
            g.stats.add(r);
        }
        g.events.extend(drained);
    }
}

/// Runs `f` on the gathered events (in gathering order).
pub(crate) fn with_events<R>(f: impl FnOnce(&[Record]) -> R) -> R {
    let mut gathered = GATHERED.lock();
    f(&gathered.get_or_insert_with(empty).events)
}

/// Runs `f` on the statistics.
pub(crate) fn with_stats<R>(f: impl FnOnce(&Stats) -> R) -> R {
    let mut gathered = GATHERED.lock();
    f(&gathered.get_or_insert_with(empty).stats)
}

/// Forgets the gathered events (after a finishing dump).
pub(crate) fn drop_gathered() {
    if let Some(g) = GATHERED.lock().as_mut() {
        g.events = Vec::new();
    }
}

/// Starts the statistics afresh.
pub(crate) fn reset_stats() {
    if let Some(g) = GATHERED.lock().as_mut() {
        g.stats = Stats::default();
    }
}

/// The names of the threads that recorded, by id.
pub(crate) fn thread_names() -> Vec<(u32, String)> {
    THREADS.lock().names.clone()
}
