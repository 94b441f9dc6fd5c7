//! Dense float64 matrix routines behind the `_linalg_*` operators: small
//! row-major matrices, one batch item at a time. Kernels read their inputs
//! as float64, compute here and round the results to the output dtype once.
//!
//! Every routine takes row-major slices and sizes; none panics on the sizes
//! its callers check first (the operators validate shapes before calling).

/// Row-major `rows x cols` transpose.
pub(super) fn transpose(a: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut t = vec![0.0; a.len()];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = a[r * cols + c];
        }
    }
    t
}

/// `alpha · op(a) · op(b)` where `a` is stored `a_rows x a_cols` and `b`
/// `b_rows x b_cols` (`op` transposes when its flag is set); the caller
/// checks that the inner sizes agree. Returns the `m x n` product.
pub(super) fn matmul(
    a: (&[f64], usize, usize),
    ta: bool,
    b: (&[f64], usize, usize),
    tb: bool,
    alpha: f64,
) -> Vec<f64> {
    let (a, ar, ac) = a;
    let (b, br, bc) = b;
    let (m, k) = if ta { (ac, ar) } else { (ar, ac) };
    let n = if tb { br } else { bc };
    let at = |i: usize, p: usize| if ta { a[p * ac + i] } else { a[i * ac + p] };
    let bt = |p: usize, j: usize| if tb { b[j * bc + p] } else { b[p * bc + j] };
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for p in 0..k {
            let av = at(i, p);
            if av == 0.0 {
                continue;
            }
            for j in 0..n {
                out[i * n + j] += av * bt(p, j);
            }
        }
    }
    if alpha != 1.0 {
        out.iter_mut().for_each(|v| *v *= alpha);
    }
    out
}

/// The lower (or upper) triangle of the square `n x n` matrix `a`, the
/// rest zero.
pub(super) fn triangle(a: &[f64], n: usize, lower: bool) -> Vec<f64> {
    let mut t = a.to_vec();
    for r in 0..n {
        for c in 0..n {
            if (lower && c > r) || (!lower && c < r) {
                t[r * n + c] = 0.0;
            }
        }
    }
    t
}

/// Makes the square `m` symmetric from its lower triangle (`from_lower`)
/// or its upper one: the other side is overwritten by the mirror image.
pub(super) fn mirror(m: &mut [f64], n: usize, from_lower: bool) {
    for r in 0..n {
        for c in 0..r {
            if from_lower {
                m[c * n + r] = m[r * n + c];
            } else {
                m[r * n + c] = m[c * n + r];
            }
        }
    }
}

/// Solves `t · x = b` for `x` where `t` is a full `n x n` triangular matrix
/// (lower when `lower`), `b` is `n x cols`. Zero pivots give infinities
/// or NaNs, as a BLAS `trsm` does.
pub(super) fn solve_left(t: &[f64], n: usize, lower: bool, b: &[f64], cols: usize) -> Vec<f64> {
    let mut x = b.to_vec();
    let rows: Box<dyn Iterator<Item = usize>> = if lower { Box::new(0..n) } else { Box::new((0..n).rev()) };
    for r in rows {
        let others: Vec<usize> = if lower { (0..r).collect() } else { (r + 1..n).collect() };
        for c in 0..cols {
            let mut s = x[r * cols + c];
            for &k in &others {
                s -= t[r * n + k] * x[k * cols + c];
            }
            x[r * cols + c] = s / t[r * n + r];
        }
    }
    x
}

/// `op(tri(a))` for the triangular operand of `trmm`/`trsm`: the chosen
/// triangle of `a`, transposed when `transpose`, and whether the result is
/// lower triangular.
pub(super) fn op_triangle(a: &[f64], n: usize, lower: bool, transpose_it: bool) -> (Vec<f64>, bool) {
    let t = triangle(a, n, lower);
    if transpose_it {
        (transpose(&t, n, n), !lower)
    } else {
        (t, lower)
    }
}

