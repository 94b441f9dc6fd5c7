//! MXNet's CPU random states: `OpResource::get_cpu_rand_states()` returns an
//! array of `MX_NUM_CPU_RANDOM_STATES` (1024) `std::mt19937` engines that the
//! host owns and keeps between calls. A library indexes into it directly, so
//! the host must lay the engines out exactly as the library's C++ standard
//! library does.
//!
//! The layout here is libstdc++'s (GCC's standard library, which g++ and
//! clang++ use on Linux and which MXNet's own builds used): 624 words of
//! `uint_fast32_t` (C's `unsigned long` under glibc) and the position `_M_p`.
//! The size is checked against `sizeof(std::mt19937)` of the C++ compiler
//! that built oxnet; where it differs, the states are not handed out and a
//! kernel that asks for them gets NULL.
//!
//! The engines' seeds derive from oxnet's seed (`oxnet.random.seed`), and
//! are set again whenever it is: seeding alone fixes what the engines draw,
//! whatever else draws from the global generator in between. Each call
//! borrows a whole set of engines, so calls on several threads never share
//! one; a set is created when all are in use, and set `k` (numbered in
//! creation order) seeds engine `i` with `base(seed, k) + i`. A program that
//! calls from one thread always gets set 0.

use std::ffi::{c_ulong, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// `MX_NUM_CPU_RANDOM_STATES` in MXNet's header.
pub(crate) const NUM_STATES: usize = 1024;
/// The Mersenne twister's number of state words.
const WORDS: usize = 624;
/// `std::mt19937::default_seed`.
#[cfg(test)]
const DEFAULT_SEED: u32 = 5489;

extern "C" {
    fn oxnet_mxnet_mt19937_size() -> usize;
}

/// One `std::mt19937` as libstdc++ lays it out.
#[repr(C)]
#[derive(Clone)]
struct Engine {
    words: [c_ulong; WORDS],
    position: usize,
}

impl Engine {
    /// `std::mersenne_twister_engine::seed(value)` (the C++ standard's
    /// initialisation; libstdc++ marks the block as used up, so the first
    /// draw twists).
    fn seed(&mut self, value: u32) {
        let mut prev = value;
        self.words[0] = prev as c_ulong;
        for i in 1..WORDS {
            prev = 1_812_433_253u32.wrapping_mul(prev ^ (prev >> 30)).wrapping_add(i as u32);
            self.words[i] = prev as c_ulong;
        }
        self.position = WORDS;
    }

    /// The next number, as `std::mt19937::operator()` computes it (used by the
    /// tests to check the layout against the C++ engine).
    #[cfg(test)]
    fn next(&mut self) -> u32 {
        const M: usize = 397;
        if self.position >= WORDS {
            for i in 0..WORDS {
                let y =
                    (self.words[i] as u32 & 0x8000_0000) | (self.words[(i + 1) % WORDS] as u32 & 0x7fff_ffff);
                let mut v = self.words[(i + M) % WORDS] as u32 ^ (y >> 1);
                if y & 1 != 0 {
                    v ^= 0x9908_b0df;
                }
                self.words[i] = v as c_ulong;
            }
            self.position = 0;
        }
        let mut y = self.words[self.position] as u32;
        self.position += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }
}

/// A set of [`NUM_STATES`] engines, its number and the seeding generation
/// it follows.
struct States {
    engines: Vec<Engine>,
    index: u64,
    generation: Option<u64>,
}

/// How many sets were created.
static CREATED: AtomicU64 = AtomicU64::new(0);

/// The first engine seed of set `index` under oxnet seed `seed` (SplitMix64's
/// finaliser, so that neighbouring seeds give unrelated bases).
fn base(seed: u64, index: u64) -> u32 {
    let mut z = seed.wrapping_add(index.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as u32
}

impl States {
    fn new() -> States {
        let blank = Engine { words: [0; WORDS], position: WORDS };
        let index = CREATED.fetch_add(1, Ordering::SeqCst);
        States { engines: vec![blank; NUM_STATES], index, generation: None }
    }

    /// Seeds every engine from oxnet's seed, unless already seeded for it.
    fn follow_global_seed(&mut self) {
        let now = oxnet_core::random::generation();
        if self.generation != Some(now) {
            let base = base(oxnet_core::random::last_seed(), self.index);
            for (i, e) in self.engines.iter_mut().enumerate() {
                e.seed(base.wrapping_add(i as u32));
            }
            self.generation = Some(now);
        }
    }
}

/// Whether the engines laid out here have the size of the C++ compiler's.
fn layout_matches() -> bool {
    static MATCHES: OnceLock<bool> = OnceLock::new();
    // SAFETY: a pure function of the C++ side.
    *MATCHES.get_or_init(|| unsafe { oxnet_mxnet_mt19937_size() } == std::mem::size_of::<Engine>())
}

/// The sets not in use.
static FREE: Mutex<Vec<States>> = Mutex::new(Vec::new());

/// A set of engines lent to one kernel call; returned when dropped.
pub(crate) struct Borrowed {
    states: Option<States>,
}

impl Borrowed {
    /// Lends a set, seeded for the current global seed; `None` when the
    /// layout does not match this platform's C++ standard library.
    pub(crate) fn take() -> Borrowed {
        if !layout_matches() {
            return Borrowed { states: None };
        }
        let free = FREE.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut states = free.unwrap_or_else(States::new);
        states.follow_global_seed();
        Borrowed { states: Some(states) }
    }

    /// The array the library receives (`mx_cpu_rand_t*`), or NULL.
    pub(crate) fn as_ptr(&mut self) -> *mut c_void {
        match &mut self.states {
            Some(s) => s.engines.as_mut_ptr() as *mut c_void,
            None => std::ptr::null_mut(),
        }
    }
}

impl Drop for Borrowed {
    fn drop(&mut self) {
        if let Some(s) = self.states.take() {
            FREE.lock().unwrap_or_else(|e| e.into_inner()).push(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" {
        fn oxnet_mxnet_test_draw(engine: *mut c_void) -> u32;
    }

    #[test]
    fn the_seeding_and_twisting_follow_the_cpp_standard() {
        // The standard requires the 10000th draw of a default-constructed
        // std::mt19937 to be 4123659995.
        let mut e = Engine { words: [0; WORDS], position: 0 };
        e.seed(DEFAULT_SEED);
        let last = (0..10_000).map(|_| e.next()).last();
        assert_eq!(last, Some(4_123_659_995));
    }

    #[test]
    fn the_layout_is_the_cpp_compilers_std_mt19937() {
        assert!(layout_matches(), "sizeof(std::mt19937) differs from {}", std::mem::size_of::<Engine>());
        let mut ours = Engine { words: [0; WORDS], position: 0 };
        ours.seed(12345);
        let mut theirs = ours.clone();
        for _ in 0..700 {
            // SAFETY: `theirs` is laid out as std::mt19937 (checked above).
            let c = unsafe { oxnet_mxnet_test_draw(&mut theirs as *mut Engine as *mut c_void) };
            assert_eq!(c, ours.next());
        }
    }

    #[test]
    fn sets_and_seeds_get_distinct_bases() {
        let bases: std::collections::HashSet<u32> =
            (0..4).flat_map(|seed| (0..4).map(move |set| base(seed, set))).collect();
        assert_eq!(bases.len(), 16);
        assert_eq!(base(7, 0), base(7, 0));
    }

    #[test]
    fn reseeding_the_global_generator_reseeds_the_engines() {
        let draw = |b: &mut Borrowed| {
            let p = b.as_ptr() as *mut Engine;
            // SAFETY: the set holds NUM_STATES engines laid out as std::mt19937.
            unsafe {
                (
                    oxnet_mxnet_test_draw(p as *mut c_void),
                    oxnet_mxnet_test_draw(p.add(NUM_STATES - 1) as *mut c_void),
                )
            }
        };
        // Other tests may reseed concurrently, so hold one set throughout.
        let mut b = Borrowed::take();
        oxnet_core::random::seed(3);
        b.states.as_mut().unwrap().follow_global_seed();
        let first = draw(&mut b);
        oxnet_core::random::seed(3);
        // Draws from the global generator do not move the engines' seeds.
        oxnet_core::random::with_rng(rand::Rng::random::<u64>);
        b.states.as_mut().unwrap().follow_global_seed();
        assert_eq!(draw(&mut b), first);
        oxnet_core::random::seed(4);
        b.states.as_mut().unwrap().follow_global_seed();
        assert_ne!(draw(&mut b), first);
    }
}
