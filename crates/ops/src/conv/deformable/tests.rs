//! Tests of `_contrib_DeformableConvolution` against direct loops that
//! read the data bilinearly, against `Convolution` where the offsets are
//! whole numbers, by central differences, and on malformed calls.

use oxnet_core::check::{assert_close, compare, OpChecker};
use oxnet_core::shape::Shape;
use oxnet_core::{invoke1, registry, AttrValue, DType, Device, NDArray};

const OP: &str = "_contrib_DeformableConvolution";

fn rand(shape: &[usize]) -> NDArray {
    NDArray::random_uniform(-1.0, 1.0, shape, DType::F64).unwrap()
}

fn pair(v: [usize; 2]) -> AttrValue {
    AttrValue::Ints(v.iter().map(|&x| x as i64).collect())
}

/// One call's sizes and attributes.
#[derive(Debug, Clone)]
struct Case {
    batch: usize,
    channels: usize,
    size: [usize; 2],
    filters: usize,
    groups: usize,
    dgroups: usize,
    kernel: [usize; 2],
    stride: [usize; 2],
    dilate: [usize; 2],
    pad: [usize; 2],
    no_bias: bool,
}

/// A 3x3 case on 4 channels of `size`, 6 filters.
fn case(size: [usize; 2]) -> Case {
    Case {
        batch: 2,
        channels: 4,
        size,
        filters: 6,
        groups: 1,
        dgroups: 1,
        kernel: [3, 3],
        stride: [1, 1],
        dilate: [1, 1],
        pad: [0, 0],
        no_bias: false,
    }
}

impl Case {
    fn out(&self) -> [usize; 2] {
        [0, 1].map(|a| {
            (self.size[a] + 2 * self.pad[a] - self.dilate[a] * (self.kernel[a] - 1) - 1) / self.stride[a] + 1
        })
    }

    fn offset_shape(&self) -> Vec<usize> {
        let [ho, wo] = self.out();
        vec![self.batch, self.dgroups * 2 * self.kernel[0] * self.kernel[1], ho, wo]
    }

    /// The attributes of `Convolution` (all but num_deformable_group).
    fn conv_attrs(&self) -> Vec<(&'static str, AttrValue)> {
        vec![
            ("kernel", pair(self.kernel)),
            ("stride", pair(self.stride)),
            ("dilate", pair(self.dilate)),
            ("pad", pair(self.pad)),
            ("num_filter", self.filters.into()),
            ("num_group", self.groups.into()),
            ("no_bias", self.no_bias.into()),
        ]
    }

    fn attrs(&self) -> Vec<(&'static str, AttrValue)> {
        let mut a = self.conv_attrs();
        a.push(("num_deformable_group", self.dgroups.into()));
        a
    }

    /// Random data, weight and bias around the given offsets.
    fn inputs(&self, offsets: NDArray) -> Vec<NDArray> {
        assert_eq!(offsets.shape(), &self.offset_shape()[..]);
        let data = rand(&[self.batch, self.channels, self.size[0], self.size[1]]);
        let weight = rand(&[self.filters, self.channels / self.groups, self.kernel[0], self.kernel[1]]);
        let mut v = vec![data, offsets, weight];
        if !self.no_bias {
            v.push(rand(&[self.filters]));
        }
        v
    }

    /// Offsets with whole parts in `-spread..=spread` and fractional parts
    /// in [0.2, 0.8], so that no tap reads at a whole pixel.
    fn fractional(&self, spread: i64) -> NDArray {
        let shape = self.offset_shape();
        let n: usize = shape.iter().product();
        let whole =
            NDArray::random_uniform(-(spread as f64), spread as f64 + 1.0, &shape, DType::F64).unwrap();
        let frac = NDArray::random_uniform(0.2, 0.8, &shape, DType::F64).unwrap();
        let v: Vec<f64> = (whole.to_vec::<f64>().unwrap().iter())
            .zip(frac.to_vec::<f64>().unwrap())
            .map(|(w, f)| w.floor() + f)
            .collect();
        assert_eq!(v.len(), n);
        NDArray::from_vec(v, &shape).unwrap()
    }

    /// Offsets of `dh` and `dw` at every tap and position.
    fn uniform_shift(&self, dh: f64, dw: f64) -> NDArray {
        let shape = self.offset_shape();
        let plane = shape[2] * shape[3];
        let v: Vec<f64> = (0..shape.iter().product::<usize>())
            .map(|k| if (k / plane).is_multiple_of(2) { dh } else { dw })
            .collect();
        NDArray::from_vec(v, &shape).unwrap()
    }

