//! How one line is ordered: every element becomes an unsigned integer key
//! whose order is the element's order ([`OrderKey`]), and the positions are
//! sorted by key with ties kept in position order: a least-significant-digit
//! radix sort when the whole line (or most of it) is wanted, a bounded heap
//! when only the first few are.
//!
//! Keys make equal elements equal (`-0.0` and `0.0` too) and put every NaN
//! after `+inf`; a descending sort complements the keys, which reverses
//! their order and leaves ties in position order, so NaN comes first there.

use oxnet_core::half::{bf16, f16};
use oxnet_core::parallel;
use std::collections::BinaryHeap;

/// Bits per radix digit: 256 buckets, four passes for a 32-bit key. (11-bit
/// digits, three passes, were slower per line on the 2-core machines here:
/// each of their passes took twice as long.)
const DIGIT_BITS: u32 = 8;
const BUCKETS: usize = 1 << DIGIT_BITS;

/// An unsigned key type the radix sort reads digit by digit.
pub(crate) trait RadixKey: Copy + Ord + Default + Send + Sync {
    /// Bits in the key.
    const BITS: u32;
    /// The digit of the key starting at bit `shift`.
    fn digit(self, shift: u32) -> usize;
    /// The complement: reverses the order of keys.
    fn flip(self) -> Self;
}

macro_rules! radix_key {
    ($($t:ty),*) => {$(
        impl RadixKey for $t {
            const BITS: u32 = <$t>::BITS;
            #[inline(always)]
            fn digit(self, shift: u32) -> usize {
                ((self >> shift) as usize) & (BUCKETS - 1)
            }
            #[inline(always)]
            fn flip(self) -> Self {
                !self
            }
        }
    )*};
}
radix_key!(u32, u64);

/// An element type whose values map onto an unsigned key of the same order.
pub(crate) trait OrderKey: Copy {
    /// The key type.
    type Key: RadixKey;
    /// The key of this value: `a < b` exactly when `key(a) < key(b)`, equal
    /// values share a key, NaN sorts after every number.
    fn order_key(self) -> Self::Key;
    /// The value of a key: `from_key(order_key(x))` is `x` itself, except
    /// that `-0.0` comes back as `0.0` and every NaN as one NaN.
    fn from_key(key: Self::Key) -> Self;
    /// Whether `from_key(order_key(self))` gives back these very bits (false
    /// only for `-0.0` and NaN).
    fn key_is_exact(self) -> bool {
        true
    }
}

/// `OrderKey` for a float type whose bits are `$bits` (`$ibits` signed):
/// a negative number's bits are complemented and a positive one's get the
/// sign bit set, so unsigned order is numeric order; both zeros take the
/// key of `+0`, every NaN the largest key. Written as selects, without
/// branches: the signs of real data are unpredictable.
macro_rules! float_order_key {
    ($t:ty, $bits:ty, $ibits:ty, $key:ty) => {
        impl OrderKey for $t {
            type Key = $key;
            #[inline(always)]
            fn order_key(self) -> $key {
                const SIGN: $bits = 1 << (<$bits>::BITS - 1);
                let bits = self.to_bits();
                let flip = ((bits as $ibits) >> (<$bits>::BITS - 1)) as $bits | SIGN;
                let key = if bits & !SIGN == 0 { SIGN } else { bits ^ flip };
                (if self.is_nan() { <$bits>::MAX } else { key }) as $key
            }
            #[inline(always)]
            fn from_key(key: $key) -> Self {
                const SIGN: $bits = 1 << (<$bits>::BITS - 1);
                let key = key as $bits;
                let flip = if key & SIGN != 0 { SIGN } else { <$bits>::MAX };
                <$t>::from_bits(key ^ flip)
            }
            #[inline(always)]
            fn key_is_exact(self) -> bool {
                !self.is_nan() && self.to_bits() != 1 << (<$bits>::BITS - 1)
            }
        }
    };
}
float_order_key!(f32, u32, i32, u32);
float_order_key!(f64, u64, i64, u64);
float_order_key!(f16, u16, i16, u32);
float_order_key!(bf16, u16, i16, u32);

