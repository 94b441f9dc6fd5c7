//! The profiler: records what the engine runs (one event per operator call,
//! per graph node, per custom operator's own code, per backward kernel),
//! memory in use, and the user's own tasks, frames, events, counters and
//! markers; writes them as a Chrome trace (chrome://tracing, Perfetto) and
//! sums them into aggregate tables (`mx.profiler` in Python).
//!
//! Recording is off unless the profiler runs: every hook first reads one
//! atomic word ([`active`]) and does nothing more when it is zero. While it
//! runs, each thread appends to its own buffer (an uncontended lock), and
//! [`dump`] / [`aggregate`] gather the buffers.
//!
//! ```
//! use oxnet_core::{invoke1, profiler, NDArray};
//! # let _ = oxnet_core::registry::register(oxnet_core::OpDef::new("profiled_copy")
//! #     .forward(|_ctx, ins, outs| outs[0].assign_from(&ins[0])));
//! profiler::set_config(profiler::Config { aggregate_stats: true, ..Default::default() }).unwrap();
//! profiler::set_state(profiler::State::Run);
//! let x = NDArray::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
//! let _y = invoke1("profiled_copy", &[&x], &[]).unwrap();
//! profiler::set_state(profiler::State::Stop);
//! let stats = profiler::aggregate(false, profiler::Format::Json, profiler::SortBy::Total, false);
//! assert!(stats.contains("\"profiled_copy\""));
//! ```

mod aggregate;
mod chrome;
mod memory;
mod record;
mod scope;

pub use aggregate::{Format, SortBy};
pub use memory::{allocated, bytes_in_use, freed};
pub use record::{now_ns, MarkerScope};
pub use scope::{
    backward_scope, custom_scope, graph_scope, op_scope, span, CustomScope, GraphScope, OpScope, Span,
};

use crate::fork::ForkMutex;
use crate::{Error, Result};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Mode bit: operators called one by one (imperative calls, autograd's backward kernels).
pub const IMPERATIVE: u8 = 1;
/// Mode bit: the nodes of graphs run by executors and cached graphs.
pub const SYMBOLIC: u8 = 2;
/// Mode bit: memory in use, as counters.
pub const MEMORY: u8 = 4;
/// Mode bit: calls into the engine's API (from Python).
pub const API: u8 = 8;
/// Mode bit: user annotations (tasks, frames, events, counters, markers);
/// set whenever the profiler runs unpaused.
pub const USER: u8 = 16;

/// What is recorded while running: the mode bits above, or zero when the
/// profiler is stopped or paused (the one word every hook reads).
static MODE: AtomicU8 = AtomicU8::new(0);
static RUNNING: AtomicBool = AtomicBool::new(false);
static PAUSED: AtomicBool = AtomicBool::new(false);
static CONFIG: ForkMutex<Option<Config>> = ForkMutex::new(None);
crate::fork_safe!(CONFIG);

/// The profiler's settings (`mx.profiler.set_config`). The defaults are
/// MXNet 1.9.1's: every kind of event, `profile.json`, continuous dumps.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Record operators called one by one.
    pub profile_imperative: bool,
    /// Record the nodes of graphs (executors, cached graphs).
    pub profile_symbolic: bool,
    /// Record memory in use.
    pub profile_memory: bool,
    /// Record API calls.
    pub profile_api: bool,
    /// Keep aggregate statistics for [`aggregate`]. oxnet sums them when the
    /// events are gathered, not per call, so they cost nothing while
    /// running; the flag is kept for compatibility.
    pub aggregate_stats: bool,
    /// The trace file [`dump`] writes.
    pub filename: String,
    /// Whether a dump leaves the events in place, so that a later dump
    /// writes them again with the newer ones (MXNet's continuous dump: the
    /// file only grows).
    pub continuous_dump: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            profile_imperative: true,
            profile_symbolic: true,
            profile_memory: true,
            profile_api: true,
            aggregate_stats: false,
            filename: "profile.json".into(),
            continuous_dump: true,
        }
    }
}

impl Config {
    fn mode(&self) -> u8 {
        let mut m = USER;
        for (on, bit) in [
            (self.profile_imperative, IMPERATIVE),
            (self.profile_symbolic, SYMBOLIC),
            (self.profile_memory, MEMORY),
            (self.profile_api, API),
        ] {
            if on {
                m |= bit;
            }
        }
        m
    }
}