/// `alpha · op(t)⁻¹ · b` (or `alpha · b · op(t)⁻¹` when `rightside`) for
/// the `n x n` triangular `t` given by [`op_triangle`]; `b` is
/// `b_rows x b_cols`.
pub(super) fn trsm(
    t: (&[f64], bool),
    n: usize,
    b: (&[f64], usize, usize),
    rightside: bool,
    alpha: f64,
) -> Vec<f64> {
    let (t, lower) = t;
    let (b, br, bc) = b;
    let mut x = if rightside {
        // x · t = b  <=>  tᵀ · xᵀ = bᵀ
        let tt = transpose(t, n, n);
        let xt = solve_left(&tt, n, !lower, &transpose(b, br, bc), br);
        transpose(&xt, bc, br)
    } else {
        solve_left(t, n, lower, b, bc)
    };
    if alpha != 1.0 {
        x.iter_mut().for_each(|v| *v *= alpha);
    }
    x
}

/// The Cholesky factor of the symmetric positive-definite `n x n` matrix
/// read from the lower triangle of `a`: `l` with `a = l·lᵀ`, upper
/// triangle zero. `None` when a pivot is not positive (not positive
/// definite).
pub(super) fn cholesky_lower(a: &[f64], n: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; n * n];
    for j in 0..n {
        let mut d = a[j * n + j];
        for k in 0..j {
            d -= l[j * n + k] * l[j * n + k];
        }
        if d <= 0.0 || d.is_nan() {
            return None;
        }
        let d = d.sqrt();
        l[j * n + j] = d;
        for i in j + 1..n {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            l[i * n + j] = s / d;
        }
    }
    Some(l)
}

/// LU factorization with partial pivoting of the `n x n` matrix `a`:
/// returns the packed factors, the row permutation and its parity
/// (`true` for an odd number of swaps).
pub(super) fn lu(a: &[f64], n: usize) -> (Vec<f64>, Vec<usize>, bool) {
    let mut f = a.to_vec();
    let mut perm: Vec<usize> = (0..n).collect();
    let mut odd = false;
    for j in 0..n {
        let mut p = j;
        for i in j + 1..n {
            if f[i * n + j].abs() > f[p * n + j].abs() {
                p = i;
            }
        }
        if p != j {
            for c in 0..n {
                f.swap(j * n + c, p * n + c);
            }
            perm.swap(j, p);
            odd = !odd;
        }
        let piv = f[j * n + j];
        if piv == 0.0 {
            continue;
        }
        for i in j + 1..n {
            let factor = f[i * n + j] / piv;
            f[i * n + j] = factor;
            for c in j + 1..n {
                f[i * n + c] -= factor * f[j * n + c];
            }
        }
    }
    (f, perm, odd)
}

/// `(sign, log|det|)` of the `n x n` matrix `a`: sign 0 and `-inf` for a
/// singular matrix.
pub(super) fn slogdet(a: &[f64], n: usize) -> (f64, f64) {
    let (f, _, odd) = lu(a, n);
    let mut sign = if odd { -1.0 } else { 1.0 };
    let mut log = 0.0;
    for i in 0..n {
        let d = f[i * n + i];
        sign *= if d > 0.0 {
            1.0
        } else if d < 0.0 {
            -1.0
        } else {
            0.0
        };
        log += d.abs().ln();
    }
    (sign, log)
}

/// The inverse of the `n x n` matrix `a`, or `None` when it is singular
/// (an exactly zero pivot).
pub(super) fn inverse(a: &[f64], n: usize) -> Option<Vec<f64>> {
    let (f, perm, _) = lu(a, n);
    if (0..n).any(|i| f[i * n + i] == 0.0) {
        return None;
    }
    let mut inv = vec![0.0; n * n];
    for col in 0..n {
        // solve L·U·x = P·e_col
        let mut x: Vec<f64> = perm.iter().map(|&p| if p == col { 1.0 } else { 0.0 }).collect();
        for r in 0..n {
            for k in 0..r {
                x[r] -= f[r * n + k] * x[k];
            }
        }
        for r in (0..n).rev() {
            for k in r + 1..n {
                x[r] -= f[r * n + k] * x[k];
            }
            x[r] /= f[r * n + r];
        }
        for r in 0..n {
            inv[r * n + col] = x[r];
        }
    }
    Some(inv)
}

