//! The comparison sorts MXNet's CPU kernels call, reproduced step for step
//! so that equal keys (and NaN, which compares false both ways) come out in
//! the same order as in MXNet 1.9.1: GCC's `std::sort` (introsort: median
//! of three quicksort down to runs of 16, heap sort past the depth limit,
//! then one insertion sort pass) and `std::partial_sort` (heap selection of
//! the first `k`, then heap sort of those). Neither is stable; matching
//! them, not stability, is the point.
//!
//! Both sort a slice of keys (here: positions along a line) by a strict
//! "less" on the keys. The standard library's unguarded loops rely on the
//! ordering being consistent; here every scan is also bounded by the
//! slice, which changes nothing for a consistent ordering and keeps an
//! inconsistent one (NaN) from reading past the ends.

/// Runs of at most this many keys are left to the final insertion sort.
const THRESHOLD: usize = 16;

/// Sorts `v` by `less` exactly as GCC's `std::sort` does.
pub(crate) fn sort<F: Fn(usize, usize) -> bool>(v: &mut [usize], less: &F) {
    let n = v.len();
    if n < 2 {
        return;
    }
    let depth = 2 * (usize::BITS - 1 - n.leading_zeros()) as usize;
    introsort_loop(v, 0, n, depth, less);
    final_insertion_sort(v, n, less);
}

/// Puts the `k` smallest keys of `v` (by `less`) first, in order, exactly
/// as GCC's `std::partial_sort(v, v + k, v + n)` does; the rest are left
/// in an unspecified order.
pub(crate) fn partial_sort<F: Fn(usize, usize) -> bool>(v: &mut [usize], k: usize, less: &F) {
    let n = v.len();
    if k == 0 || n == 0 {
        return;
    }
    heap_select(v, 0, k.min(n), n, less);
    sort_heap(v, 0, k.min(n), less);
}

fn introsort_loop<F: Fn(usize, usize) -> bool>(
    v: &mut [usize],
    lo: usize,
    mut hi: usize,
    mut depth: usize,
    less: &F,
) {
    while hi - lo > THRESHOLD {
        if depth == 0 {
            heap_select(v, lo, hi, hi, less);
            sort_heap(v, lo, hi, less);
            return;
        }
        depth -= 1;
        let cut = partition_pivot(v, lo, hi, less);
        introsort_loop(v, cut, hi, depth, less);
        hi = cut;
    }
}

/// Moves the median of `v[lo + 1]`, `v[mid]` and `v[hi - 1]` to `v[lo]`
/// and partitions `v[lo + 1..hi]` around it; returns the cut.
fn partition_pivot<F: Fn(usize, usize) -> bool>(v: &mut [usize], lo: usize, hi: usize, less: &F) -> usize {
    let mid = lo + (hi - lo) / 2;
    let (a, b, c) = (lo + 1, mid, hi - 1);
    let median = if less(v[a], v[b]) {
        if less(v[b], v[c]) {
            b
        } else if less(v[a], v[c]) {
            c
        } else {
            a
        }
    } else if less(v[a], v[c]) {
        a
    } else if less(v[b], v[c]) {
        c
    } else {
        b
    };
    v.swap(lo, median);
    let pivot = lo;
    let (mut first, mut last) = (lo + 1, hi);
    loop {
        while first < hi && less(v[first], v[pivot]) {
            first += 1;
        }
        last -= 1;
        while last > pivot && less(v[pivot], v[last]) {
            last -= 1;
        }
        if first >= last {
            return first;
        }
        v.swap(first, last);
        first += 1;
    }
}

fn final_insertion_sort<F: Fn(usize, usize) -> bool>(v: &mut [usize], n: usize, less: &F) {
    if n > THRESHOLD {
        insertion_sort(v, 0, THRESHOLD, less);
        for i in THRESHOLD..n {
            linear_insert(v, i, less);
        }
    } else {
        insertion_sort(v, 0, n, less);
    }
}

fn insertion_sort<F: Fn(usize, usize) -> bool>(v: &mut [usize], lo: usize, hi: usize, less: &F) {
    for i in lo + 1..hi {
        if less(v[i], v[lo]) {
            let key = v[i];
            v.copy_within(lo..i, lo + 1);
            v[lo] = key;
        } else {
            linear_insert(v, i, less);
        }
    }
}

/// Moves `v[i]` down past the keys greater than it.
fn linear_insert<F: Fn(usize, usize) -> bool>(v: &mut [usize], i: usize, less: &F) {
    let key = v[i];
    let mut j = i;
    while j > 0 && less(key, v[j - 1]) {
        v[j] = v[j - 1];
        j -= 1;
    }
    v[j] = key;
}

/// Makes `v[lo..mid]` a max-heap of the `mid - lo` smallest keys of
/// `v[lo..hi]`.
fn heap_select<F: Fn(usize, usize) -> bool>(v: &mut [usize], lo: usize, mid: usize, hi: usize, less: &F) {
    make_heap(v, lo, mid - lo, less);
    for i in mid..hi {
        if less(v[i], v[lo]) {
            pop_heap(v, lo, mid - lo, i, less);
        }
    }
}

