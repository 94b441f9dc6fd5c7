//! Tests of `Convolution` against a direct nested-loop reference.

use oxnet_core::check::{assert_close, compare, OpChecker};
use oxnet_core::shape::Shape;
use oxnet_core::{invoke1, registry, AttrValue, DType, NDArray};

fn rand(shape: &[usize]) -> NDArray {
    NDArray::random_uniform(-1.0, 1.0, shape, DType::F64).unwrap()
}

/// A convolution case: spatial extents, kernel, stride, dilate, pad.
struct Case {
    batch: usize,
    channels: usize,
    spatial: Vec<usize>,
    filters: usize,
    groups: usize,
    kernel: Vec<usize>,
    stride: Vec<usize>,
    dilate: Vec<usize>,
    pad: Vec<usize>,
    no_bias: bool,
}

fn ints(v: &[usize]) -> AttrValue {
    AttrValue::Ints(v.iter().map(|&x| x as i64).collect())
}

impl Case {
    fn attrs(&self) -> Vec<(&'static str, AttrValue)> {
        vec![
            ("kernel", ints(&self.kernel)),
            ("stride", ints(&self.stride)),
            ("dilate", ints(&self.dilate)),
            ("pad", ints(&self.pad)),
            ("num_filter", self.filters.into()),
            ("num_group", self.groups.into()),
            ("no_bias", self.no_bias.into()),
        ]
    }

    fn inputs(&self) -> Vec<NDArray> {
        let mut data = vec![self.batch, self.channels];
        data.extend(&self.spatial);
        let mut w = vec![self.filters, self.channels / self.groups];
        w.extend(&self.kernel);
        let mut v = vec![rand(&data), rand(&w)];
        if !self.no_bias {
            v.push(rand(&[self.filters]));
        }
        v
    }

