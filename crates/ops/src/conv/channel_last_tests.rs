//! Tests of channel-last `Convolution` and `Deconvolution` (NHWC, NDHWC):
//! values and gradients equal the channel-first call's with every array's
//! channel axis moved last (MXNet 1.9.1's CPU build infers these shapes but
//! computes no channel-last convolution, so the channel-first result is
//! the reference), gradients by central differences, shape inference with
//! MXNet's shapes, and errors.

use super::layout::{array_to_first, shape_to_last};
use oxnet_core::check::{assert_close, OpChecker};
use oxnet_core::shape::Shape;
use oxnet_core::{autograd, invoke1, registry, AttrValue, DType, NDArray, Req};

fn rand(shape: &[usize]) -> NDArray {
    NDArray::random_uniform(-1.0, 1.0, shape, DType::F64).unwrap()
}

/// `a` (channel-first) with its channel axis moved last, contiguous.
fn to_last(a: &NDArray) -> NDArray {
    let mut axes = vec![0];
    axes.extend(2..a.ndim());
    axes.push(1);
    a.transpose(Some(&axes)).unwrap().copy().unwrap()
}

/// Runs `op` channel-first on `ins` and channel-last on the permuted
/// `ins` (the first two permuted, a bias kept) under autograd with head
/// gradient `head` (channel-first), and checks that the outputs and every
/// gradient agree after permutation.
fn agrees_with_channel_first(op: &str, ins: &[NDArray], attrs: &[(&'static str, AttrValue)], layout: &str) {
    let last: Vec<NDArray> =
        ins.iter().enumerate().map(|(i, a)| if i < 2 { to_last(a) } else { a.copy().unwrap() }).collect();
    let mut attrs_last = attrs.to_vec();
    attrs_last.push(("layout", layout.into()));
    let run = |xs: &[NDArray], attrs: &[(&str, AttrValue)], head: Option<&NDArray>| {
        for a in xs {
            a.attach_grad(Req::Write).unwrap();
        }
        let refs: Vec<&NDArray> = xs.iter().collect();
        let y = {
            let _r = autograd::record();
            invoke1(op, &refs, attrs).unwrap()
        };
        let head = head.cloned().unwrap_or_else(|| rand(y.shape()));
        autograd::backward(&[&y], &[Some(&head)], Default::default()).unwrap();
        let grads: Vec<NDArray> = xs.iter().map(|a| a.grad().unwrap()).collect();
        (y, head, grads)
    };
    let (y, head, grads) = run(ins, attrs, None);
    let (y_last, _, grads_last) = run(&last, &attrs_last, Some(&to_last(&head)));
    assert_eq!(y_last.shape(), &shape_to_last(y.shape())[..], "{op} {layout}");
    assert_close(&array_to_first(&y_last).unwrap(), &y, 1e-12, 1e-12).unwrap();
    for (i, (g, gl)) in grads.iter().zip(&grads_last).enumerate() {
        let gl = if i < 2 { array_to_first(gl).unwrap() } else { gl.clone() };
        assert_close(&gl, g, 1e-12, 1e-12).unwrap_or_else(|e| panic!("{op} {layout} gradient {i}: {e}"));
    }
}

fn ints(v: &[i64]) -> AttrValue {
    AttrValue::Ints(v.to_vec())
}

#[test]
fn convolution_matches_channel_first_2d_and_3d() {
    // grouped, strided, padded, dilated, with bias
    let attrs = vec![
        ("kernel", ints(&[3, 2])),
        ("stride", ints(&[2, 1])),
        ("pad", ints(&[1, 1])),
        ("dilate", ints(&[1, 2])),
        ("num_filter", 6.into()),
        ("num_group", 2.into()),
    ];
    let ins = [rand(&[2, 4, 7, 6]), rand(&[6, 2, 3, 2]), rand(&[6])];
    agrees_with_channel_first("Convolution", &ins, &attrs, "NHWC");
    let attrs = vec![("kernel", ints(&[2, 2, 2])), ("num_filter", 3.into()), ("no_bias", true.into())];
    let ins = [rand(&[2, 2, 3, 4, 3]), rand(&[3, 2, 2, 2, 2])];
    agrees_with_channel_first("Convolution", &ins, &attrs, "NDHWC");
}

#[test]
fn deconvolution_matches_channel_first_2d_and_3d() {
    let attrs = vec![
        ("kernel", ints(&[3, 3])),
        ("stride", ints(&[2, 2])),
        ("pad", ints(&[1, 0])),
        ("adj", ints(&[1, 0])),
        ("num_filter", 4.into()),
        ("num_group", 2.into()),
        ("no_bias", false.into()),
    ];
    let ins = [rand(&[2, 4, 3, 3]), rand(&[4, 2, 3, 3]), rand(&[4])];
    agrees_with_channel_first("Deconvolution", &ins, &attrs, "NHWC");
    let attrs =
        vec![("kernel", ints(&[2, 2, 2])), ("num_filter", 2.into()), ("target_shape", ints(&[4, 3, 4]))];
    let ins = [rand(&[1, 3, 3, 2, 3]), rand(&[3, 2, 2, 2, 2])];
    agrees_with_channel_first("Deconvolution", &ins, &attrs, "NDHWC");
}

#[test]
fn hand_computed_nhwc_values() {
    // one image 3x3 with 2 channels (the second the negated first), two
    // filters 2x2: ones on channel 0, and ones on channel 1
    let x: Vec<f32> = (1..=9).flat_map(|v| [v as f32, -(v as f32)]).collect();
    let x = NDArray::from_vec(x, &[1, 3, 3, 2]).unwrap();
    let w: Vec<f32> = (0..4).flat_map(|_| [1.0, 0.0]).chain((0..4).flat_map(|_| [0.0, 1.0])).collect();
    let w = NDArray::from_vec(w, &[2, 2, 2, 2]).unwrap();
    let b = NDArray::from_vec(vec![0.5f32, 0.0], &[2]).unwrap();
    let attrs = [("kernel", "(2, 2)".into()), ("num_filter", 2.into()), ("layout", "NHWC".into())];
    let y = invoke1("Convolution", &[&x, &w, &b], &attrs).unwrap();
    assert_eq!(y.shape(), &[1, 2, 2, 2]);
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![12.5, -12.0, 16.5, -16.0, 24.5, -24.0, 28.5, -28.0]);
}

#[test]
fn gradients_match_central_differences() {
    let conv = OpChecker::new("Convolution", &[rand(&[2, 4, 3, 2]), rand(&[2, 2, 2, 2]), rand(&[2])])
        .attr("kernel", "(2, 2)")
        .attr("num_filter", 2)
        .attr("pad", "(1, 0)")
        .attr("layout", "NHWC");
    conv.run().unwrap();
    let deconv = OpChecker::new("Deconvolution", &[rand(&[1, 2, 2, 2, 2]), rand(&[2, 2, 2, 2, 1])])
        .attr("kernel", "(2, 2, 2)")
        .attr("num_filter", 1)
        .attr("stride", "(2, 1, 1)")
        .attr("layout", "NDHWC");
    deconv.run().unwrap();
}

fn shapes(v: &[&[usize]]) -> Vec<Option<Shape>> {
    v.iter().map(|s| if s.is_empty() { None } else { Some(Shape::from_slice(s)) }).collect()
}

fn infer(op: &str, attrs: &[(&str, AttrValue)], ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) {
    let op = registry::get(op).unwrap();
    let attrs = op.parse_attrs(attrs).unwrap();
    (op.infer_shape)(&attrs, ins, outs).unwrap();
}

#[test]
fn infers_mxnet_shapes_both_ways() {
    // MXNet 1.9.1: data (1, 5, 5, 2), NHWC, 4 filters 3x3 -> weight
    // (4, 3, 3, 2), bias (4,), output (1, 3, 3, 4)
    let conv = [("kernel", "(3, 3)".into()), ("num_filter", 4.into()), ("layout", "NHWC".into())];
    let (mut ins, mut outs) = (shapes(&[&[1, 5, 5, 2], &[], &[]]), shapes(&[&[]]));
    infer("Convolution", &conv, &mut ins, &mut outs);
    assert_eq!(ins, shapes(&[&[1, 5, 5, 2], &[4, 3, 3, 2], &[4]]));
    assert_eq!(outs, shapes(&[&[1, 3, 3, 4]]));
    // partial: channels from the weight, batch and extents from the output
    let (mut ins, mut outs) = (shapes(&[&[0, 0, 0, 0], &[4, 3, 3, 2], &[]]), shapes(&[&[5, 8, 7, 4]]));
    infer("Convolution", &conv, &mut ins, &mut outs);
    assert_eq!(ins[0], Some(Shape::from_slice(&[5, 10, 9, 2])));
    // grouped 3-D
    let conv3 = [
        ("kernel", "(3, 3, 3)".into()),
        ("num_filter", 8.into()),
        ("num_group", 2.into()),
        ("pad", "(1, 1, 1)".into()),
        ("no_bias", true.into()),
        ("layout", "NDHWC".into()),
    ];
    let (mut ins, mut outs) = (shapes(&[&[2, 4, 5, 6, 6], &[]]), shapes(&[&[]]));
    infer("Convolution", &conv3, &mut ins, &mut outs);
    assert_eq!(ins[1], Some(Shape::from_slice(&[8, 3, 3, 3, 3])));
    assert_eq!(outs, shapes(&[&[2, 4, 5, 6, 8]]));
    // MXNet 1.9.1: Deconvolution data (1, 5, 5, 2), NHWC, 4 filters 3x3 ->
    // weight (2, 3, 3, 4), output (1, 7, 7, 4); NDHWC likewise
    let deconv = [("kernel", "(3, 3)".into()), ("num_filter", 4.into()), ("layout", "NHWC".into())];
    let (mut ins, mut outs) = (shapes(&[&[1, 5, 5, 2], &[]]), shapes(&[&[]]));
    infer("Deconvolution", &deconv, &mut ins, &mut outs);
    assert_eq!(ins, shapes(&[&[1, 5, 5, 2], &[2, 3, 3, 4]]));
    assert_eq!(outs, shapes(&[&[1, 7, 7, 4]]));
    let deconv3 = [("kernel", "(3, 3, 3)".into()), ("num_filter", 4.into()), ("layout", "NDHWC".into())];
    let (mut ins, mut outs) = (shapes(&[&[], &[2, 3, 3, 3, 4]]), shapes(&[&[]]));
    infer("Deconvolution", &deconv3, &mut ins, &mut outs);
    assert_eq!(ins[0], Some(Shape::from_slice(&[0, 0, 0, 0, 2])));
}

#[test]
fn errors_name_the_operator_and_layout() {
    let err = |op: &str, ins: &[&NDArray], layout: &str, kernel: &str| {
        let attrs = [
            ("kernel", kernel.into()),
            ("num_filter", 4.into()),
            ("no_bias", true.into()),
            ("layout", layout.into()),
        ];
        invoke1(op, ins, &attrs).unwrap_err().to_string()
    };
    let (x1, w1) = (rand(&[1, 5, 2]), rand(&[4, 3, 2]));
    for op in ["Convolution", "Deconvolution"] {
        // MXNet 1.9.1 has no NWC convolution
        let e = err(op, &[&x1, &w1], "NWC", "(3,)");
        assert!(e.contains(op) && e.contains("layout") && e.contains("NWC") && e.contains("NHWC"), "{e}");
        // a layout for another number of spatial axes
        let e = err(op, &[&x1, &w1], "NHWC", "(3,)");
        assert!(e.contains(op) && e.contains("layout NHWC") && e.contains("NCW"), "{e}");
        let e = err(op, &[&x1, &w1], "NHWCX", "(3,)");
        assert!(e.contains(op) && e.contains("NHWCX"), "{e}");
    }
    // a channel-first weight under NHWC: named, shapes in the caller's order
    let e = err("Convolution", &[&rand(&[1, 5, 5, 2]), &rand(&[4, 2, 3, 3])], "NHWC", "(3, 3)");
    assert!(
        e.contains("weight has shape (4, 2, 3, 3)")
            && e.contains("(1, 5, 5, 2)")
            && e.contains("needs (4, 3, 3, 2)"),
        "{e}"
    );
    let e = err("Deconvolution", &[&rand(&[1, 5, 5, 2]), &rand(&[2, 4, 3, 3])], "NHWC", "(3, 3)");
    assert!(e.contains("Deconvolution: weight") && e.contains("needs (2, 3, 3, 4)"), "{e}");
    // no single mismatch to show: the channel-first message, with the order noted
    let e = err("Convolution", &[&rand(&[1, 2, 2, 2]), &rand(&[4, 3, 3, 2])], "NHWC", "(3, 3)");
    assert!(e.contains("Convolution") && e.contains("channel-first order"), "{e}");
}
