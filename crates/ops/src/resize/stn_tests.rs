//! Tests of `GridGenerator`, `BilinearSampler` and `SpatialTransformer`:
//! values and gradients MXNet 1.9.1 computed, hand-computed grids and
//! samples, gradients by central differences, inference and errors.

use super::mx_values::MxCase;
use super::stn_mx_values::{F32, F64};
use super::tests::{arr, head, raw, sample};
use oxnet_core::autograd::{self, BackwardOptions};
use oxnet_core::check::{compare, OpChecker};
use oxnet_core::{invoke, invoke1, registry, DType, NDArray, Req, Shape};

const GRID: &str = "GridGenerator";
const SAMPLER: &str = "BilinearSampler";
const STN: &str = "SpatialTransformer";

/// The attributes of an affine `SpatialTransformer` onto `target`.
fn stn_attrs(target: &str) -> [(&str, &str); 3] {
    [("target_shape", target), ("transform_type", "affine"), ("sampler_type", "bilinear")]
}

/// Grid values in [-1.3, 1.3), none on a whole pixel of the data of
/// `tests` (as the MXNet fixtures' grid).
fn grid_values(n: usize) -> Vec<f64> {
    (0..n).map(|i| ((i * 53 % 97) as f64 / 97.0 * 2.6 - 1.3) * 1e4).map(|v: f64| v.round() / 1e4).collect()
}

/// The output and each input's gradient of a call under autograd, with
/// the head gradient [`head`].
fn run(op: &str, attrs: &[(&str, &str)], inputs: &[NDArray]) -> (NDArray, Vec<Vec<f64>>) {
    for x in inputs {
        x.attach_grad(Req::Write).unwrap();
    }
    let refs: Vec<&NDArray> = inputs.iter().collect();
    let y = {
        let _r = autograd::record();
        invoke1(op, &refs, &raw(attrs)).unwrap_or_else(|e| panic!("{op}: {e}"))
    };
    let dy = arr(head(y.shape()), y.shape(), y.dtype());
    autograd::backward(&[&y], &[Some(&dy)], BackwardOptions::default()).unwrap();
    (y, inputs.iter().map(|x| x.grad().unwrap().to_vec::<f64>().unwrap()).collect())
}

fn check_cases(cases: &[MxCase], dtype: DType, tol: f64) {
    for c in cases {
        let inputs: Vec<NDArray> = c
            .inputs
            .iter()
            .map(|i| arr(i.values.map_or_else(|| sample(i.shape, i.salt), |v| v.to_vec()), i.shape, dtype))
            .collect();
        let (y, grads) = run(c.op, c.attrs, &inputs);
        assert_eq!(y.shape(), c.out_shape, "{}", c.key);
        assert_eq!(y.dtype(), dtype, "{}", c.key);
        compare(c.key, "output", &y.to_vec::<f64>().unwrap(), c.out, tol, tol).unwrap();
        for (i, (g, want)) in grads.iter().zip(c.grads).enumerate() {
            compare(c.key, &format!("gradient of input {i}"), g, want, tol, tol).unwrap();
        }
    }
}

#[test]
fn float32_values_and_gradients_match_mxnet() {
    check_cases(F32, DType::F32, 1e-5);
}

#[test]
fn float64_values_and_gradients_match_mxnet() {
    check_cases(F64, DType::F64, 1e-12);
}

#[test]
fn affine_grid_of_the_identity_is_the_pixel_coordinates() {
    let a = arr(vec![1., 0., 0., 0., 1., 0.], &[1, 6], DType::F32);
    let g = invoke1(GRID, &[&a], &raw(&[("transform_type", "affine"), ("target_shape", "(2, 3)")])).unwrap();
    assert_eq!(g.shape(), &[1, 2, 2, 3]);
    assert_eq!(g.to_vec::<f32>().unwrap(), [-1., 0., 1., -1., 0., 1., -1., -1., -1., 1., 1., 1.]);
    // a general matrix: x' = 2x - y + 0.5, y' = 0.5y - 0.25
    let a = arr(vec![2., -1., 0.5, 0., 0.5, -0.25], &[1, 6], DType::F64);
    let g = invoke1(GRID, &[&a], &raw(&[("transform_type", "affine"), ("target_shape", "(2, 3)")])).unwrap();
    let want = [-0.5, 1.5, 3.5, -2.5, -0.5, 1.5, -0.75, -0.75, -0.75, 0.25, 0.25, 0.25];
    assert_eq!(g.to_vec::<f64>().unwrap(), want);
}