fn make_heap<F: Fn(usize, usize) -> bool>(v: &mut [usize], base: usize, len: usize, less: &F) {
    if len < 2 {
        return;
    }
    let mut parent = (len - 2) / 2;
    loop {
        let key = v[base + parent];
        adjust_heap(v, base, parent, len, key, less);
        if parent == 0 {
            return;
        }
        parent -= 1;
    }
}

/// Sorts the heap `v[lo..hi]` ascending.
fn sort_heap<F: Fn(usize, usize) -> bool>(v: &mut [usize], lo: usize, hi: usize, less: &F) {
    let mut last = hi;
    while last - lo > 1 {
        last -= 1;
        pop_heap(v, lo, last - lo, last, less);
    }
}

/// Moves the heap's top to `v[result]` and puts `v[result]`'s key into the
/// heap `v[base..base + len]`.
fn pop_heap<F: Fn(usize, usize) -> bool>(v: &mut [usize], base: usize, len: usize, result: usize, less: &F) {
    let key = v[result];
    v[result] = v[base];
    adjust_heap(v, base, 0, len, key, less);
}

/// Sifts the hole at `hole` down to a leaf, then pushes `key` up from it.
fn adjust_heap<F: Fn(usize, usize) -> bool>(
    v: &mut [usize],
    base: usize,
    mut hole: usize,
    len: usize,
    key: usize,
    less: &F,
) {
    let top = hole;
    let mut child = hole;
    while len > 0 && child < (len - 1) / 2 {
        child = 2 * (child + 1);
        if less(v[base + child], v[base + child - 1]) {
            child -= 1;
        }
        v[base + hole] = v[base + child];
        hole = child;
    }
    if len.is_multiple_of(2) && len >= 2 && child == (len - 2) / 2 {
        child = 2 * (child + 1);
        v[base + hole] = v[base + child - 1];
        hole = child - 1;
    }
    while hole > top {
        let parent = (hole - 1) / 2;
        if !less(v[base + parent], key) {
            break;
        }
        v[base + hole] = v[base + parent];
        hole = parent;
    }
    v[base + hole] = key;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_value(vals: &[f64]) -> impl Fn(usize, usize) -> bool + '_ {
        move |a, b| vals[a] < vals[b]
    }

    #[test]
    fn sorts_and_partially_sorts() {
        let vals: Vec<f64> = (0..200).map(|i| ((i * 7919) % 211) as f64).collect();
        let mut idx: Vec<usize> = (0..vals.len()).collect();
        sort(&mut idx, &by_value(&vals));
        assert!(idx.windows(2).all(|w| vals[w[0]] <= vals[w[1]]));
        let mut seen = idx.clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..200).collect::<Vec<_>>());
        let mut part: Vec<usize> = (0..vals.len()).collect();
        partial_sort(&mut part, 9, &by_value(&vals));
        let firsts: Vec<f64> = part[..9].iter().map(|&i| vals[i]).collect();
        let want: Vec<f64> = idx[..9].iter().map(|&i| vals[i]).collect();
        assert_eq!(firsts, want);
    }

    #[test]
    fn ties_come_out_as_in_mxnet() {
        // argsort of [4]*8 + [3]*8 + ... + [0]*8 in MXNet 1.9.1 (GCC's std::sort)
        let vals: Vec<f64> = (0..40).map(|i| (4 - i / 8) as f64).collect();
        let mut idx: Vec<usize> = (0..40).collect();
        sort(&mut idx, &by_value(&vals));
        let want = [
            39, 38, 37, 36, 35, 34, 33, 32, 30, 24, 25, 26, 27, 28, 29, 31, 20, 23, 22, 21, 19, 18, 17, 16,
            10, 8, 9, 11, 12, 13, 14, 15, 0, 7, 6, 5, 4, 3, 2, 1,
        ];
        assert_eq!(idx, want);
        let mut desc: Vec<usize> = (0..40).collect();
        sort(&mut desc, &|a, b| vals[a] > vals[b]);
        let want = [
            1, 0, 7, 6, 5, 4, 3, 2, 8, 9, 10, 11, 12, 13, 14, 15, 23, 22, 21, 20, 18, 17, 16, 19, 30, 31, 29,
            28, 27, 26, 25, 24, 32, 33, 34, 35, 36, 37, 38, 39,
        ];
        assert_eq!(desc, want);
    }

    #[test]
    fn nan_and_tiny_inputs_stay_in_bounds() {
        let vals = [1.0, f64::NAN, 3.0, 2.0, f64::NAN, 0.0];
        let mut idx: Vec<usize> = (0..6).collect();
        sort(&mut idx, &by_value(&vals));
        // as MXNet 1.9.1: sort([1, nan, 3, 2, nan, 0]) = [0, 1, nan, 2, 3, nan]
        assert_eq!(idx, [5, 0, 1, 3, 2, 4]);
        let many: Vec<f64> = (0..100).map(|i| if i % 3 == 0 { f64::NAN } else { (i % 17) as f64 }).collect();
        let mut idx: Vec<usize> = (0..100).collect();
        sort(&mut idx, &by_value(&many));
        let mut seen = idx.clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..100).collect::<Vec<_>>());
        for n in 0..3 {
            let mut v: Vec<usize> = (0..n).collect();
            sort(&mut v, &by_value(&[2.0, 1.0]));
            partial_sort(&mut v, n, &by_value(&[2.0, 1.0]));
        }
    }
}
