//! Sums the convolution kernels share, written as [`LANES`] interleaved
//! partial sums: a single running sum is one long chain of dependent
//! additions (about four cycles each), while independent lanes stay in
//! vector registers. The order of additions differs from a left-to-right
//! sum, within the usual floating-point rounding.

use oxnet_core::FloatElement;

/// Partial sums kept by [`lane_sum`] and [`lane_dot`].
const LANES: usize = 16;

/// The sum of `xs` in the compute type.
pub(super) fn lane_sum<T: FloatElement>(xs: &[T]) -> T::Compute {
    let zero = <T::Compute as num_traits::Zero>::zero();
    let mut lanes = [zero; LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for chunk in &mut chunks {
        for (l, v) in lanes.iter_mut().zip(chunk) {
            *l = *l + v.to_compute();
        }
    }
    let tail = chunks.remainder().iter().fold(zero, |s, v| s + v.to_compute());
    lanes.iter().fold(tail, |s, &l| s + l)
}

/// The dot product of `a` and `b` (equal lengths) in the compute type.
pub(super) fn lane_dot<T: FloatElement>(a: &[T], b: &[T]) -> T::Compute {
    let zero = <T::Compute as num_traits::Zero>::zero();
    let mut lanes = [zero; LANES];
    let (mut ca, mut cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    for (x, y) in (&mut ca).zip(&mut cb) {
        for ((l, u), v) in lanes.iter_mut().zip(x).zip(y) {
            *l = *l + u.to_compute() * v.to_compute();
        }
    }
    let tail =
        ca.remainder().iter().zip(cb.remainder()).fold(zero, |s, (u, v)| s + u.to_compute() * v.to_compute());
    lanes.iter().fold(tail, |s, &l| s + l)
}

/// The bias gradient of an output gradient laid out (images, `filters`,
/// `pos`): its sum over images and positions per filter, images split
/// over the pool.
pub(super) fn bias_grad<T: FloatElement>(dys: &[T], filters: usize, pos: usize) -> Vec<T::Compute> {
    let zero = <T::Compute as num_traits::Zero>::zero();
    let per_image = (filters * pos).max(1);
    let images = dys.len() / per_image;
    let tasks = oxnet_core::parallel::num_threads().min(images).max(1);
    let per_task = images.div_ceil(tasks);
    let parts = oxnet_core::parallel::map(tasks, |t| {
        let mut db = vec![zero; filters];
        let (lo, hi) = ((t * per_task).min(images), ((t + 1) * per_task).min(images));
        for img in dys[lo * per_image..hi * per_image].chunks_exact(per_image) {
            for (acc, plane) in db.iter_mut().zip(img.chunks_exact(pos.max(1))) {
                *acc = *acc + lane_sum(plane);
            }
        }
        db
    });
    let mut db = vec![zero; filters];
    for part in parts {
        for (s, v) in db.iter_mut().zip(part) {
            *s = *s + v;
        }
    }
    db
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_and_dots_match_plain_loops() {
        for n in [0usize, 1, 15, 16, 17, 100] {
            let a: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
            let b: Vec<f64> = (0..n).map(|i| (i as f64 * 0.11).cos()).collect();
            let sum: f64 = a.iter().sum();
            let dot: f64 = a.iter().zip(&b).map(|(u, v)| u * v).sum();
            assert!((lane_sum(&a) - sum).abs() < 1e-12, "{n}");
            assert!((lane_dot(&a, &b) - dot).abs() < 1e-12, "{n}");
        }
    }

    #[test]
    fn bias_gradient_sums_images_and_positions() {
        // 3 images, 2 filters, 4 positions: value = 100 img + 10 f + p
        let dys: Vec<f64> = (0..3)
            .flat_map(|i| (0..2).flat_map(move |f| (0..4).map(move |p| (100 * i + 10 * f + p) as f64)))
            .collect();
        // filter f: sum over i, p of (100 i + 10 f + p) = 4·300 + 12·10 f + 3·6
        assert_eq!(bias_grad(&dys, 2, 4), vec![1218.0, 1338.0]);
    }
}