#[test]
fn warp_grid_adds_the_flow_to_the_pixel_positions() {
    // flow (1, 2, 2, 3): x moves by 1 pixel, y by -0.5
    let mut flow = vec![1.0; 6];
    flow.extend([-0.5; 6]);
    let f = arr(flow, &[1, 2, 2, 3], DType::F64);
    let g = invoke1(GRID, &[&f], &raw(&[("transform_type", "warp")])).unwrap();
    // x: (j + 1) / 1 - 1, y: (i - 0.5) / 0.5 - 1
    let want = [0., 1., 2., 0., 1., 2., -2., -2., -2., 0., 0., 0.];
    assert_eq!(g.to_vec::<f64>().unwrap(), want);
}

#[test]
fn one_pixel_axes_have_the_coordinate_zero() {
    // MXNet divides by zero here (NaN, infinity); oxnet puts the one pixel at the centre
    let a = arr(vec![1., 0., 0.25, 0., 1., 0.], &[1, 6], DType::F64);
    let g = invoke1(GRID, &[&a], &raw(&[("transform_type", "affine"), ("target_shape", "(1, 3)")])).unwrap();
    assert_eq!(g.to_vec::<f64>().unwrap(), [-0.75, 0.25, 1.25, 0., 0., 0.]);
    let f = arr(vec![1., 1., 1., 5., 5., 5.], &[1, 2, 1, 3], DType::F64);
    let g = invoke1(GRID, &[&f], &raw(&[("transform_type", "warp")])).unwrap();
    assert_eq!(g.to_vec::<f64>().unwrap(), [0., 1., 2., 0., 0., 0.]);
    // one output row of a transformer reads the data's middle row
    let x = arr((0..12).map(f64::from).collect(), &[1, 1, 3, 4], DType::F64);
    let loc = arr(vec![1., 0., 0., 0., 1., 0.], &[1, 6], DType::F64);
    let y = invoke1(STN, &[&x, &loc], &raw(&stn_attrs("(1, 4)"))).unwrap();
    compare(STN, "one row", &y.to_vec::<f64>().unwrap(), &[4., 5., 6., 7.], 1e-12, 1e-12).unwrap();
}

/// The data of the examples of MXNet's documentation of `BilinearSampler`.
fn doc_data() -> NDArray {
    let v = [1., 4., 3., 6., 1., 8., 8., 9., 0., 4., 1., 5., 1., 0., 1., 3.];
    arr(v.to_vec(), &[1, 1, 4, 4], DType::F32)
}

#[test]
fn zoom_example_of_mxnet() {
    let a = arr(vec![2., 0., 0., 0., 2., 0.], &[1, 6], DType::F32);
    let g = invoke1(GRID, &[&a], &raw(&[("transform_type", "affine"), ("target_shape", "(4, 4)")])).unwrap();
    let y = invoke1(SAMPLER, &[&doc_data(), &g], &[]).unwrap().to_vec::<f64>().unwrap();
    let want = [0., 0., 0., 0., 0., 3.5, 6.5, 0., 0., 1.25, 2.5, 0., 0., 0., 0., 0.];
    compare(SAMPLER, "zoomed", &y, &want, 1e-6, 1e-6).unwrap();
    // the transformer does both steps
    let y = invoke1(STN, &[&doc_data(), &a], &raw(&stn_attrs("(4, 4)"))).unwrap().to_vec::<f64>().unwrap();
    compare(STN, "zoomed", &y, &want, 1e-6, 1e-6).unwrap();
}

#[test]
fn shift_example_of_mxnet() {
    let mut flow = vec![1.0; 16];
    flow.extend([0.0; 16]);
    let f = arr(flow, &[1, 2, 4, 4], DType::F32);
    let g = invoke1(GRID, &[&f], &raw(&[("transform_type", "warp")])).unwrap();
    let y = invoke1(SAMPLER, &[&doc_data(), &g], &[]).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(y, [4., 3., 6., 0., 8., 8., 9., 0., 4., 1., 5., 0., 0., 1., 3., 0.]);
}

