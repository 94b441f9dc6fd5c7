//! Tests of `_contrib_PSROIPooling` and `_contrib_RROIAlign`: values worked
//! out by hand and against straightforward references written here,
//! gradients by central differences, dtypes and errors.

use super::tests::{arr, sample};
use oxnet_core::check::{compare, OpChecker};
use oxnet_core::{autograd, invoke1, AttrValue, DType, NDArray, Req};

const PS: &str = "_contrib_PSROIPooling";
const RR: &str = "_contrib_RROIAlign";

fn rows<const K: usize>(rows: &[[f64; K]], dtype: DType) -> NDArray {
    arr(rows.iter().flatten().copied().collect(), &[rows.len(), K], dtype)
}

/// Channel `c`, row `h`, column `w` of image `n` holds `1000 n + 100 c + 10 h + w`.
fn coded(shape: [usize; 4], dtype: DType) -> NDArray {
    let [n, c, h, w] = shape;
    let mut v = Vec::with_capacity(n * c * h * w);
    for b in 0..n {
        for ch in 0..c {
            for r in 0..h {
                for col in 0..w {
                    v.push((1000 * b + 100 * ch + 10 * r + col) as f64);
                }
            }
        }
    }
    arr(v, &shape, dtype)
}

fn ps_attrs(scale: &str, od: &str, k: &str, g: Option<&str>) -> Vec<(&'static str, AttrValue)> {
    let mut a = vec![("spatial_scale", scale.into()), ("output_dim", od.into()), ("pooled_size", k.into())];
    if let Some(g) = g {
        a.push(("group_size", g.into()));
    }
    a
}