/// `OrderKey` for an integer type: its bits with the sign bit flipped
/// (`$bias`), widened to the key.
macro_rules! int_order_key {
    ($t:ty, $u:ty, $key:ty, $bias:expr) => {
        impl OrderKey for $t {
            type Key = $key;
            #[inline(always)]
            fn order_key(self) -> $key {
                (self as $u ^ $bias) as $key
            }
            #[inline(always)]
            fn from_key(key: $key) -> Self {
                (key as $u ^ $bias) as $t
            }
        }
    };
}
int_order_key!(u8, u8, u32, 0);
int_order_key!(i8, u8, u32, 0x80);
int_order_key!(i32, u32, u32, 1 << 31);
int_order_key!(i64, u64, u64, 1 << 63);

/// A key with the position it came from.
#[derive(Clone, Copy, Default)]
struct Item<K> {
    key: K,
    pos: u32,
}

/// Writes into `out` the positions `p < n` of the `out.len()` smallest
/// keys `key(p)`, in order, equal keys in position order (a stable sort's
/// first elements).
pub(crate) fn first_positions<K: RadixKey>(n: usize, key: impl Fn(usize) -> K, out: &mut [usize]) {
    let k = out.len();
    if k == 0 {
        return;
    }
    if u32::try_from(n).is_err() {
        // More positions than the radix items hold: the standard stable sort.
        let keys: Vec<K> = (0..n).map(key).collect();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&p| keys[p]);
        out.copy_from_slice(&order[..k]);
    } else if few(k, n) {
        smallest(n, key, out);
    } else {
        let sorted = radix_sort(n, key);
        for (o, it) in out.iter_mut().zip(&sorted) {
            *o = it.pos as usize;
        }
    }
}

/// Whether the first `k` of `n` are best found by [`first_positions`]'s
/// heap (one pass, most elements one comparison) rather than by sorting
/// the whole line.
pub(crate) fn few(k: usize, n: usize) -> bool {
    k * 8 <= n
}

/// The `out.len()` smallest keys by a bounded max-heap of (key, position):
/// one pass in which most elements cost a single comparison with the
/// heap's largest. A later position never displaces an equal key, so ties
/// keep position order.
fn smallest<K: RadixKey>(n: usize, key: impl Fn(usize) -> K, out: &mut [usize]) {
    let k = out.len();
    let mut heap: BinaryHeap<(K, usize)> = (0..k).map(|p| (key(p), p)).collect();
    let mut worst = heap.peek().map(|top| top.0).unwrap_or_default();
    for p in k..n {
        let kp = key(p);
        if kp < worst {
            if let Some(mut top) = heap.peek_mut() {
                *top = (kp, p);
            }
            worst = heap.peek().map(|top| top.0).unwrap_or_default();
        }
    }
    for (o, (_, p)) in out.iter_mut().zip(heap.into_sorted_vec()) {
        *o = p;
    }
}

/// What the radix sort moves: a key alone, or a key with its position.
pub(crate) trait RadixItem: Copy + Default + Send + Sync {
    type Key: RadixKey;
    fn radix_key(&self) -> Self::Key;
}

impl<K: RadixKey> RadixItem for Item<K> {
    type Key = K;
    #[inline(always)]
    fn radix_key(&self) -> K {
        self.key
    }
}

impl RadixItem for u32 {
    type Key = u32;
    #[inline(always)]
    fn radix_key(&self) -> u32 {
        *self
    }
}

impl RadixItem for u64 {
    type Key = u64;
    #[inline(always)]
    fn radix_key(&self) -> u64 {
        *self
    }
}