    /// The output by direct loops over every output element, channel and
    /// tap, each tap read by [`bilinear`].
    fn reference(&self, ins: &[NDArray]) -> Vec<f64> {
        let (x, off, w) = (
            ins[0].to_vec::<f64>().unwrap(),
            ins[1].to_vec::<f64>().unwrap(),
            ins[2].to_vec::<f64>().unwrap(),
        );
        let b: Vec<f64> = if self.no_bias { vec![0.0; self.filters] } else { ins[3].to_vec().unwrap() };
        let ([h, wd], [ho, wo], [kh, kw]) = (self.size, self.out(), self.kernel);
        let (cg, fg) = (self.channels / self.groups, self.filters / self.groups);
        let per_dgroup = self.channels / self.dgroups;
        let oc = self.offset_shape()[1];
        let mut out = Vec::new();
        for n in 0..self.batch {
            for f in 0..self.filters {
                for (oy, ox) in (0..ho).flat_map(|oy| (0..wo).map(move |ox| (oy, ox))) {
                    let mut sum = b[f];
                    for c in 0..cg {
                        let ch = f / fg * cg + c;
                        let plane = &x[(n * self.channels + ch) * h * wd..][..h * wd];
                        let dg = ch / per_dgroup;
                        for (i, j) in (0..kh).flat_map(|i| (0..kw).map(move |j| (i, j))) {
                            // this tap's offsets: channels 2·tap and 2·tap + 1 of group dg
                            let k = dg * 2 * kh * kw + 2 * (i * kw + j);
                            let dy = off[((n * oc + k) * ho + oy) * wo + ox];
                            let dx = off[((n * oc + k + 1) * ho + oy) * wo + ox];
                            let y = (oy * self.stride[0] + i * self.dilate[0]) as f64 - self.pad[0] as f64;
                            let xx = (ox * self.stride[1] + j * self.dilate[1]) as f64 - self.pad[1] as f64;
                            let v = bilinear(plane, h, wd, y + dy, xx + dx);
                            sum += w[((f * cg + c) * kh + i) * kw + j] * v;
                        }
                    }
                    out.push(sum);
                }
            }
        }
        out
    }

    fn run(&self, ins: &[NDArray]) -> NDArray {
        let refs: Vec<&NDArray> = ins.iter().collect();
        invoke1(OP, &refs, &self.attrs()).unwrap()
    }
}

/// MXNet's bilinear read of an `h x w` plane: 0 outside [0, h) x [0, w),
/// else the four pixels around `(y, x)` weighted by their nearness.
fn bilinear(plane: &[f64], h: usize, w: usize, y: f64, x: f64) -> f64 {
    let inside = y >= 0.0 && x >= 0.0 && y < h as f64 && x < w as f64;
    if !inside {
        return 0.0;
    }
    let mut v = 0.0;
    for (r, wr) in [(y.floor(), 1.0 - y.fract()), (y.floor() + 1.0, y.fract())] {
        for (c, wc) in [(x.floor(), 1.0 - x.fract()), (x.floor() + 1.0, x.fract())] {
            // a neighbour past the last row or column is that row or column
            let (r, c) = ((r as usize).min(h - 1), (c as usize).min(w - 1));
            v += wr * wc * plane[r * w + c];
        }
    }
    v
}

/// Cases over strides, padding, dilation, groups and deformable groups.
fn cases() -> Vec<Case> {
    let mut v = vec![case([5, 5])];
    let mut c = case([6, 7]);
    (c.stride, c.pad) = ([2, 1], [1, 2]);
    v.push(c);
    let mut c = case([7, 6]);
    (c.dilate, c.pad, c.kernel) = ([2, 1], [2, 1], [3, 2]);
    v.push(c);
    let mut c = case([5, 6]);
    (c.groups, c.dgroups, c.pad, c.no_bias) = (2, 2, [1, 1], true);
    v.push(c);
    let mut c = case([6, 6]);
    (c.channels, c.groups, c.filters, c.dgroups, c.stride, c.dilate, c.pad) =
        (4, 4, 8, 4, [2, 2], [2, 2], [2, 1]);
    v.push(c);
    let mut c = case([4, 5]);
    (c.kernel, c.dgroups, c.filters) = ([1, 1], 4, 3);
    v.push(c);
    v
}