/// LQ factorization of the `m x n` matrix `a` (`m <= n`) by Householder
/// reflections with LAPACK's sign convention (`gelqf` then `orglq`): each
/// reflection maps its row's leading element to `-sign(alpha)·norm`, and
/// none is applied where the rest of the row is already zero. Returns `q`
/// (`m x n`, orthonormal rows) and `l` (`m x m`, lower triangular) with
/// `a = l·q`.
pub(super) fn lq(a: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut w = a.to_vec();
    // reflections H_i = I - tau_i·v_i·v_iᵀ acting on columns i..n
    let mut reflections: Vec<(f64, Vec<f64>)> = Vec::with_capacity(m);
    for i in 0..m {
        let alpha = w[i * n + i];
        let xnorm = (i + 1..n).map(|c| w[i * n + c].powi(2)).sum::<f64>().sqrt();
        if xnorm == 0.0 {
            reflections.push((0.0, Vec::new()));
            continue;
        }
        let beta = -alpha.hypot(xnorm).copysign(alpha);
        let tau = (beta - alpha) / beta;
        let scale = 1.0 / (alpha - beta);
        let mut v = Vec::with_capacity(n - i);
        v.push(1.0);
        v.extend((i + 1..n).map(|c| w[i * n + c] * scale));
        w[i * n + i] = beta;
        for c in i + 1..n {
            w[i * n + c] = 0.0;
        }
        for r in i + 1..m {
            let s: f64 = v.iter().enumerate().map(|(j, vj)| w[r * n + i + j] * vj).sum();
            for (j, vj) in v.iter().enumerate() {
                w[r * n + i + j] -= tau * s * vj;
            }
        }
        reflections.push((tau, v));
    }
    let mut l = vec![0.0; m * m];
    for r in 0..m {
        for c in 0..=r {
            l[r * m + c] = w[r * n + c];
        }
    }
    // q = [I_m 0] · H_{m-1} ··· H_0
    let mut q = vec![0.0; m * n];
    for r in 0..m {
        q[r * n + r] = 1.0;
    }
    for (i, (tau, v)) in reflections.iter().enumerate().rev() {
        if *tau == 0.0 {
            continue;
        }
        for r in 0..m {
            let s: f64 = v.iter().enumerate().map(|(j, vj)| q[r * n + i + j] * vj).sum();
            for (j, vj) in v.iter().enumerate() {
                q[r * n + i + j] -= tau * s * vj;
            }
        }
    }
    (q, l)
}