/// The keys `key(p)` of positions `p < n` (`n` fits `u32`) with their
/// positions, sorted by key, ties in position order.
fn radix_sort<K: RadixKey>(n: usize, key: impl Fn(usize) -> K) -> Vec<Item<K>> {
    radix_sort_items((0..n).map(|p| Item { key: key(p), pos: p as u32 }).collect())
}

/// `keys`, sorted.
pub(crate) fn sort_keys<K: RadixKey + RadixItem<Key = K>>(keys: Vec<K>) -> Vec<K> {
    radix_sort_items(keys)
}

/// How many parts (threads) a line of `n` items is sorted in.
pub(crate) fn parts_for(n: usize) -> usize {
    if n >= PARALLEL_MIN {
        parallel::num_threads().clamp(1, n / PARALLEL_MIN)
    } else {
        1
    }
}

/// Lines at least this long are sorted by all the pool's threads together
/// (each pass: every thread counts and scatters its share of the items).
const PARALLEL_MIN: usize = 1 << 16;

/// Lines shorter than this go to the standard library's stable sort: the
/// radix sort's fixed cost (zeroing its count tables, a prefix sum over 256
/// buckets per digit, a scratch line) would outweigh its passes there;
/// MXNet's test_order, which sorts thousands of lines of 5, ran for minutes.
const RADIX_MIN: usize = 512;

/// `items`, stably sorted by key. Short lines by a comparison sort; long
/// ones: one pass counts every digit (each part of the line its own share,
/// in parallel), then one stable scatter per digit whose values are not all
/// the same, the first from those counts, the later ones counting their
/// digit again.
fn radix_sort_items<I: RadixItem>(mut items: Vec<I>) -> Vec<I> {
    let n = items.len();
    if n < RADIX_MIN {
        items.sort_by_key(|it| it.radix_key());
        return items;
    }
    let parts = parts_for(n);
    let share = n.div_ceil(parts).max(1);
    let part_counts = parallel::map(parts, |t| digit_counts(share_of(&items, t, share)));
    let mut scratch = vec![I::default(); n];
    let mut moved = false;
    for d in 0..part_counts.first().map_or(0, Vec::len) {
        let of_digit: Vec<[u32; BUCKETS]> = part_counts.iter().map(|c| c[d]).collect();
        let total = sum_tables(&of_digit);
        if total.iter().any(|&m| m as usize == n) {
            continue;
        }
        let shift = d as u32 * DIGIT_BITS;
        if parts == 1 {
            scatter(&items, &mut scratch, shift, starts(&[total])[0]);
        } else {
            // before the first move each part's counts are the build's
            let counts = if moved { count_parts(&items, shift, parts) } else { of_digit };
            scatter_parallel(&items, &mut scratch, shift, &starts(&counts));
        }
        moved = true;
        std::mem::swap(&mut items, &mut scratch);
    }
    items
}

/// Where each part's items of each digit value go: digit values in order,
/// and within one value the parts in order (so the scatter is stable).
fn starts(part_counts: &[[u32; BUCKETS]]) -> Vec<[u32; BUCKETS]> {
    let mut next = vec![[0u32; BUCKETS]; part_counts.len()];
    let mut at = 0u32;
    for b in 0..BUCKETS {
        for (slot, c) in next.iter_mut().zip(part_counts) {
            slot[b] = at;
            at += c[b];
        }
    }
    next
}

/// Moves `items` into `out` by the digit at `shift`, each to the next
/// place of its digit value, starting from `next`.
fn scatter<I: RadixItem>(items: &[I], out: &mut [I], shift: u32, mut next: [u32; BUCKETS]) {
    for it in items {
        let b = it.radix_key().digit(shift);
        out[next[b] as usize] = *it;
        next[b] += 1;
    }
}