#[test]
fn zero_offsets_equal_convolution() {
    for c in cases() {
        let ins = c.inputs(NDArray::zeros(&c.offset_shape(), DType::F64, Device::Cpu).unwrap());
        let y = c.run(&ins);
        let conv_ins: Vec<&NDArray> =
            ins.iter().enumerate().filter(|(k, _)| *k != 1).map(|(_, a)| a).collect();
        let conv = invoke1("Convolution", &conv_ins, &c.conv_attrs()).unwrap();
        assert_eq!(y.shape(), conv.shape(), "{c:?}");
        assert_close(&y, &conv, 1e-12, 1e-12).unwrap_or_else(|e| panic!("{c:?}: {e}"));
    }
}

/// The data of `c` moved by whole pixels so that a padding-free
/// `Convolution` reads at `(r - pad_h + dh, q - pw + dw)` what the
/// deformable one reads with offsets `(dh, dw)`: zero outside the data.
fn shifted(c: &Case, x: &NDArray, dh: i64, dw: i64) -> NDArray {
    let [ho, wo] = c.out();
    let span = |a: usize| c.dilate[a] * (c.kernel[a] - 1) + 1;
    let (lh, lw) = ((ho - 1) * c.stride[0] + span(0), (wo - 1) * c.stride[1] + span(1));
    let ([h, w], xs) = (c.size, x.to_vec::<f64>().unwrap());
    let mut v = Vec::new();
    for img in 0..c.batch * c.channels {
        for r in 0..lh {
            for q in 0..lw {
                let (y, z) = (r as i64 - c.pad[0] as i64 + dh, q as i64 - c.pad[1] as i64 + dw);
                let inside = (0..h as i64).contains(&y) && (0..w as i64).contains(&z);
                v.push(if inside { xs[(img * h + y as usize) * w + z as usize] } else { 0.0 });
            }
        }
    }
    NDArray::from_vec(v, &[c.batch, c.channels, lh, lw]).unwrap()
}

#[test]
fn whole_offsets_equal_a_shifted_convolution() {
    for c in cases() {
        for (dh, dw) in [(1, -2), (-1, 1), (2, 0), (0, -3)] {
            let ins = c.inputs(c.uniform_shift(dh as f64, dw as f64));
            let y = c.run(&ins);
            let x = shifted(&c, &ins[0], dh, dw);
            let mut conv_ins = vec![&x, &ins[2]];
            conv_ins.extend(ins.get(3));
            let mut attrs = c.conv_attrs();
            attrs[3] = ("pad", pair([0, 0]));
            let conv = invoke1("Convolution", &conv_ins, &attrs).unwrap();
            assert_close(&y, &conv, 1e-12, 1e-12).unwrap_or_else(|e| panic!("{c:?} ({dh}, {dw}): {e}"));
        }
    }
}

#[test]
fn fractional_offsets_match_the_direct_loops() {
    for c in cases() {
        for spread in [1, 4] {
            let ins = c.inputs(c.fractional(spread));
            let y = c.run(&ins);
            let mut shape = vec![c.batch, c.filters];
            shape.extend(c.out());
            assert_eq!(y.shape(), &shape[..], "{c:?}");
            compare(OP, "values", &y.to_vec().unwrap(), &c.reference(&ins), 1e-12, 1e-12).unwrap();
            // float32 and float16 agree with float64
            for (dtype, tol) in [(DType::F32, 1e-5), (DType::F16, 3e-2)] {
                let low: Vec<NDArray> = ins.iter().map(|a| a.astype(dtype).unwrap()).collect();
                let y_low = c.run(&low);
                assert_eq!(y_low.dtype(), dtype);
                // the reference of the rounded inputs: rounding moves the taps
                let rounded: Vec<NDArray> = low.iter().map(|a| a.astype(DType::F64).unwrap()).collect();
                let want = NDArray::from_vec(c.reference(&rounded), &shape).unwrap();
                assert_close(&y_low.astype(DType::F64).unwrap(), &want, tol, tol).unwrap();
            }
        }
    }
}