#[test]
fn positions_off_the_data_fade_to_zero() {
    // one row [1, 2] (h = 1: every y reads row 0); x in pixels = (g + 1) / 2
    let x = arr(vec![1., 2.], &[1, 1, 1, 2], DType::F64);
    let gx = [-1.0, 0.0, 1.0, -1.5, 1.5, -3.0, 3.0, 1e30];
    let mut grid = gx.to_vec();
    grid.extend([0.3; 8]);
    let g = arr(grid, &[1, 2, 1, 8], DType::F64);
    let y = invoke1(SAMPLER, &[&x, &g], &[]).unwrap().to_vec::<f64>().unwrap();
    assert_eq!(y, [1., 1.5, 2., 0.75, 1.5, 0., 0., 0.]);
}

#[test]
fn positions_that_are_not_numbers_give_nan_without_panicking() {
    let x = arr(vec![1., 2., 3., 4.], &[1, 1, 2, 2], DType::F32);
    let g = arr(
        vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0., 0., 0., 0., f64::NAN],
        &[1, 2, 1, 4],
        DType::F32,
    );
    g.attach_grad(Req::Write).unwrap();
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1(SAMPLER, &[&x, &g], &[]).unwrap()
    };
    let v = y.to_vec::<f32>().unwrap();
    assert!(v.iter().all(|v| v.is_nan()), "{v:?}");
    autograd::backward(&[&y], &[None], BackwardOptions::default()).unwrap();
    assert_eq!(x.grad().unwrap().shape(), &[1, 1, 2, 2]);
}

#[test]
fn transformer_is_grid_generator_then_sampler() {
    let x = arr(sample(&[2, 3, 5, 6], 4), &[2, 3, 5, 6], DType::F64);
    let loc = arr(
        vec![0.83, -0.27, 0.13, 0.23, 0.91, -0.06, 1.07, 0.19, -0.13, -0.12, 0.71, 0.18],
        &[2, 6],
        DType::F64,
    );
    let (y, grads) = run(STN, &stn_attrs("(4, 3)"), &[x.clone(), loc.clone()]);
    // the same through the two operators
    x.attach_grad(Req::Write).unwrap();
    loc.attach_grad(Req::Write).unwrap();
    let y2 = {
        let _r = autograd::record();
        let g = invoke1(GRID, &[&loc], &raw(&[("transform_type", "affine"), ("target_shape", "(4, 3)")]))
            .unwrap();
        invoke1(SAMPLER, &[&x, &g], &[]).unwrap()
    };
    let dy = arr(head(y2.shape()), y2.shape(), DType::F64);
    autograd::backward(&[&y2], &[Some(&dy)], BackwardOptions::default()).unwrap();
    compare(STN, "output", &y.to_vec::<f64>().unwrap(), &y2.to_vec::<f64>().unwrap(), 1e-14, 1e-14).unwrap();
    for (i, (g, a)) in grads.iter().zip([&x, &loc]).enumerate() {
        let want = a.grad().unwrap().to_vec::<f64>().unwrap();
        compare(STN, &format!("gradient of input {i}"), g, &want, 1e-12, 1e-12).unwrap();
    }
}

#[test]
fn gradients_match_central_differences() {
    let theta =
        arr(vec![0.9, 0.2, 0.1, -0.3, 1.1, 0.05, -0.7, 0.4, -0.2, 0.5, 0.6, 0.3], &[2, 6], DType::F64);
    OpChecker::new(GRID, &[theta])
        .attr("transform_type", "affine")
        .attr("target_shape", "(3, 4)")
        .run()
        .unwrap();
    let flow = arr(sample(&[2, 2, 3, 4], 1), &[2, 2, 3, 4], DType::F64);
    OpChecker::new(GRID, &[flow]).attr("transform_type", "warp").run().unwrap();

    let x = arr(sample(&[2, 2, 3, 4], 0), &[2, 2, 3, 4], DType::F64);
    let g = arr(grid_values(36), &[2, 2, 3, 3], DType::F64);
    OpChecker::new(SAMPLER, &[x, g]).run().unwrap();

    let x = arr(sample(&[2, 3, 5, 6], 3), &[2, 3, 5, 6], DType::F64);
    let loc = arr(
        vec![0.83, -0.27, 0.13, 0.23, 0.91, -0.06, 1.07, 0.19, -0.13, -0.12, 0.71, 0.18],
        &[2, 6],
        DType::F64,
    );
    let mut c = OpChecker::new(STN, &[x, loc]);
    for (k, v) in stn_attrs("(4, 3)") {
        c = c.attr(k, v);
    }
    c.run().unwrap();
}

