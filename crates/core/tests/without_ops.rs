//! oxnet-core used alone, as a crate that links no operator crate: only the
//! `Custom` operator exists, a built-in's name is a clear error that says
//! how to get the built-ins, and core's own calls by name (autograd adding
//! gradients with `elemwise_add`) fail the same way without a panic.

use oxnet_core::autograd::{self, BackwardOptions};
use oxnet_core::store::store_slice;
use oxnet_core::{invoke1, registry, BackwardDeps, Error, NDArray, OpDef, Req};

fn assert_hints_at_oxnet_ops(err: &Error, name: &str) {
    assert!(matches!(err, Error::UnknownOp(n) if n == name), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&format!("unknown operator `{name}`")), "{msg}");
    assert!(msg.contains("oxnet-ops") && msg.contains("use oxnet_ops as _;"), "{msg}");
}

#[test]
fn a_builtin_name_is_unknown_with_a_hint_to_link_oxnet_ops() {
    assert!(!registry::operator_crates_linked());
    let x = NDArray::from_vec(vec![1.0f32], &[1]).unwrap();
    assert_hints_at_oxnet_ops(&invoke1("sigmoid", &[&x], &[]).unwrap_err(), "sigmoid");
    assert_hints_at_oxnet_ops(&registry::get("FullyConnected").unwrap_err(), "FullyConnected");
}

#[test]
fn only_core_operators_are_listed() {
    assert!(registry::contains("Custom"));
    for builtin in ["sigmoid", "elemwise_add", "dot", "sum", "reshape", "softmax", "sgd_update", "take"] {
        assert!(!registry::contains(builtin), "`{builtin}` is registered without oxnet-ops");
    }
}

/// `y = 3x` with a backward kernel, made of core alone.
fn register_triple() {
    fn times3(req: Req, x: &NDArray, out: &NDArray) -> oxnet_core::Result<()> {
        let y: Vec<f32> = x.as_slice::<f32>()?.iter().map(|v| 3.0 * v).collect();
        store_slice(req, out.as_mut_slice::<f32>()?, &y);
        Ok(())
    }
    registry::register(
        OpDef::new("core_only_triple")
            .forward(|ctx, ins, outs| times3(ctx.req[0], &ins[0], &outs[0]))
            .backward(
                |_| BackwardDeps { out_grads: vec![0], ..Default::default() },
                |ctx, args, in_grads| match &args.out_grads[0] {
                    Some(dy) => times3(ctx.req[0], dy, &in_grads[0]),
                    None => Ok(()),
                },
            ),
    );
}

#[test]
fn user_operators_differentiate_and_adding_gradients_says_what_is_missing() {
    register_triple();
    let x = NDArray::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    x.attach_grad(Req::Write).unwrap();

    // one path: no gradient to add up, core alone suffices
    let y = {
        let _r = autograd::record();
        invoke1("core_only_triple", &[&x], &[]).unwrap()
    };
    y.backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![3.0, 3.0]);

    // two paths into `y`: autograd adds their gradients with `elemwise_add`
    let (a, b) = {
        let _r = autograd::record();
        let y = invoke1("core_only_triple", &[&x], &[]).unwrap();
        (invoke1("core_only_triple", &[&y], &[]).unwrap(), invoke1("core_only_triple", &[&y], &[]).unwrap())
    };
    let err = autograd::backward(&[&a, &b], &[], BackwardOptions::default()).unwrap_err();
    assert!(err.to_string().contains("unknown operator `elemwise_add`"), "{err}");
    assert!(err.to_string().contains("oxnet-ops"), "{err}");

    // the engine stays usable
    let z = invoke1("core_only_triple", &[&x], &[]).unwrap();
    assert_eq!(z.to_vec::<f32>().unwrap(), vec![3.0, 6.0]);
}