fn ps(x: &NDArray, r: &NDArray, attrs: &[(&'static str, AttrValue)]) -> oxnet_core::Result<NDArray> {
    invoke1(PS, &[x, r], attrs)
}

/// A deterministic stream of numbers in [0, 1).
struct Stream(u64);

impl Stream {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

// ---------------------------------------------------------------------------
// PSROIPooling

/// Position-sensitive average pooling, written out directly from the
/// description of MXNet's CPU kernel.
fn psroi_reference(
    x: &[f64],
    [_, c, h, w]: [usize; 4],
    rois: &[[f64; 5]],
    scale: f64,
    (od, k, g): (usize, usize, usize),
) -> Vec<f64> {
    let mut out = Vec::new();
    for r in rois {
        let b = r[0] as usize;
        let (sw, sh) = (r[1].round() * scale, r[2].round() * scale);
        let (ew, eh) = ((r[3].round() + 1.0) * scale, (r[4].round() + 1.0) * scale);
        let bh = (eh - sh).max(0.1) / k as f64;
        let bw = (ew - sw).max(0.1) / k as f64;
        for ctop in 0..od {
            for ph in 0..k {
                for pw in 0..k {
                    let clip = |v: f64, n: usize| (v as i64).clamp(0, n as i64) as usize;
                    let h0 = clip((ph as f64 * bh + sh).floor(), h);
                    let h1 = clip(((ph + 1) as f64 * bh + sh).ceil(), h);
                    let w0 = clip((pw as f64 * bw + sw).floor(), w);
                    let w1 = clip(((pw + 1) as f64 * bw + sw).ceil(), w);
                    let ch = (ctop * g + (ph * g / k).min(g - 1)) * g + (pw * g / k).min(g - 1);
                    let (mut sum, mut n) = (0.0, 0);
                    for y in h0..h1 {
                        for xx in w0..w1 {
                            sum += x[((b * c + ch) * h + y) * w + xx];
                            n += 1;
                        }
                    }
                    out.push(if n == 0 { 0.0 } else { sum / n as f64 });
                }
            }
        }
    }
    out
}

#[test]
fn psroi_bins_worked_out_by_hand() {
    // one class, 2 x 2 bins and groups: bin (i, j) reads channel 2 i + j
    let x = coded([1, 4, 4, 4], DType::F64);
    let attrs = ps_attrs("1", "1", "2", None);
    let y = |r: [f64; 5], attrs: &[(&'static str, AttrValue)]| {
        ps(&x, &rows(&[r], DType::F64), attrs).unwrap().to_vec::<f64>().unwrap()
    };
    // the whole 4 x 4 plane: bins of 2 x 2 positions
    assert_eq!(y([0., 0., 0., 3., 3.], &attrs), [5.5, 107.5, 225.5, 327.5]);
    // rounded corners (1, 1) and (5, 7), scaled by 0.5: start 0.5, extent
    // 2.5 x 3.5; rows [0, 3) and [2, 4), columns [0, 2) and [1, 3)
    let half = ps_attrs("0.5", "1", "2", Some("2"));
    assert_eq!(y([0., 0.6, 1.4, 5.4, 6.6], &half), [10.5, 111.5, 225.5, 326.5]);
    // a region past the data is clipped: rows and columns [0, 3) and [3, 4)
    assert_eq!(y([0., -5., -5., 10., 10.], &attrs), [11.0, 113.0, 231.0, 333.0]);
    // a region wholly off the data has empty bins
    assert_eq!(y([0., 6., 6., 9., 9.], &attrs), [0.0; 4]);
    // group_size 1: every bin reads the channel of its class
    let x1 = coded([1, 2, 4, 4], DType::F64);
    let r = rows(&[[0., 0., 0., 3., 3.]], DType::F64);
    let v = ps(&x1, &r, &ps_attrs("1", "2", "2", Some("1"))).unwrap();
    assert_eq!(v.shape(), &[1, 2, 2, 2]);
    assert_eq!(v.to_vec::<f64>().unwrap(), [5.5, 7.5, 25.5, 27.5, 105.5, 107.5, 125.5, 127.5]);
}

#[test]
fn psroi_gradient_spreads_each_bin_evenly() {
    let x = coded([1, 4, 4, 4], DType::F64);
    let r = rows(&[[0., 0., 0., 2., 3.]], DType::F64);
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _rec = autograd::record();
        ps(&x, &r, &ps_attrs("1", "1", "2", None)).unwrap()
    };
    let dy = arr(vec![1.0, 2.0, 3.0, 4.0], &[1, 1, 2, 2], DType::F64);
    autograd::backward(&[&y], &[Some(&dy)], Default::default()).unwrap();
    let g = x.grad().unwrap().to_vec::<f64>().unwrap();
    // region 3 x 4: bin height 2, width 1.5; columns [0, 2) and [1, 3)
    let mut want = vec![0.0; 64];
    for (ch, (rows, cols)) in [(0..2, 0..2), (0..2, 1..3), (2..4, 0..2), (2..4, 1..3)].into_iter().enumerate()
    {
        for r in rows {
            for c in cols.clone() {
                want[ch * 16 + r * 4 + c] = (ch + 1) as f64 / 4.0;
            }
        }
    }
    assert_eq!(g, want);
}

/// Regions like those of MXNet's test (random corners in a 224 x 168
/// image), plus one past the borders, a tiny one and one off the data.
fn random_boxes(count: usize, batch: usize, seed: u64) -> Vec<[f64; 5]> {
    let mut s = Stream(seed);
    let mut out: Vec<[f64; 5]> = (0..count)
        .map(|i| {
            let (a, b) = (s.next() * 223.0, s.next() * 223.0);
            let (c, d) = (s.next() * 167.0, s.next() * 167.0);
            [(i % batch) as f64, a.min(b), c.min(d), a.max(b), c.max(d)]
        })
        .collect();
    out.push([0., -40.3, -20.2, 250.7, 300.1]);
    out.push([(batch - 1) as f64, 100.2, 50.4, 100.4, 50.6]);
    out.push([0., 300.0, 200.0, 320.0, 220.0]);
    out
}

#[test]
fn psroi_matches_the_reference() {
    let scale = 0.0625;
    for (od, k, g) in [(2, 3, 3), (3, 2, 2), (2, 3, 1), (1, 2, 3), (2, 7, 7)] {
        let shape = [2, od * g * g, 10, 14];
        let xv = sample(&shape, od + k);
        let boxes = random_boxes(5, 2, (od * 10 + k) as u64);
        let want = psroi_reference(&xv, shape, &boxes, scale, (od, k, g));
        let attrs = ps_attrs("0.0625", &od.to_string(), &k.to_string(), Some(&g.to_string()));
        let key = format!("od={od} k={k} g={g}");
        for (dt, tol) in [(DType::F64, 1e-12), (DType::F32, 1e-5)] {
            let y = ps(&arr(xv.clone(), &shape, dt), &rows(&boxes, dt), &attrs).unwrap();
            assert_eq!((y.shape(), y.dtype()), (&[boxes.len(), od, k, k][..], dt), "{key}");
            compare(PS, &format!("{key} {dt}"), &y.to_vec::<f64>().unwrap(), &want, tol, tol).unwrap();
        }
        assert!(want.iter().any(|&v| v != 0.0) && want.contains(&0.0), "{key}: {want:?}");
    }
    // float16: the data rounded to float16, whole-number corners
    let shape = [1, 18, 14, 14];
    let x16 = arr(sample(&shape, 3), &shape, DType::F16);
    let boxes = [[0., 10., 22., 161., 173.], [0., 20., 15., 154., 160.]];
    let want = psroi_reference(&x16.to_vec::<f64>().unwrap(), shape, &boxes, scale, (2, 3, 3));
    let y = ps(&x16, &rows(&boxes, DType::F16), &ps_attrs("0.0625", "2", "3", None)).unwrap();
    assert_eq!(y.dtype(), DType::F16);
    compare(PS, "float16", &y.to_vec::<f64>().unwrap(), &want, 2e-3, 2e-3).unwrap();
}

#[test]
fn psroi_gradients_match_central_differences() {
    for (od, k, g, scale) in [(2, 2, 2, "0.0625"), (1, 3, 2, "0.25"), (2, 3, 1, "0.5"), (1, 2, 3, "0.0625")] {
        let shape = [2, od * g * g, 5, 6];
        let x = arr(sample(&shape, 1), &shape, DType::F64);
        let boxes = [[0., 3., 5., 60., 70.], [1., -20., 10., 40., 90.], [1., 30., 20., 33., 21.]];
        OpChecker::new(PS, &[x, rows(&boxes, DType::F64)])
            .attr("spatial_scale", scale)
            .attr("output_dim", od as i64)
            .attr("pooled_size", k as i64)
            .attr("group_size", g as i64)
            .no_grad(&[1])
            .run()
            .unwrap_or_else(|e| panic!("od={od} k={k} g={g}: {e}"));
    }
}

#[test]
fn psroi_dtypes_agree_and_rois_take_a_zero_gradient() {
    let shape = [1, 18, 14, 14];
    let xv: Vec<f64> = arr(sample(&shape, 5), &shape, DType::F16).to_vec().unwrap();
    let boxes = [[0., 10., 22., 161., 173.], [0., 20., 15., 154., 160.]];
    let attrs = ps_attrs("0.0625", "2", "3", None);
    let dyv: Vec<f64> = (0..36).map(|i| (i % 7) as f64 / 4.0 - 0.5).collect();
    let run = |dt: DType| {
        let (x, r) = (arr(xv.clone(), &shape, dt), rows(&boxes, dt));
        x.attach_grad(Req::Write).unwrap();
        r.attach_grad(Req::Write).unwrap();
        let y = {
            let _rec = autograd::record();
            ps(&x, &r, &attrs).unwrap()
        };
        let dy = arr(dyv.clone(), &[2, 2, 3, 3], dt);
        autograd::backward(&[&y], &[Some(&dy)], Default::default()).unwrap();
        assert_eq!(x.grad().unwrap().dtype(), dt);
        assert!(r.grad().unwrap().to_vec::<f64>().unwrap().iter().all(|&g| g == 0.0), "{dt}");
        (y.to_vec::<f64>().unwrap(), x.grad().unwrap().to_vec::<f64>().unwrap())
    };
    let (y64, g64) = run(DType::F64);
    assert!(g64.iter().any(|&g| g != 0.0));
    for (dt, tol) in [(DType::F32, 1e-6), (DType::F16, 3e-3)] {
        let (y, g) = run(dt);
        compare(PS, &format!("{dt} output"), &y, &y64, tol, tol).unwrap();
        compare(PS, &format!("{dt} gradient"), &g, &g64, tol, tol).unwrap();
    }
}

#[test]
fn psroi_errors_name_the_operator_and_the_argument() {
    let x = coded([1, 8, 4, 4], DType::F32);
    let good = rows(&[[0., 0., 0., 3., 3.]], DType::F32);
    let attrs = ps_attrs("1", "2", "2", None);
    let err = |x: &NDArray, r: &NDArray, attrs: &[(&'static str, AttrValue)]| {
        let e = ps(x, r, attrs).unwrap_err().to_string();
        assert!(e.contains(PS), "{e}");
        e
    };
    assert_eq!(ps(&x, &good, &attrs).unwrap().shape(), &[1, 2, 2, 2]);
    let e = err(&x, &arr(vec![0.; 8], &[2, 4], DType::F32), &attrs);
    assert!(e.contains("rois") && e.contains("(2, 4)") && e.contains("(num_rois, 5)"), "{e}");
    let e = err(&x, &arr(vec![0.; 5], &[5], DType::F32), &attrs);
    assert!(e.contains("rois") && e.contains("(5,)"), "{e}");
    // 8 channels for output_dim 2 and group_size 3 (needs 18)
    let e = err(&x, &good, &ps_attrs("1", "2", "2", Some("3")));
    assert!(e.contains("output_dim") && e.contains("group_size") && e.contains("18"), "{e}");
    assert!(e.contains("(1, 8, 4, 4)"), "{e}");
    let e = err(&coded([1, 6, 4, 4], DType::F32), &good, &attrs);
    assert!(e.contains("(1, 6, 4, 4)") && e.contains('8'), "{e}");
    let e = err(&arr(vec![0.; 32], &[8, 4], DType::F32), &good, &attrs);
    assert!(e.contains("data") && e.contains("4-d") && e.contains("(8, 4)"), "{e}");
    for bad in [1.0, 7.0, -1.0] {
        let e = err(&x, &rows(&[[0., 0., 0., 1., 1.], [bad, 0., 0., 3., 3.]], DType::F32), &attrs);
        assert!(e.contains("batch_index") && e.contains(&format!("{bad}")) && e.contains("row 1"), "{e}");
    }
    let e = err(&x, &rows(&[[f64::NAN, 0., 0., 3., 3.]], DType::F32), &attrs);
    assert!(e.contains("batch_index") && e.contains("NaN"), "{e}");
    for (name, bad) in
        [("pooled_size", ps_attrs("1", "2", "0", None)), ("output_dim", ps_attrs("1", "0", "2", None))]
    {
        let e = err(&x, &good, &bad);
        assert!(e.contains(name) && e.contains("positive"), "{e}");
    }
    let e = err(&x, &good, &ps_attrs("1", "2", "2", Some("-1")));
    assert!(e.contains("group_size") && e.contains("-1"), "{e}");
    let e = err(&x, &good, &ps_attrs("1.5", "2", "2", None));
    assert!(e.contains("spatial_scale") && e.contains("1.5"), "{e}");
    let e = invoke1(PS, &[&x, &good], &[("spatial_scale", "1".into()), ("pooled_size", "2".into())])
        .unwrap_err()
        .to_string();
    assert!(e.contains("output_dim"), "{e}");
    let e = err(&x, &rows(&[[0., 0., 0., 3., 3.]], DType::F64), &attrs);
    assert!(e.contains("dtype"), "{e}");
}

#[test]
fn psroi_empty_inputs() {
    let attrs = ps_attrs("1", "2", "2", None);
    let x = coded([1, 8, 4, 4], DType::F32);
    assert_eq!(ps(&x, &arr(vec![], &[0, 5], DType::F32), &attrs).unwrap().shape(), &[0, 2, 2, 2]);
    let flat = arr(vec![], &[1, 8, 0, 4], DType::F32);
    let y = ps(&flat, &rows(&[[0., 0., 0., 2., 2.]], DType::F32), &attrs).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), [0.0; 8]);
    let huge = rows(&[[0., -1e30, f64::NAN, 1e30, 1e18]], DType::F64);
    let y = ps(&coded([1, 8, 4, 4], DType::F64), &huge, &attrs).unwrap();
    assert_eq!(y.shape(), &[1, 2, 2, 2]);
}

// ---------------------------------------------------------------------------
// RROIAlign

fn rr(x: &NDArray, r: &NDArray, pooled: &str, scale: &str, ratio: i64) -> oxnet_core::Result<NDArray> {
    let attrs =
        [("pooled_size", pooled.into()), ("spatial_scale", scale.into()), ("sampling_ratio", ratio.into())];
    invoke1(RR, &[x, r], &attrs)
}

/// Bilinear interpolation of an `h` x `w` plane with MXNet's border rules,
/// written as a weighted sum over the (clamped) neighbouring positions.
fn bilinear(plane: &[f64], h: usize, w: usize, y: f64, x: f64) -> f64 {
    if y < -1.0 || y > h as f64 || x < -1.0 || x > w as f64 {
        return 0.0;
    }
    // the two neighbours along one axis and the weight of the far one
    let axis = |v: f64, n: usize| {
        let v = v.clamp(0.0, (n - 1) as f64);
        let lo = v.floor() as usize;
        (lo, (lo + 1).min(n - 1), v - lo as f64)
    };
    let ((r0, r1, fy), (c0, c1, fx)) = (axis(y, h), axis(x, w));
    let mut total = 0.0;
    for (r, wy) in [(r0, 1.0 - fy), (r1, fy)] {
        for (c, wx) in [(c0, 1.0 - fx), (c1, fx)] {
            total += wy * wx * plane[r * w + c];
        }
    }
    total
}

/// Rotated ROI align, written out directly.
fn rroi_reference(
    x: &[f64],
    [_, c, h, w]: [usize; 4],
    rois: &[[f64; 6]],
    [ph, pw]: [usize; 2],
    scale: f64,
    ratio: i64,
) -> Vec<f64> {
    let mut out = Vec::new();
    for r in rois {
        let b = r[0] as usize;
        let (cx, cy) = (r[1] * scale, r[2] * scale);
        let (rw, rh) = ((r[3] * scale).max(1.0), (r[4] * scale).max(1.0));
        let (sin, cos) = r[5].to_radians().sin_cos();
        let (bh, bw) = (rh / ph as f64, rw / pw as f64);
        let (gh, gw) = if ratio > 0 {
            (ratio as usize, ratio as usize)
        } else {
            (bh.ceil() as usize, bw.ceil() as usize)
        };
        for ch in 0..c {
            let plane = &x[(b * c + ch) * h * w..][..h * w];
            for i in 0..ph {
                for j in 0..pw {
                    let mut sum = 0.0;
                    for iy in 0..gh {
                        let yy = -rh / 2.0 + (i as f64 + (iy as f64 + 0.5) / gh as f64) * bh;
                        for ix in 0..gw {
                            let xx = -rw / 2.0 + (j as f64 + (ix as f64 + 0.5) / gw as f64) * bw;
                            sum += bilinear(plane, h, w, yy * cos - xx * sin + cy, xx * cos + yy * sin + cx);
                        }
                    }
                    out.push(sum / (gh * gw) as f64);
                }
            }
        }
    }
    out
}

#[test]
fn rroi_values_worked_out_by_hand() {
    // 10 h + w is linear: inside the data a bilinear sample is exact
    let x = coded([1, 1, 4, 5], DType::F64);
    let one = |r: [f64; 6], pooled: &str, ratio: i64| {
        rr(&x, &rows(&[r], DType::F64), pooled, "1", ratio).unwrap().to_vec::<f64>().unwrap()
    };
    // no rotation: 4 x 2 region centred at (2.5, 1.5), bins 2 wide; samples
    // at x = 1, 2 | 3, 4 and y = 1, 2
    assert_eq!(one([0., 2.5, 1.5, 4., 2., 0.], "(1, 2)", 2), [16.5, 18.5]);
    // 90 degrees: x = yy + cx, y = cy - xx
    let y = one([0., 2., 1.5, 2., 2., 90.], "(2, 2)", 1);
    compare(RR, "90 degrees", &y, &[21.5, 11.5, 22.5, 12.5], 0.0, 1e-12).unwrap();
    // 180 degrees mirrors both axes
    let y = one([0., 2., 1.5, 2., 2., 180.], "(2, 2)", 1);
    compare(RR, "180 degrees", &y, &[22.5, 21.5, 12.5, 11.5], 0.0, 1e-12).unwrap();
    // borders (one sample per region of at least 1 x 1): past the last
    // column within one position reads the last column, before the first
    // within one the first, further off 0
    let border = |cx: f64, cy: f64| one([0., cx, cy, 0.2, 0.3, 0.], "(1, 1)", -1)[0];
    assert_eq!(border(4.5, 1.0), 14.0);
    assert_eq!(border(5.0, 1.0), 14.0);
    assert_eq!(border(-0.5, 1.0), 10.0);
    assert_eq!(border(-1.0, 2.5), 25.0);
    assert_eq!(border(5.5, 1.0), 0.0);
    assert_eq!(border(-1.5, 1.0), 0.0);
    assert_eq!(border(2.0, 4.5), 0.0);
    assert_eq!(border(2.0, 3.5), 32.0);
    // an off-data sample still counts: half the samples off gives half
    assert_eq!(one([0., 5.0, 1.0, 2.0, 1.0, 0.], "(1, 1)", 2), [(14.0 + 14.0) / 4.0]);
}

fn random_rotated(count: usize, batch: usize, seed: u64) -> Vec<[f64; 6]> {
    let mut s = Stream(seed);
    let mut out: Vec<[f64; 6]> = (0..count)
        .map(|i| {
            let v: [f64; 5] = std::array::from_fn(|_| s.next());
            [(i % batch) as f64, v[0] * 224.0, v[1] * 224.0, v[2] * 224.0, v[3] * 224.0, v[4] * 180.0]
        })
        .collect();
    out.push([0., 100.0, 120.0, 3.0, 2.0, -30.0]);
    out
}

#[test]
fn rroi_matches_the_reference() {
    let shape = [3, 2, 16, 16];
    let xv: Vec<f64> = (0..shape.iter().product::<usize>()).map(|i| i as f64).collect();
    let boxes = random_rotated(7, 3, 9);
    let scale = 16.0 / 224.0;
    for ratio in [-1, 0, 2] {
        let want = rroi_reference(&xv, shape, &boxes, [3, 4], scale as f32 as f64, ratio);
        assert!(want.iter().any(|&v| v != 0.0));
        for (dt, tol) in [(DType::F64, 1e-9), (DType::F32, 1e-4)] {
            let y = rr(&arr(xv.clone(), &shape, dt), &rows(&boxes, dt), "(3, 4)", &scale.to_string(), ratio)
                .unwrap();
            assert_eq!((y.shape(), y.dtype()), (&[boxes.len(), 2, 3, 4][..], dt));
            compare(RR, &format!("{dt} ratio {ratio}"), &y.to_vec::<f64>().unwrap(), &want, tol, tol)
                .unwrap();
        }
    }
    // float16: small values, whole-number regions
    let shape = [1, 2, 6, 7];
    let x16 = arr(sample(&shape, 2), &shape, DType::F16);
    let boxes = [[0., 3., 2., 4., 3., 30.], [0., 1., 4., 6., 2., 135.]];
    let want = rroi_reference(&x16.to_vec::<f64>().unwrap(), shape, &boxes, [2, 2], 1.0, -1);
    let y = rr(&x16, &rows(&boxes, DType::F16), "(2, 2)", "1", -1).unwrap();
    assert_eq!(y.dtype(), DType::F16);
    compare(RR, "float16", &y.to_vec::<f64>().unwrap(), &want, 5e-3, 5e-3).unwrap();
}

#[test]
fn rroi_has_no_gradient() {
    let x = coded([1, 1, 4, 5], DType::F32);
    let r = rows(&[[0., 2., 2., 2., 2., 10.]], DType::F32);
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _rec = autograd::record();
        rr(&x, &r, "(2, 2)", "1", -1).unwrap()
    };
    let e = y.backward().unwrap_err().to_string();
    assert!(e.contains("not differentiable") && e.contains(RR), "{e}");
    // the forward pass alone checks out
    OpChecker::new(RR, &[coded([2, 2, 4, 5], DType::F64), rows(&[[1., 2., 2., 3., 2., 30.]], DType::F64)])
        .attr("pooled_size", "(2, 2)")
        .attr("spatial_scale", 1.0)
        .skip_grad()
        .run()
        .unwrap();
}

#[test]
fn rroi_errors_name_the_operator_and_the_argument() {
    let x = coded([2, 2, 4, 4], DType::F32);
    let good = rows(&[[0., 2., 2., 2., 2., 0.]], DType::F32);
    let err = |x: &NDArray, r: &NDArray, pooled: &str, scale: &str, ratio: i64| {
        let e = rr(x, r, pooled, scale, ratio).unwrap_err().to_string();
        assert!(e.contains(RR), "{e}");
        e
    };
    assert_eq!(rr(&x, &good, "(2, 3)", "1", -1).unwrap().shape(), &[1, 2, 2, 3]);
    let e = err(&x, &rows(&[[0., 0., 0., 3., 3.]], DType::F32), "(2, 2)", "1", -1);
    assert!(e.contains("rois") && e.contains("(1, 5)") && e.contains("(num_rois, 6)"), "{e}");
    assert!(e.contains("theta_degrees"), "{e}");
    let e = err(&arr(vec![0.; 16], &[1, 4, 4], DType::F32), &good, "(2, 2)", "1", -1);
    assert!(e.contains("data") && e.contains("4-d") && e.contains("(1, 4, 4)"), "{e}");
    let e = err(&x, &rows(&[[2., 2., 2., 2., 2., 0.]], DType::F32), "(2, 2)", "1", -1);
    assert!(e.contains("batch_index") && e.contains('2') && e.contains("row 0"), "{e}");
    let e = err(&x, &rows(&[[0., 2., 2., 1e30, 2., 0.]], DType::F32), "(2, 2)", "1", -1);
    assert!(e.contains("sampling_ratio") && e.contains("row 0"), "{e}");
    let e = err(&x, &good, "(2, 2)", "1", 1 << 20);
    assert!(e.contains("sampling_ratio"), "{e}");
    let e = err(&x, &good, "(2,)", "1", -1);
    assert!(e.contains("pooled_size") && e.contains("2 entries"), "{e}");
    let e = err(&x, &good, "(0, 2)", "1", -1);
    assert!(e.contains("pooled_size") && e.contains("positive"), "{e}");
    let e = err(&x, &good, "(2, 2)", "-0.5", -1);
    assert!(e.contains("spatial_scale") && e.contains("-0.5"), "{e}");
    let e = err(&x, &rows(&[[0., 2., 2., 2., 2., 0.]], DType::F64), "(2, 2)", "1", -1);
    assert!(e.contains("dtype"), "{e}");
    // an empty batch of regions, and a flat plane
    assert_eq!(rr(&x, &arr(vec![], &[0, 6], DType::F32), "(2, 2)", "1", -1).unwrap().shape(), &[0, 2, 2, 2]);
    let flat = arr(vec![], &[1, 2, 0, 4], DType::F32);
    assert_eq!(rr(&flat, &good, "(1, 1)", "1", -1).unwrap().to_vec::<f32>().unwrap(), [0.0; 2]);
}