#[test]
fn float16_is_close_to_float32() {
    let x = sample(&[2, 2, 3, 4], 0);
    let g = grid_values(36);
    let run16 = |dtype: DType| {
        let (y, grads) =
            run(SAMPLER, &[], &[arr(x.clone(), &[2, 2, 3, 4], dtype), arr(g.clone(), &[2, 2, 3, 3], dtype)]);
        assert_eq!(y.dtype(), dtype);
        (y.to_vec::<f64>().unwrap(), grads)
    };
    let (y16, g16) = run16(DType::F16);
    let (y32, g32) = run16(DType::F32);
    compare(SAMPLER, "float16 output", &y16, &y32, 1e-2, 2e-2).unwrap();
    for (a, b) in g16.iter().zip(&g32) {
        compare(SAMPLER, "float16 gradient", a, b, 1e-2, 5e-2).unwrap();
    }
}

#[test]
fn mxnet_names_and_attributes() {
    let names = |op: &str, attrs: &[(&str, &str)]| {
        let def = registry::get(op).unwrap();
        let a = def.parse_attrs(&raw(attrs)).unwrap();
        ((def.arguments)(&a).unwrap(), (def.outputs)(&a).unwrap().len())
    };
    assert_eq!(names(GRID, &[("transform_type", "warp")]), (vec!["data".to_string()], 1));
    assert_eq!(names(SAMPLER, &[("cudnn_off", "True")]), (vec!["data".to_string(), "grid".to_string()], 1));
    assert_eq!(names(STN, &stn_attrs("(2, 2)")), (vec!["data".to_string(), "loc".to_string()], 1));
    // transform_type (and sampler_type) are required, as in MXNet
    for (op, attrs, missing) in [
        (GRID, vec![("target_shape", "(2, 2)")], "transform_type"),
        (STN, vec![("target_shape", "(2, 2)"), ("sampler_type", "bilinear")], "transform_type"),
        (STN, vec![("target_shape", "(2, 2)"), ("transform_type", "affine")], "sampler_type"),
    ] {
        let e = registry::get(op).unwrap().parse_attrs(&raw(&attrs)).unwrap_err().to_string();
        assert!(e.contains(op) && e.contains(missing), "{e}");
    }
}

/// The error of a call, which must name the operator and `what`.
fn assert_fails(op: &str, inputs: &[&NDArray], attrs: &[(&str, &str)], what: &str) {
    let e = invoke(op, inputs, &raw(attrs)).map(|_| ()).unwrap_err().to_string();
    assert!(e.contains(op) && e.contains(what), "{op} {attrs:?}: `{e}` should name {what}");
}

#[test]
fn bad_calls_are_errors_naming_the_operator_and_argument() {
    let f32s = |shape: &[usize]| arr(sample(shape, 0), shape, DType::F32);
    let affine = [("transform_type", "affine"), ("target_shape", "(2, 3)")];
    assert_fails(
        GRID,
        &[&f32s(&[2, 6])],
        &[("transform_type", "rotate"), ("target_shape", "(2, 3)")],
        "transform_type",
    );
    assert_fails(GRID, &[&f32s(&[2, 6])], &[("transform_type", "affine")], "target_shape");
    assert_fails(
        GRID,
        &[&f32s(&[2, 6])],
        &[("transform_type", "affine"), ("target_shape", "(2, 3, 4)")],
        "target_shape",
    );
    assert_fails(GRID, &[&f32s(&[2, 5])], &affine, "data");
    assert_fails(GRID, &[&f32s(&[2, 2, 3])], &affine, "data");
    assert_fails(GRID, &[&f32s(&[2, 3, 3, 4])], &[("transform_type", "warp")], "data");
    assert_fails(GRID, &[&f32s(&[2, 6])], &[("transform_type", "warp")], "data");
    let ints = arr(vec![1.; 12], &[2, 6], DType::I32);
    assert_fails(GRID, &[&ints], &affine, "dtype");

    let x = f32s(&[2, 2, 3, 4]);
    assert_fails(SAMPLER, &[&x, &f32s(&[2, 3, 3, 3])], &[], "grid");
    assert_fails(SAMPLER, &[&x, &f32s(&[3, 2, 3, 3])], &[], "grid");
    assert_fails(SAMPLER, &[&x, &f32s(&[2, 2, 9])], &[], "grid");
    assert_fails(SAMPLER, &[&f32s(&[2, 2, 12]), &f32s(&[2, 2, 3, 3])], &[], "data");
    assert_fails(SAMPLER, &[&x, &f32s(&[2, 2, 3, 3])], &[("cudnn_off", "maybe")], "cudnn_off");
    let g64 = arr(grid_values(36), &[2, 2, 3, 3], DType::F64);
    assert_fails(SAMPLER, &[&x, &g64], &[], "grid");

    let stn = stn_attrs("(2, 2)");
    assert_fails(STN, &[&x, &f32s(&[2, 4])], &stn, "loc");
    assert_fails(STN, &[&x, &f32s(&[3, 6])], &stn, "loc");
    assert_fails(STN, &[&f32s(&[2, 24]), &f32s(&[2, 6])], &stn, "data");
    assert_fails(STN, &[&x, &f32s(&[2, 6])], &stn_attrs("(0, 2)"), "target_shape");
    let bad = [("target_shape", "(2, 2)"), ("transform_type", "warp"), ("sampler_type", "bilinear")];
    assert_fails(STN, &[&x, &f32s(&[2, 6])], &bad, "transform_type");
    let bad = [("target_shape", "(2, 2)"), ("transform_type", "affine"), ("sampler_type", "nearest")];
    assert_fails(STN, &[&x, &f32s(&[2, 6])], &bad, "sampler_type");
}