#[test]
fn hand_computed_reads_at_and_past_the_borders() {
    // one 2 x 3 plane, a 1x1 kernel of weight 1: each output is one read
    let x = NDArray::from_vec((1..=6).map(f64::from).collect(), &[1, 1, 2, 3]).unwrap();
    let reads = [
        ((0.5, 0.5), 3.0),    // (0.5, 0.5): the mean of 1, 2, 4, 5
        ((-0.25, 0.0), 0.0),  // (-0.25, 1): above the first row
        ((0.5, 0.5), 4.5),    // (0.5, 2.5): in the last column, which is read alone
        ((0.75, 0.0), 4.0),   // (1.75, 0): in the last row, which is read alone
        ((1.0, 0.0), 0.0),    // (2, 1): past the last row
        ((-1.5, -0.25), 0.0), // (-0.5, 1.75)
    ];
    let mut off = vec![0.0; 12];
    for (p, ((dh, dw), _)) in reads.iter().enumerate() {
        (off[p], off[6 + p]) = (*dh, *dw);
    }
    let off = NDArray::from_vec(off, &[1, 2, 2, 3]).unwrap();
    let w = NDArray::from_vec(vec![1.0], &[1, 1, 1, 1]).unwrap();
    let attrs = [("kernel", "(1, 1)".into()), ("num_filter", 1.into()), ("no_bias", true.into())];
    let y = invoke1(OP, &[&x, &off, &w], &attrs).unwrap();
    let want: Vec<f64> = reads.iter().map(|r| r.1).collect();
    assert_eq!(y.to_vec::<f64>().unwrap(), want);
}

#[test]
fn samples_far_off_the_image_read_zero() {
    let mut c = case([4, 5]);
    c.pad = [1, 1];
    let ins = c.inputs(c.fractional(9));
    compare(OP, "values", &c.run(&ins).to_vec().unwrap(), &c.reference(&ins), 1e-12, 1e-12).unwrap();
    // every tap pushed below the image: only the bias is left
    let ins = c.inputs(c.uniform_shift(7.5, 0.5));
    let y = c.run(&ins).to_vec::<f64>().unwrap();
    let b = ins[3].to_vec::<f64>().unwrap();
    let per = c.out()[0] * c.out()[1];
    assert!(y.iter().enumerate().all(|(k, v)| *v == b[k / per % c.filters]), "{y:?}");
}

#[test]
fn gradients_of_all_four_inputs_match_central_differences() {
    let small = |size, groups, dgroups, stride, dilate, pad, no_bias| Case {
        batch: 2,
        channels: 2,
        size,
        filters: 2,
        groups,
        dgroups,
        kernel: [2, 3],
        stride,
        dilate,
        pad,
        no_bias,
    };
    for c in [
        small([4, 5], 1, 1, [1, 1], [1, 1], [1, 1], false),
        small([5, 5], 2, 2, [2, 1], [1, 2], [1, 0], true),
        small([4, 4], 1, 2, [1, 2], [2, 1], [2, 1], false),
        small([3, 4], 2, 1, [1, 1], [1, 1], [0, 1], false),
    ] {
        for spread in [0, 2] {
            let mut checker = OpChecker::new(OP, &c.inputs(c.fractional(spread)));
            for (k, v) in c.attrs() {
                checker = checker.attr(k, v);
            }
            let report = checker.run().unwrap_or_else(|e| panic!("{c:?}: {e}"));
            assert!(report.grad_entries > 0);
        }
    }
}