/// Whether the profiler runs (`set_state('run')`) or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Recording (unless paused).
    Run,
    /// Not recording; what was recorded stays until dumped.
    Stop,
}

fn config() -> std::sync::MutexGuard<'static, Option<Config>> {
    CONFIG.lock()
}

fn update_mode() {
    let mode = if RUNNING.load(Ordering::SeqCst) && !PAUSED.load(Ordering::SeqCst) {
        config().get_or_insert_with(Config::default).mode()
    } else {
        0
    };
    MODE.store(mode, Ordering::SeqCst);
}

/// True when events of kind `bit` are being recorded: one relaxed load, the
/// whole cost of every hook while the profiler is off.
#[inline(always)]
pub fn active(bit: u8) -> bool {
    MODE.load(Ordering::Relaxed) & bit != 0
}

/// Sets the profiler's configuration. Events already recorded stay.
pub fn set_config(config_: Config) -> Result<()> {
    if config_.filename.is_empty() {
        return Err(Error::Invalid("profiler: `filename` must not be empty".into()));
    }
    *config() = Some(config_);
    update_mode();
    Ok(())
}

/// The current configuration.
pub fn current_config() -> Config {
    config().get_or_insert_with(Config::default).clone()
}

/// Starts or stops recording; either ends a pause.
pub fn set_state(state: State) {
    RUNNING.store(state == State::Run, Ordering::SeqCst);
    PAUSED.store(false, Ordering::SeqCst);
    update_mode();
}

/// The current state.
pub fn state() -> State {
    if RUNNING.load(Ordering::SeqCst) {
        State::Run
    } else {
        State::Stop
    }
}

/// Pauses (`true`) or resumes (`false`) recording without changing the state.
pub fn set_paused(paused: bool) {
    PAUSED.store(paused, Ordering::SeqCst);
    update_mode();
}

/// Writes every event recorded so far (and not yet dropped by a finishing
/// dump) to the configured file as a Chrome trace, replacing the file.
/// `finished` drops the written events afterwards (the next dump starts
/// afresh); otherwise, under `continuous_dump`, they stay and a later dump
/// writes them again with the newer ones. Returns the file's name.
pub fn dump(finished: bool) -> Result<String> {
    let cfg = current_config();
    record::gather();
    let threads = record::thread_names();
    let text = record::with_events(|events| chrome::trace_json(events, &threads));
    std::fs::write(&cfg.filename, text).map_err(|e| {
        Error::Invalid(format!("profiler: cannot write the trace file `{}`: {e}", cfg.filename))
    })?;
    if finished || !cfg.continuous_dump {
        record::drop_gathered();
    }
    Ok(cfg.filename)
}

/// The aggregate statistics of what was recorded since the last reset, as
/// MXNet's table or JSON (`mx.profiler.dumps`): per domain, per name, the
/// count and the total, minimum, maximum and mean time in ms (memory in kB).
/// `reset` starts the statistics afresh afterwards.
pub fn aggregate(reset: bool, format: Format, sort_by: SortBy, ascending: bool) -> String {
    record::gather();
    let text = record::with_stats(|stats| aggregate::render(stats, format, sort_by, ascending));
    if reset {
        record::reset_stats();
    }
    text
}

/// Forgets every event recorded so far and the statistics (what a long
/// run calls between the windows it profiles).
pub fn clear() {
    record::gather();
    record::drop_gathered();
    record::reset_stats();
}

/// Records a span of user code (`Task`, `Frame`, `Event`) that ran from
/// `start_ns` to `end_ns` (times from [`now_ns`]) on this thread.
pub fn record_span(domain: &str, name: &str, start_ns: u64, end_ns: u64) {
    if active(USER) {
        record::push(record::Record::span(
            name.into(),
            domain.into(),
            start_ns,
            end_ns.saturating_sub(start_ns),
        ));
    }
}

/// Records a counter's new value (`Counter.set_value`, `+=`).
pub fn record_counter(domain: &str, name: &str, value: i64) {
    if active(USER) {
        record::push(record::Record::counter(name.into(), domain.into(), value));
    }
}

/// Records an instant marker (`Marker.mark(scope)`).
pub fn record_marker(domain: &str, name: &str, scope: MarkerScope) {
    if active(USER) {
        record::push(record::Record::marker(name.into(), domain.into(), scope));
    }
}

#[cfg(test)]
mod tests;