    /// The output by direct loops over every output element and tap, with
    /// the spatial axes padded to three.
    #[allow(clippy::needless_range_loop)] // the direct loops are the point
    fn reference(&self, ins: &[NDArray]) -> (Vec<usize>, Vec<f64>) {
        let lead = 3 - self.kernel.len();
        let pad3 = |v: &[usize], fill: usize| {
            let mut o = vec![fill; lead];
            o.extend(v);
            o
        };
        let (sp, k, s, d, p) = (
            pad3(&self.spatial, 1),
            pad3(&self.kernel, 1),
            pad3(&self.stride, 1),
            pad3(&self.dilate, 1),
            pad3(&self.pad, 0),
        );
        let o: Vec<usize> = (0..3).map(|i| (sp[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) / s[i] + 1).collect();
        let x = ins[0].to_vec::<f64>().unwrap();
        let w = ins[1].to_vec::<f64>().unwrap();
        let b = if self.no_bias { vec![0.0; self.filters] } else { ins[2].to_vec::<f64>().unwrap() };
        let (cg, fg) = (self.channels / self.groups, self.filters / self.groups);
        let mut out = Vec::new();
        for n in 0..self.batch {
            for f in 0..self.filters {
                let g = f / fg;
                for o0 in 0..o[0] {
                    for o1 in 0..o[1] {
                        for o2 in 0..o[2] {
                            let mut acc = b[f];
                            for c in 0..cg {
                                for t0 in 0..k[0] {
                                    for t1 in 0..k[1] {
                                        for t2 in 0..k[2] {
                                            let z = [
                                                (o0 * s[0] + t0 * d[0]) as isize - p[0] as isize,
                                                (o1 * s[1] + t1 * d[1]) as isize - p[1] as isize,
                                                (o2 * s[2] + t2 * d[2]) as isize - p[2] as isize,
                                            ];
                                            if (0..3).any(|i| z[i] < 0 || z[i] as usize >= sp[i]) {
                                                continue;
                                            }
                                            let ch = g * cg + c;
                                            let xi = (((n * self.channels + ch) * sp[0] + z[0] as usize)
                                                * sp[1]
                                                + z[1] as usize)
                                                * sp[2]
                                                + z[2] as usize;
                                            let wi = (((f * cg + c) * k[0] + t0) * k[1] + t1) * k[2] + t2;
                                            acc += x[xi] * w[wi];
                                        }
                                    }
                                }
                            }
                            out.push(acc);
                        }
                    }
                }
            }
        }
        let mut shape = vec![self.batch, self.filters];
        shape.extend(&o[lead..]);
        (shape, out)
    }
}

fn cases() -> Vec<Case> {
    let c = |spatial: &[usize], kernel: &[usize], stride: &[usize], dilate: &[usize], pad: &[usize]| Case {
        batch: 2,
        channels: 4,
        spatial: spatial.to_vec(),
        filters: 6,
        groups: 1,
        kernel: kernel.to_vec(),
        stride: stride.to_vec(),
        dilate: dilate.to_vec(),
        pad: pad.to_vec(),
        no_bias: false,
    };
    let mut v = vec![
        c(&[7], &[3], &[1], &[1], &[0]),
        c(&[8], &[3], &[2], &[2], &[1]),
        c(&[5, 6], &[3, 3], &[1, 1], &[1, 1], &[1, 1]),
        c(&[7, 6], &[3, 2], &[2, 1], &[1, 2], &[0, 1]),
        c(&[4, 4], &[1, 1], &[1, 1], &[1, 1], &[0, 0]),
        c(&[3, 4, 5], &[2, 3, 2], &[1, 2, 1], &[1, 1, 2], &[1, 0, 1]),
    ];
    let mut grouped = c(&[5, 5], &[3, 3], &[1, 1], &[1, 1], &[1, 1]);
    grouped.groups = 2;
    grouped.no_bias = true;
    v.push(grouped);
    let mut depthwise = c(&[6, 5], &[3, 3], &[2, 2], &[1, 1], &[1, 1]);
    depthwise.groups = 4;
    depthwise.filters = 8;
    v.push(depthwise);
    // one channel and one filter per group: the direct depth-wise kernels,
    // with strides, dilations and padding past the kernel's reach
    for (spatial, kernel, stride, dilate, pad) in [
        (&[9][..], &[3][..], &[1][..], &[2][..], &[3][..]),
        (&[7, 6], &[3, 3], &[2, 1], &[1, 2], &[1, 2]),
        (&[3, 4, 5], &[2, 3, 2], &[1, 2, 1], &[1, 1, 2], &[1, 0, 1]),
    ] {
        let mut direct = c(spatial, kernel, stride, dilate, pad);
        direct.groups = 4;
        direct.filters = 4;
        v.push(direct);
    }
    v
}

#[test]
fn matches_the_direct_loops_in_1d_2d_3d() {
    for case in cases() {
        let ins = case.inputs();
        let refs: Vec<&NDArray> = ins.iter().collect();
        let y = invoke1("Convolution", &refs, &case.attrs()).unwrap();
        let (shape, want) = case.reference(&ins);
        assert_eq!(y.shape(), &shape[..], "kernel {:?}", case.kernel);
        compare("Convolution", "values", &y.to_vec().unwrap(), &want, 1e-12, 1e-12).unwrap();
        // float32 agrees with float64
        let ins32: Vec<NDArray> = ins.iter().map(|a| a.astype(DType::F32).unwrap()).collect();
        let refs32: Vec<&NDArray> = ins32.iter().collect();
        let y32 = invoke1("Convolution", &refs32, &case.attrs()).unwrap();
        assert_eq!(y32.dtype(), DType::F32);
        assert_close(&y32, &y, 1e-5, 1e-5).unwrap();
    }
}

#[test]
fn hand_computed_values() {
    // 1 image, 1 channel 3x3, kernel 2x2 of ones, bias 0.5
    let x = NDArray::from_vec((1..=9).map(|v| v as f32).collect::<Vec<_>>(), &[1, 1, 3, 3]).unwrap();
    let w = NDArray::from_vec(vec![1.0f32; 4], &[1, 1, 2, 2]).unwrap();
    let b = NDArray::from_vec(vec![0.5f32], &[1]).unwrap();
    let y = invoke1("Convolution", &[&x, &w, &b], &[("kernel", "(2, 2)".into()), ("num_filter", 1.into())])
        .unwrap();
    assert_eq!(y.shape(), &[1, 1, 2, 2]);
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![12.5, 16.5, 24.5, 28.5]);
}

#[test]
fn gradients_match_central_differences() {
    let small = |spatial: &[usize],
                 kernel: &[usize],
                 stride: &[usize],
                 dilate: &[usize],
                 pad: &[usize],
                 groups,
                 no_bias| Case {
        batch: 2,
        channels: 2,
        spatial: spatial.to_vec(),
        filters: 2,
        groups,
        kernel: kernel.to_vec(),
        stride: stride.to_vec(),
        dilate: dilate.to_vec(),
        pad: pad.to_vec(),
        no_bias,
    };
    for case in [
        small(&[6], &[3], &[2], &[1], &[1], 1, false),
        small(&[4, 5], &[2, 3], &[1, 2], &[2, 1], &[1, 0], 1, false),
        small(&[4, 4], &[3, 3], &[1, 1], &[1, 1], &[1, 1], 2, true),
        small(&[5, 6], &[3, 2], &[2, 1], &[1, 2], &[2, 1], 2, false),
        small(&[7], &[3], &[2], &[2], &[2], 2, false),
        small(&[3, 3], &[1, 1], &[1, 1], &[1, 1], &[0, 0], 1, false),
        small(&[3, 3, 3], &[2, 2, 2], &[1, 1, 1], &[1, 1, 1], &[0, 1, 0], 1, false),
    ] {
        let mut checker = OpChecker::new("Convolution", &case.inputs());
        for (k, v) in case.attrs() {
            checker = checker.attr(k, v);
        }
        checker.run().unwrap();
    }
}

