//! The dispatcher runs a write over an input in place when the operator
//! declares that input-output pair in place and the output is the very same
//! view; otherwise it computes into a temporary and copies back.

use std::sync::Mutex;

use oxnet_core::{invoke_into, registry, NDArray, OpDef, Req};

/// The request each test operator's kernel last saw, by operator name.
static SEEN: Mutex<Vec<(String, Req)>> = Mutex::new(Vec::new());

fn seen(name: &str) -> Req {
    SEEN.lock().unwrap().iter().rev().find(|(n, _)| n == name).map(|(_, r)| *r).unwrap()
}

/// out = a + b, element-wise, recording its request.
fn register_add(name: &'static str, inplace: &[(usize, usize)]) {
    let def = OpDef::new(name)
        .doc("Adds two arrays (dispatch test operator).")
        .arguments(&["a", "b"])
        .inplace(inplace)
        .forward(move |ctx, ins, outs| {
            SEEN.lock().unwrap().push((name.to_string(), ctx.req[0]));
            let (a, b) = (ins[0].to_vec::<f32>()?, ins[1].to_vec::<f32>()?);
            let sum: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
            outs[0].assign_from(&NDArray::from_vec(sum, outs[0].shape())?)
        });
    registry::register(def);
}

fn call(name: &str, a: &NDArray, b: &NDArray, out: &NDArray) {
    let op = registry::get(name).unwrap();
    invoke_into(&op, &[a, b], &op.parse_attrs(&[]).unwrap(), std::slice::from_ref(out), &[Req::Write])
        .unwrap();
}

#[test]
fn declared_exact_alias_runs_in_place_others_through_a_temporary() {
    register_add("test_add_inplace_decl", &[(0, 0)]);
    register_add("test_add_no_inplace", &[]);
    let fresh = || {
        (
            NDArray::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap(),
            NDArray::from_vec(vec![10.0f32, 20.0, 30.0], &[3]).unwrap(),
        )
    };

    // out is input 0 itself, declared in place: no temporary
    let (a, b) = fresh();
    call("test_add_inplace_decl", &a, &b, &a);
    assert_eq!(seen("test_add_inplace_decl"), Req::Inplace);
    assert_eq!(a.to_vec::<f32>().unwrap(), [11.0, 22.0, 33.0]);

    // not declared: the kernel writes a temporary, copied back
    let (a, b) = fresh();
    call("test_add_no_inplace", &a, &b, &a);
    assert_eq!(seen("test_add_no_inplace"), Req::Write);
    assert_eq!(a.to_vec::<f32>().unwrap(), [11.0, 22.0, 33.0]);

    // out aliases input 1, whose pair is not declared: temporary
    let (a, b) = fresh();
    call("test_add_inplace_decl", &a, &b, &b);
    assert_eq!(seen("test_add_inplace_decl"), Req::Write);
    assert_eq!(b.to_vec::<f32>().unwrap(), [11.0, 22.0, 33.0]);

    // both inputs are the output: input 1's alias is undeclared, temporary
    let (a, _) = fresh();
    call("test_add_inplace_decl", &a, &a, &a);
    assert_eq!(seen("test_add_inplace_decl"), Req::Write);
    assert_eq!(a.to_vec::<f32>().unwrap(), [2.0, 4.0, 6.0]);
}
