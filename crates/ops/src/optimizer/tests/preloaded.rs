//! `preloaded_multi_*sgd*_update`.

use super::{arr, close, read, run, try_run, Tensors};
use oxnet_core::{invoke, AttrValue, DType, NDArray, Req};

/// MXNet 1.9.1's results on [`Tensors`] with lrs [0.1, 0.05], wds [0.01,
/// 0.2], rescale_grad 0.5, clip_gradient 1 (momentum 0.9): the new master
/// weights (float32) and momenta, per weight.
const SGD_W: [&[f64]; 2] = [
    &[0.3995000123977661, -1.2237499952316284, 1.9229999780654907],
    &[1.0399999618530273, -0.7456250190734863, 0.22875000536441803, 3.984999895095825],
];
const MOM_W: [&[f64]; 2] = [
    &[0.4894999861717224, -1.403749942779541, 1.9229999780654907],
    &[1.0399999618530273, -0.2956250309944153, 0.0037500113248825073, 4.097499847412109],
];
const MOM_M: [&[f64]; 2] = [
    &[-0.010500006377696991, -0.1537499874830246, -0.07699999958276749],
    &[0.03999999910593033, 0.4543749690055847, -0.2462499886751175, 0.09749998897314072],
];
/// The float16 weights MXNet 1.9.1 returns from the `mp_` forms.
const SGD_W16: [&[f64]; 2] =
    [&[0.3994140625, -1.2236328125, 1.9228515625], &[1.0400390625, -0.74560546875, 0.228759765625, 3.984375]];
const MOM_W16: [&[f64]; 2] = [
    &[0.489501953125, -1.4033203125, 1.9228515625],
    &[1.0400390625, -0.295654296875, 0.003749847412109375, 4.09765625],
];

fn rates() -> [NDArray; 2] {
    [arr(&[0.1, 0.05], &[2], DType::F32), arr(&[0.01, 0.2], &[2], DType::F32)]
}

fn attrs(momentum: bool) -> Vec<(&'static str, AttrValue)> {
    let mut a =
        vec![("rescale_grad", 0.5.into()), ("clip_gradient", 1.0.into()), ("num_weights", 2i64.into())];
    if momentum {
        a.push(("momentum", 0.9.into()));
    }
    a
}

#[test]
fn the_four_forms_match_mxnet_in_place() {
    for (op, mom, mp) in [
        ("preloaded_multi_sgd_update", false, false),
        ("preloaded_multi_sgd_mom_update", true, false),
        ("preloaded_multi_mp_sgd_update", false, true),
        ("preloaded_multi_mp_sgd_mom_update", true, true),
    ] {
        let t = Tensors::new(if mp { DType::F16 } else { DType::F32 }, DType::F32);
        let [lrs, wds] = rates();
        let mut inputs = t.inputs(|t, i| {
            let mut g = vec![&t.w[i], &t.g[i]];
            g.extend(mom.then_some(&t.m[i]));
            g.extend(mp.then_some(&t.w32[i]));
            g
        });
        inputs.extend([&lrs, &wds]);
        run(op, &inputs, &attrs(mom), &t.w, Req::Inplace);
        let (want, want16) = if mom { (MOM_W, MOM_W16) } else { (SGD_W, SGD_W16) };
        for i in 0..2 {
            let master = if mp { &t.w32[i] } else { &t.w[i] };
            close(&format!("{op} weight {i}"), &read(master), want[i], 1e-6);
            if mp {
                assert_eq!(t.w[i].dtype(), DType::F16);
                assert_eq!(read(&t.w[i]), want16[i], "{op} float16 weight {i}");
            }
            if mom {
                close(&format!("{op} mom {i}"), &read(&t.m[i]), MOM_M[i], 1e-6);
            } else {
                assert_eq!(
                    read(&t.m[i]),
                    read(&Tensors::new(DType::F32, DType::F32).m[i]),
                    "{op}: no momentum"
                );
            }
        }
    }
}

#[test]
fn separate_outputs_leave_the_weights_and_follow_the_rate_arrays() {
    let t = Tensors::new(DType::F64, DType::F64);
    let [lrs, wds] = rates();
    let mut inputs = t.inputs(|t, i| vec![&t.w[i], &t.g[i], &t.m[i]]);
    inputs.extend([&lrs, &wds]);
    let outs = invoke("preloaded_multi_sgd_mom_update", &inputs, &attrs(true)).unwrap();
    assert_eq!(outs.len(), 2);
    assert_eq!(read(&t.w[0]), super::W0.to_vec());
    close("out 1", &read(&outs[1]), MOM_W[1], 1e-6);
    // a zero rate in the array: weight 0 only moves by its momentum
    let t = Tensors::new(DType::F64, DType::F64);
    let lrs = arr(&[0.0, 0.05], &[2], DType::F32);
    let mut inputs = t.inputs(|t, i| vec![&t.w[i], &t.g[i], &t.m[i]]);
    inputs.extend([&lrs, &wds]);
    let outs = invoke("preloaded_multi_sgd_mom_update", &inputs, &attrs(true)).unwrap();
    let want: Vec<f64> = super::W0.iter().zip(super::S0).map(|(w, m)| w + 0.9 * m).collect();
    close("zero rate", &read(&outs[0]), &want, 1e-12);
}

#[test]
fn bad_rate_arrays_and_input_counts_are_errors() {
    let t = Tensors::new(DType::F32, DType::F32);
    let op = "preloaded_multi_sgd_update";
    let [lrs, wds] = rates();
    let three = arr(&[0.1, 0.1, 0.1], &[3], DType::F32);
    let mut inputs = t.inputs(|t, i| vec![&t.w[i], &t.g[i]]);
    inputs.extend([&three, &wds]);
    let e = invoke(op, &inputs, &attrs(false)).unwrap_err().to_string();
    assert!(e.contains(op) && e.contains("lrs") && e.contains("num_weights"), "{e}");
    let lrs64 = lrs.astype(DType::F64).unwrap();
    inputs.truncate(4);
    inputs.extend([&lrs64, &wds]);
    let e = invoke(op, &inputs, &attrs(false)).unwrap_err().to_string();
    assert!(e.contains(op) && e.contains("lrs") && e.contains("float32"), "{e}");
    // one input short for num_weights = 2
    let e = invoke(op, &[&t.w[0], &t.g[0], &t.w[1], &lrs, &wds], &attrs(false)).unwrap_err().to_string();
    assert!(e.contains(op) && e.contains("expects 6 inputs"), "{e}");
    // a gradient of another shape
    let e = try_run(op, &[&t.w[0], &t.g[1], &t.w[1], &t.g[1], &lrs, &wds], &attrs(false), &t.w, Req::Write)
        .unwrap_err();
    assert!(e.contains(op) && e.contains("weight 0") && e.contains("shape"), "{e}");
}