/// Runs `op`'s partial shape inference on `ins` (`None`: unknown).
fn infer(
    op: &str,
    attrs: &[(&str, &str)],
    ins: &[Option<&[usize]>],
    out: Option<&[usize]>,
) -> (Vec<Option<Shape>>, Option<Shape>) {
    let def = registry::get(op).unwrap();
    let partial = def.infer_shape_partial.clone().expect("partial inference");
    let a = def.parse_attrs(&raw(attrs)).unwrap();
    let mut ins: Vec<Option<Shape>> = ins.iter().map(|s| s.map(Shape::from_slice)).collect();
    let mut outs = vec![out.map(Shape::from_slice)];
    partial(&a, &mut ins, &mut outs).unwrap();
    (ins, outs.pop().unwrap())
}

#[test]
fn shape_inference_over_partial_shapes() {
    let s = |v: &[usize]| Some(Shape::from_slice(v));
    // the transformer's loc follows the data's batch
    let (ins, out) = infer(STN, &stn_attrs("(4, 3)"), &[Some(&[2, 3, 5, 6]), None], None);
    assert_eq!((ins[1].clone(), out), (s(&[2, 6]), s(&[2, 3, 4, 3])));
    let (ins, out) = infer(STN, &stn_attrs("(4, 3)"), &[None, Some(&[5, 6])], None);
    assert_eq!((ins[1].clone(), out), (s(&[5, 6]), s(&[5, 0, 4, 3])));
    // the sampler's output from either input
    let (_, out) = infer(SAMPLER, &[], &[None, Some(&[2, 2, 7, 8])], None);
    assert_eq!(out, s(&[2, 0, 7, 8]));
    let (_, out) = infer(SAMPLER, &[], &[Some(&[2, 3, 4, 5]), Some(&[2, 2, 7, 8])], None);
    assert_eq!(out, s(&[2, 3, 7, 8]));
    // the generator's data from its output
    let affine = [("transform_type", "affine"), ("target_shape", "(4, 3)")];
    let (ins, out) = infer(GRID, &affine, &[None], Some(&[5, 2, 4, 3]));
    assert_eq!((ins[0].clone(), out), (s(&[5, 6]), s(&[5, 2, 4, 3])));
    let (ins, out) = infer(GRID, &affine, &[Some(&[0, 6])], None);
    assert_eq!((ins[0].clone(), out), (s(&[0, 6]), s(&[0, 2, 4, 3])));
    let (ins, _) = infer(GRID, &[("transform_type", "warp")], &[None], Some(&[5, 2, 4, 3]));
    assert_eq!(ins[0], s(&[5, 2, 4, 3]));
}

#[test]
fn dtypes_follow_the_inputs() {
    let def = registry::get(STN).unwrap();
    let a = def.parse_attrs(&raw(&stn_attrs("(2, 2)"))).unwrap();
    let mut ins = vec![None, Some(DType::F64)];
    let mut outs = vec![None];
    (def.infer_type)(&a, &mut ins, &mut outs).unwrap();
    assert_eq!((ins, outs), (vec![Some(DType::F64); 2], vec![Some(DType::F64)]));
}