#[test]
fn infers_parameter_shapes_both_ways() {
    let op = registry::get(OP).unwrap();
    let attrs = op
        .parse_attrs(&[
            ("kernel", "(3, 3)".into()),
            ("num_filter", 8.into()),
            ("num_group", 2.into()),
            ("num_deformable_group", 3.into()),
            ("pad", "(1, 1)".into()),
            ("stride", "(2, 1)".into()),
        ])
        .unwrap();
    let shape = |s: &[usize]| Some(Shape::from_slice(s));
    let mut ins = vec![shape(&[4, 6, 10, 12]), None, None, None];
    let mut outs = vec![None];
    (op.infer_shape)(&attrs, &mut ins, &mut outs).unwrap();
    assert_eq!(ins[1].as_deref(), Some(&[4usize, 54, 5, 12][..]));
    assert_eq!(ins[2].as_deref(), Some(&[8usize, 3, 3, 3][..]));
    assert_eq!(ins[3].as_deref(), Some(&[8usize][..]));
    assert_eq!(outs[0].as_deref(), Some(&[4usize, 8, 5, 12][..]));
    // partial: channels from the weight, batch from the offset, width
    // from the output (stride 1 on that axis only)
    let mut ins = vec![shape(&[0, 0, 0, 0]), shape(&[5, 54, 0, 0]), shape(&[8, 3, 3, 3]), None];
    let mut outs = vec![shape(&[0, 8, 7, 30])];
    (op.infer_shape)(&attrs, &mut ins, &mut outs).unwrap();
    assert_eq!(ins[0].as_deref(), Some(&[5usize, 6, 0, 30][..]));
    assert_eq!(ins[1].as_deref(), Some(&[5usize, 54, 7, 30][..]));
    assert_eq!(outs[0].as_deref(), Some(&[5usize, 8, 7, 30][..]));
    // nothing known: nothing inferred, no error
    let (mut ins, mut outs) = (vec![None, None, None, None], vec![None]);
    (op.infer_shape)(&attrs, &mut ins, &mut outs).unwrap();
    assert!(ins.iter().all(Option::is_none) && outs[0].is_none());
}

#[test]
fn errors_name_the_operator_and_the_argument() {
    let x = rand(&[1, 4, 5, 5]);
    let off = rand(&[1, 18, 3, 3]);
    let w = rand(&[2, 4, 3, 3]);
    // a 3x3 kernel, 2 filters, no bias, and `extra`
    let base = |extra: &[(&'static str, AttrValue)]| -> Vec<(&'static str, AttrValue)> {
        let defaults = [("kernel", "(3, 3)".into()), ("num_filter", 2.into()), ("no_bias", true.into())];
        defaults.into_iter().chain(extra.iter().cloned()).collect()
    };
    let err = |ins: &[&NDArray], extra: &[(&'static str, AttrValue)], words: &[&str]| {
        let e = invoke1(OP, ins, &base(extra)).unwrap_err().to_string();
        assert!(e.contains(OP), "{e}");
        for word in words {
            assert!(e.contains(word), "`{word}` missing in: {e}");
        }
    };
    // the call works as given
    invoke1(OP, &[&x, &off, &w], &base(&[])).unwrap();
    // offset channels: 2·3·3 per deformable group
    err(&[&x, &rand(&[1, 17, 3, 3]), &w], &[], &["offset", "(1, 17, 3, 3)", "(1, 18, 3, 3)"]);
    err(&[&x, &off, &w], &[("num_deformable_group", 2.into())], &["offset", "(1, 36, 3, 3)"]);
    // offset extents must be the output's
    err(&[&x, &rand(&[1, 18, 4, 3]), &w], &[], &["offset", "(1, 18, 4, 3)"]);
    // weight shape
    err(&[&x, &off, &rand(&[2, 4, 2, 3])], &[], &["weight", "(2, 4, 2, 3)", "(2, 4, 3, 3)"]);
    err(&[&x, &off, &rand(&[2, 4, 3])], &[], &["weight", "(2, 4, 3)", "4-d"]);
    // num_filter not a multiple of num_group
    err(&[&x, &off, &w], &[("num_group", 4.into()), ("num_filter", 6.into())], &["num_filter", "num_group"]);
    // channels not a multiple of the groups
    err(&[&rand(&[1, 3, 5, 5]), &off, &w], &[("num_group", 2.into())], &["data", "num_group", "3 channels"]);
    let off3 = rand(&[1, 36, 3, 3]);
    err(&[&x, &off3, &w], &[("num_deformable_group", 3.into())], &["num_deformable_group"]);
    // data must be 4-d, the kernel 2-d
    err(&[&rand(&[4, 5, 5]), &off, &w], &[], &["data", "(4, 5, 5)", "4-d"]);
    err(&[&x, &off, &w], &[("kernel", "(3, 3, 3)".into())], &["kernel", "2-d"]);
    err(&[&x, &off, &w], &[("kernel", "(3,)".into())], &["kernel", "2-d"]);
    // only NCHW
    err(&[&x, &off, &w], &[("layout", "NHWC".into())], &["layout", "NHWC"]);
    invoke1(OP, &[&x, &off, &w], &base(&[("layout", "NCHW".into())])).unwrap();
    // counts below 1
    err(&[&x, &off, &w], &[("num_deformable_group", 0.into())], &["num_deformable_group", "at least 1"]);
}