/// Eigen-decomposition of the symmetric `n x n` matrix read from the lower
/// triangle of `a`, by cyclic Jacobi rotations: returns `u` (`n x n`, row
/// `i` the eigenvector of eigenvalue `i`) and the eigenvalues in ascending
/// order, so that `a = uᵀ·diag(lambda)·u`. Each row's sign makes its
/// entry of largest magnitude positive (the first one on ties), as MXNet
/// does.
pub(super) fn sym_eig(a: &[f64], n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut s = a.to_vec();
    mirror(&mut s, n, true);
    // v: columns are the eigenvectors
    let mut v = vec![0.0; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    let total: f64 = s.iter().map(|x| x * x).sum();
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|r| (0..n).map(move |c| (r, c)))
            .filter(|(r, c)| r != c)
            .map(|(r, c)| s[r * n + c].powi(2))
            .sum();
        if off <= f64::EPSILON * f64::EPSILON * total || off == 0.0 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = s[p * n + q];
                if apq == 0.0 {
                    continue;
                }
                let theta = (s[q * n + q] - s[p * n + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let sn = t * c;
                for k in 0..n {
                    let (skp, skq) = (s[k * n + p], s[k * n + q]);
                    s[k * n + p] = c * skp - sn * skq;
                    s[k * n + q] = sn * skp + c * skq;
                }
                for k in 0..n {
                    let (spk, sqk) = (s[p * n + k], s[q * n + k]);
                    s[p * n + k] = c * spk - sn * sqk;
                    s[q * n + k] = sn * spk + c * sqk;
                }
                for k in 0..n {
                    let (vkp, vkq) = (v[k * n + p], v[k * n + q]);
                    v[k * n + p] = c * vkp - sn * vkq;
                    v[k * n + q] = sn * vkp + c * vkq;
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| s[i * n + i].total_cmp(&s[j * n + j]));
    let lambda: Vec<f64> = order.iter().map(|&i| s[i * n + i]).collect();
    let mut u = vec![0.0; n * n];
    for (row, &i) in order.iter().enumerate() {
        let mut best = 0;
        for k in 1..n {
            if v[k * n + i].abs() > v[best * n + i].abs() {
                best = k;
            }
        }
        let flip = if v[best * n + i] < 0.0 { -1.0 } else { 1.0 };
        for k in 0..n {
            u[row * n + k] = flip * v[k * n + i];
        }
    }
    (u, lambda)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f64], b: &[f64], tol: f64) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= tol, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn products_solves_and_factors() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        close(&matmul((&a, 2, 3), false, (&a, 2, 3), true, 1.0), &[14.0, 32.0, 32.0, 77.0], 0.0);
        close(&matmul((&a, 2, 3), true, (&a, 2, 3), false, 2.0)[..3], &[34.0, 44.0, 54.0], 0.0);
        let l = [2.0, 0.0, 1.0, 3.0];
        let b = [4.0, 2.0, 7.0, 9.0];
        // l·x = b
        let x = solve_left(&l, 2, true, &b, 2);
        close(&matmul((&l, 2, 2), false, (&x, 2, 2), false, 1.0), &b, 1e-12);
        // x·lᵀ = b
        let (t, lower) = op_triangle(&l, 2, true, true);
        let x = trsm((&t, lower), 2, (&b, 2, 2), true, 1.0);
        close(&matmul((&x, 2, 2), false, (&l, 2, 2), true, 1.0), &b, 1e-12);
        let spd = [4.0, 2.0, 2.0, 3.0];
        let c = cholesky_lower(&spd, 2).unwrap();
        close(&matmul((&c, 2, 2), false, (&c, 2, 2), true, 1.0), &spd, 1e-12);
        assert!(cholesky_lower(&[1.0, 2.0, 2.0, 1.0], 2).is_none());
        let inv = inverse(&spd, 2).unwrap();
        close(&matmul((&inv, 2, 2), false, (&spd, 2, 2), false, 1.0), &[1.0, 0.0, 0.0, 1.0], 1e-12);
        assert!(inverse(&[1.0, 2.0, 2.0, 4.0], 2).is_none());
        let (s, l) = slogdet(&[0.0, 1.0, 1.0, 0.0], 2);
        assert_eq!((s, l), (-1.0, 0.0));
    }

    #[test]
    fn lq_and_eig_match_lapack_conventions() {
        // MXNet 1.9.1: gelqf([[1, 2, 3], [4, 5, 7]])
        let (q, l) = lq(&[1.0, 2.0, 3.0, 4.0, 5.0, 7.0], 2, 3);
        close(&l, &[-3.741657, 0.0, -9.354143, 1.581139], 1e-6);
        close(&q, &[-0.2672612, -0.5345225, -0.8017837, 0.9486833, 0.0, -0.3162278], 1e-6);
        // MXNet 1.9.1: syevd of a 3x3 symmetric matrix
        let (u, lam) = sym_eig(&[2.0, 1.0, 0.5, 1.0, 3.0, 0.2, 0.5, 0.2, 1.0], 3);
        close(&lam, &[0.767417, 1.543653, 3.68893], 1e-6);
        close(&u[..3], &[-0.459711, 0.127175, 0.878915], 1e-6);
        close(&u[6..], &[0.537764, 0.827474, 0.161543], 1e-6);
    }
}