/// Each of `parts` consecutive shares of `items`: how many have each value
/// of the digit at `shift`.
fn count_parts<I: RadixItem>(items: &[I], shift: u32, parts: usize) -> Vec<[u32; BUCKETS]> {
    let share = items.len().div_ceil(parts);
    parallel::map(parts, |t| {
        let mut lanes = [[0u32; BUCKETS]; 4];
        count_into(&mut lanes, share_of(items, t, share), shift);
        sum_tables(&lanes)
    })
}

/// Share `t` (of `share` items) of `items`.
fn share_of<I>(items: &[I], t: usize, share: usize) -> &[I] {
    &items[(t * share).min(items.len())..((t + 1) * share).min(items.len())]
}

/// [`scatter`] by one thread per consecutive share of `items`, share `t`
/// starting each digit value at `next[t]`.
fn scatter_parallel<I: RadixItem>(items: &[I], out: &mut [I], shift: u32, next: &[[u32; BUCKETS]]) {
    let parts = next.len();
    let share = items.len().div_ceil(parts);
    let len = out.len();
    let base = OutPtr(out.as_mut_ptr());
    parallel::for_each(parts, |t| {
        let mut next = next[t];
        let base = &base;
        for it in share_of(items, t, share) {
            let b = it.radix_key().digit(shift);
            let at = next[b] as usize;
            assert!(at < len);
            // SAFETY: `starts` gives each (share, digit value) its own range
            // of `out`, as long as that share's count of the value, so every
            // index is written by one thread once; `at < len` is checked.
            unsafe { base.0.add(at).write(*it) };
            next[b] += 1;
        }
    });
}

/// The output of a parallel scatter, shared by its threads (each writes
/// its own indices).
struct OutPtr<I>(*mut I);
// SAFETY: the threads write disjoint indices (see `scatter_parallel`).
unsafe impl<I: Send> Sync for OutPtr<I> {}

/// Adds to four interleaved tables the digit values at `shift` of `items`.
fn count_into<I: RadixItem>(lanes: &mut [[u32; BUCKETS]; 4], items: &[I], shift: u32) {
    let mut quads = items.chunks_exact(4);
    for q in &mut quads {
        for (t, it) in lanes.iter_mut().zip(q) {
            t[it.radix_key().digit(shift)] += 1;
        }
    }
    for it in quads.remainder() {
        lanes[0][it.radix_key().digit(shift)] += 1;
    }
}

/// The sum of count tables.
fn sum_tables(tables: &[[u32; BUCKETS]]) -> [u32; BUCKETS] {
    let mut c = [0u32; BUCKETS];
    for t in tables {
        for (s, &m) in c.iter_mut().zip(t) {
            *s += m;
        }
    }
    c
}

