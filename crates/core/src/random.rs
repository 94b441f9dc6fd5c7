//! oxnet's global random generator: one seed makes whole runs reproducible.

use crate::fork::ForkMutex;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use rand_pcg::Pcg64Mcg;
use std::sync::atomic::{AtomicU64, Ordering};

/// The generator type behind every random draw in oxnet.
pub type Generator = Pcg64Mcg;

/// The global generator (created on first use). A [`ForkMutex`]: threads
/// draw from it while a `DataLoader` forks its workers, and a child must
/// not start with it held.
static GLOBAL: ForkMutex<Option<Generator>> = ForkMutex::new(None);
crate::fork_safe!(GLOBAL);

/// The seed used when none was set.
pub const DEFAULT_SEED: u64 = 0x0_5eed;

/// How many times [`seed`] has been called.
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// The seed last given to [`seed`] (or [`DEFAULT_SEED`]).
static LAST_SEED: AtomicU64 = AtomicU64::new(DEFAULT_SEED);

/// Reseeds the global generator (MXNet's `mx.random.seed`).
pub fn seed(seed: u64) {
    let mut guard = GLOBAL.lock();
    *guard = Some(Generator::seed_from_u64(seed));
    LAST_SEED.store(seed, Ordering::SeqCst);
    GENERATION.fetch_add(1, Ordering::SeqCst);
}

/// Counts the calls of [`seed`]: generators kept outside the global one
/// (per-library random states) compare it with the value they were seeded
/// at and reseed themselves from [`last_seed`] when it changed.
pub fn generation() -> u64 {
    GENERATION.load(Ordering::SeqCst)
}

/// The seed last given to [`seed`] ([`DEFAULT_SEED`] before any): what
/// generators kept outside the global one derive their own seeds from, so
/// that seeding alone fixes what they draw.
pub fn last_seed() -> u64 {
    LAST_SEED.load(Ordering::SeqCst)
}

/// Runs `f` with exclusive access to the global generator.
pub fn with_rng<R>(f: impl FnOnce(&mut Generator) -> R) -> R {
    let mut guard = GLOBAL.lock();
    let rng = guard.get_or_insert_with(|| Generator::seed_from_u64(DEFAULT_SEED));
    f(rng)
}

/// `n` uniform draws in `[low, high)`.
pub fn uniform_vec(rng: &mut Generator, n: usize, low: f64, high: f64) -> Vec<f64> {
    (0..n).map(|_| low + (high - low) * rng.random::<f64>()).collect()
}

/// `n` normal draws with the given mean and standard deviation.
pub fn normal_vec(rng: &mut Generator, n: usize, mean: f64, std: f64) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let z: f64 = StandardNormal.sample(rng);
            mean + std * z
        })
        .collect()
}
