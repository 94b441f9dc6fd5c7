//! Unit tests of the preloaded and multi-tensor updates, the
//! multi-precision LAMB phases and group AdaGrad, mostly against values
//! computed with MXNet 1.9.1 (`mx.nd.<op>` on the inputs of [`Tensors`]).

mod group_adagrad;
mod lamb_mp;
mod multi_adamw;
mod multi_lamb;
mod preloaded;

use oxnet_core::{invoke_into, registry, AttrValue, DType, NDArray, Req};

/// Weight 0 (shape `(3,)`) and its gradient.
const W0: [f64; 3] = [0.5, -1.25, 2.0];
const G0: [f64; 3] = [3.0, -0.5, 1.5];
/// Weight 1 (shape `(2, 2)`) and its gradient.
const W1: [f64; 4] = [1.0, -0.75, 0.25, 4.0];
const G1: [f64; 4] = [-2.5, 0.125, 0.75, -1.0];
/// The initial first states (momentum or mean) of weights 0 and 1.
const S0: [f64; 3] = [0.1, -0.2, 0.0];
const S1: [f64; 4] = [0.0, 0.5, -0.25, 0.125];
/// The initial second states (variance) of weights 0 and 1.
const V0: [f64; 3] = [0.01, 0.04, 0.0];
const V1: [f64; 4] = [0.0, 0.25, 0.0625, 0.5];

/// An array of `dtype` with values `v` and shape `shape`.
fn arr(v: &[f64], shape: &[usize], dtype: DType) -> NDArray {
    NDArray::from_vec(v.to_vec(), shape).unwrap().astype(dtype).unwrap()
}

/// The values of `a` as f64.
fn read(a: &NDArray) -> Vec<f64> {
    a.to_vec::<f64>().unwrap()
}

/// `got` is `want` within `tol` (absolute, plus relative to `want`).
fn close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}[{i}]: got {g}, want {w}\n  {got:?}\n  {want:?}"
        );
    }
}

/// Runs `op` writing into `outs` under `req`.
fn run(op: &str, inputs: &[&NDArray], attrs: &[(&str, AttrValue)], outs: &[NDArray], req: Req) {
    try_run(op, inputs, attrs, outs, req).unwrap()
}

/// Runs `op` writing into `outs` under `req`; the error text on failure.
fn try_run(
    op: &str,
    inputs: &[&NDArray],
    attrs: &[(&str, AttrValue)],
    outs: &[NDArray],
    req: Req,
) -> Result<(), String> {
    let handle = registry::get(op).unwrap();
    let parsed = handle.parse_attrs(attrs).map_err(|e| e.to_string())?;
    invoke_into(&handle, inputs, &parsed, outs, &vec![req; outs.len()]).map_err(|e| e.to_string())
}

/// The two test tensors: weights and gradients of the weight dtype,
/// states and master copies of the state dtype.
struct Tensors {
    w: [NDArray; 2],
    g: [NDArray; 2],
    m: [NDArray; 2],
    v: [NDArray; 2],
    w32: [NDArray; 2],
}

impl Tensors {
    fn new(dtype: DType, state: DType) -> Tensors {
        let pair = |a: &[f64], b: &[f64], d: DType| [arr(a, &[3], d), arr(b, &[2, 2], d)];
        Tensors {
            w: pair(&W0, &W1, dtype),
            g: pair(&G0, &G1, dtype),
            m: pair(&S0, &S1, state),
            v: pair(&V0, &V1, state),
            w32: pair(&W0, &W1, state),
        }
    }

    /// The inputs of a multi-tensor call: `group(self, i)` for tensors 0 and 1.
    fn inputs<'a>(&'a self, group: impl Fn(&'a Tensors, usize) -> Vec<&'a NDArray>) -> Vec<&'a NDArray> {
        (0..2).flat_map(|i| group(self, i)).collect()
    }
}

/// Float tuple attribute text.
fn tuple(v: &[f64]) -> AttrValue {
    AttrValue::Raw(format!("({})", v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")))
}