/// How many items have each value of each digit, in one pass. Runs of
/// equal digits (the high digits of real data) would make every count wait
/// for the one before; four interleaved tables per digit, summed at the
/// end, let four counts proceed at once.
fn digit_counts<I: RadixItem>(items: &[I]) -> Vec<[u32; BUCKETS]> {
    let digits = I::Key::BITS.div_ceil(DIGIT_BITS) as usize;
    let mut lanes = vec![[[0u32; BUCKETS]; 4]; digits];
    let mut quads = items.chunks_exact(4);
    for q in &mut quads {
        for (d, lane) in lanes.iter_mut().enumerate() {
            let shift = d as u32 * DIGIT_BITS;
            for (t, it) in lane.iter_mut().zip(q) {
                t[it.radix_key().digit(shift)] += 1;
            }
        }
    }
    for it in quads.remainder() {
        for (d, lane) in lanes.iter_mut().enumerate() {
            lane[0][it.radix_key().digit(d as u32 * DIGIT_BITS)] += 1;
        }
    }
    lanes.iter().map(|lane| sum_tables(lane)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stable_order<K: RadixKey>(keys: &[K]) -> Vec<usize> {
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_by_key(|&p| keys[p]);
        order
    }

    #[test]
    fn float_keys_order_as_numbers_with_nan_last() {
        let xs = [f32::NEG_INFINITY, -3.5, -1e-40, -0.0, 0.0, 1e-40, 2.0, f32::INFINITY, f32::NAN, -f32::NAN];
        let ks: Vec<u32> = xs.iter().map(|x| x.order_key()).collect();
        assert!(ks[..4].windows(2).all(|w| w[0] < w[1]), "{ks:x?}");
        assert_eq!(ks[3], ks[4]);
        assert!(ks[4..8].windows(2).all(|w| w[0] < w[1]), "{ks:x?}");
        assert_eq!((ks[8], ks[9]), (u32::MAX, u32::MAX));
        let hs: Vec<u32> =
            [-2.0f32, -0.0, 0.0, 1.0, f32::NAN].iter().map(|&x| f16::from_f32(x).order_key()).collect();
        assert!(hs[0] < hs[1] && hs[1] == hs[2] && hs[2] < hs[3] && hs[3] < hs[4] && hs[4] <= 0xffff);
        let ds: Vec<u64> = [-1.0f64, 0.0, 1.0].iter().map(|x| x.order_key()).collect();
        assert!(ds[0] < ds[1] && ds[1] < ds[2]);
    }

    #[test]
    fn integer_keys_order_as_numbers() {
        assert!((-128i8).order_key() < (-1i8).order_key() && (-1i8).order_key() < 0i8.order_key());
        assert!(i32::MIN.order_key() < (-1i32).order_key() && 0i32.order_key() < i32::MAX.order_key());
        assert!(i64::MIN.order_key() < 0i64.order_key() && 0i64.order_key() < 1i64.order_key());
    }

    #[test]
    fn every_path_is_a_stable_sort() {
        // keys with many ties, in a pseudo-random order; 32- and 64-bit keys
        let keys: Vec<u32> = (0..5000u32).map(|i| (i.wrapping_mul(2654435761) >> 7) % 97).collect();
        let wide: Vec<u64> = keys.iter().map(|&k| (k as u64) << 40 | 7).collect();
        let expect = stable_order(&keys);
        for k in [1, 5, 600, 625, 626, 5000] {
            let mut out = vec![0; k];
            first_positions(keys.len(), |p| keys[p], &mut out);
            assert_eq!(out, expect[..k], "k = {k}");
            first_positions(keys.len(), |p| wide[p], &mut out);
            assert_eq!(out, expect[..k], "wide, k = {k}");
        }
        let flipped: Vec<u32> = keys.iter().map(|k| k.flip()).collect();
        let mut out = vec![0; 5000];
        first_positions(keys.len(), |p| keys[p].flip(), &mut out);
        assert_eq!(out, stable_order(&flipped));
    }

    #[test]
    fn long_lines_sort_in_parallel_parts_stably() {
        let n = 3 * PARALLEL_MIN + 17;
        let keys: Vec<u32> = (0..n as u32).map(|i| (i.wrapping_mul(2654435761) >> 9) % 5003).collect();
        let expect = stable_order(&keys);
        let mut out = vec![0; n];
        first_positions(n, |p| keys[p], &mut out);
        assert_eq!(out, expect);
        // the parallel scatter with any number of parts equals the serial one
        let items: Vec<Item<u32>> = keys.iter().zip(0u32..).map(|(&key, pos)| Item { key, pos }).collect();
        let serial = {
            let mut o = vec![Item::default(); n];
            scatter(&items, &mut o, 8, starts(&count_parts(&items, 8, 1))[0]);
            o
        };
        for parts in [2, 3, 7] {
            let mut o = vec![Item::default(); n];
            scatter_parallel(&items, &mut o, 8, &starts(&count_parts(&items, 8, parts)));
            assert!(o.iter().zip(&serial).all(|(a, b)| a.pos == b.pos), "{parts} parts");
        }
        let sorted = sort_keys(keys.clone());
        let mut plain = keys;
        plain.sort();
        assert_eq!(sorted, plain);
    }
}