#[test]
fn infers_parameter_shapes_both_ways() {
    let op = registry::get("Convolution").unwrap();
    let attrs = op
        .parse_attrs(&[
            ("kernel", "(3, 3)".into()),
            ("num_filter", 8.into()),
            ("num_group", 2.into()),
            ("pad", "(1, 1)".into()),
        ])
        .unwrap();
    let mut ins = vec![Some(Shape::from_slice(&[4, 6, 10, 12])), None, None];
    let mut outs = vec![None];
    (op.infer_shape)(&attrs, &mut ins, &mut outs).unwrap();
    assert_eq!(ins[1].as_deref(), Some(&[8usize, 3, 3, 3][..]));
    assert_eq!(ins[2].as_deref(), Some(&[8usize][..]));
    assert_eq!(outs[0].as_deref(), Some(&[4usize, 8, 10, 12][..]));
    // partial: channels from the weight, batch and extents from the output
    let mut ins = vec![Some(Shape::from_slice(&[0, 0, 0, 0])), Some(Shape::from_slice(&[8, 3, 3, 3])), None];
    let mut outs = vec![Some(Shape::from_slice(&[5, 8, 32, 30]))];
    (op.infer_shape)(&attrs, &mut ins, &mut outs).unwrap();
    assert_eq!(ins[0].as_deref(), Some(&[5usize, 6, 32, 30][..]));
    // nothing known: nothing inferred, no error
    let mut ins = vec![None, None, None];
    let mut outs = vec![None];
    (op.infer_shape)(&attrs, &mut ins, &mut outs).unwrap();
    assert!(ins[0].is_none() && outs[0].is_none());
}

#[test]
fn errors_name_the_operator_attribute_and_shapes() {
    let x = rand(&[1, 4, 5, 5]);
    let w = rand(&[2, 4, 3, 3]);
    let err = |ins: &[&NDArray], attrs: &[(&str, AttrValue)]| {
        invoke1("Convolution", ins, attrs).unwrap_err().to_string()
    };
    let base = |extra: &[(&'static str, AttrValue)]| {
        let mut a: Vec<(&str, AttrValue)> =
            vec![("kernel", "(3, 3)".into()), ("num_filter", 2.into()), ("no_bias", true.into())];
        a.extend(extra.iter().cloned());
        a
    };
    // kernel larger than the padded input
    let e = err(&[&x, &rand(&[2, 4, 7, 7])], &base(&[("kernel", "(7, 7)".into())]));
    assert!(e.contains("Convolution") && e.contains("(7, 7)") && e.contains("(1, 4, 5, 5)"), "{e}");
    // channels not divisible by num_group
    let e = err(&[&rand(&[1, 3, 5, 5]), &w], &base(&[("num_group", 2.into())]));
    assert!(e.contains("num_group") && e.contains('3'), "{e}");
    // negative pad
    let e = err(&[&x, &w], &base(&[("pad", "(-1, 0)".into())]));
    assert!(e.contains("pad") && e.contains("-1"), "{e}");
    // unknown or unsupported layouts
    let e = err(&[&x, &w], &base(&[("layout", "NDHWC".into())]));
    assert!(e.contains("layout") && e.contains("NDHWC") && e.contains("NCHW or NHWC"), "{e}");
    let e = err(&[&x, &w], &base(&[("layout", "XYZ".into())]));
    assert!(e.contains("layout") && e.contains("XYZ"), "{e}");
    // wrongly shaped weight
    let e = err(&[&x, &rand(&[2, 4, 2, 3])], &base(&[]));
    assert!(e.contains("weight") && e.contains("(2, 4, 2, 3)") && e.contains("(2, 4, 3, 3)"), "{e}");
    // wrong data rank, kernel of 4 axes
    let e = err(&[&rand(&[4, 5, 5]), &w], &base(&[]));
    assert!(e.contains("data") && e.contains("(4, 5, 5)"), "{e}");
    let e = err(&[&x, &w], &base(&[("kernel", "(1, 1, 1, 1)".into())]));
    assert!(e.contains("kernel"), "{e}");
    // stride length mismatch
    let e = err(&[&x, &w], &base(&[("stride", "(1, 1, 1)".into())]));
    assert!(e.contains("stride"), "{e}");
}
