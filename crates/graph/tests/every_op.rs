//! Every registered operator with a gradient, run as a one-node graph by the
//! [`Executor`] and compared with imperative autograd on the same inputs.
//!
//! For each operator the table in [`cases`] gives attributes and sample
//! inputs (values, shapes, dtypes, which inputs take no gradient). Each case
//! builds `op(x0, x1, ...)` with [`Symbol::compose_op`] over one variable
//! per input and checks, against `invoke` under `autograd::record()` +
//! `autograd::backward` with the same head gradients:
//!
//! * outputs of `forward(true)` and `forward(false)` (the latter against an
//!   imperative call in predict mode), float64 inputs, tolerance 1e-12;
//! * gradients with grad_req `write` (also after a second backward, which
//!   must overwrite, not add);
//! * grad_req `add`: buffers pre-filled with [`ADD_FILL`] end as
//!   `ADD_FILL + g`, and as `ADD_FILL + 2g` after a second backward;
//! * grad_req `null` on the first differentiable input (no gradient buffer)
//!   with `write` on the others, which must still get their gradients
//!   (operators with one differentiable input: everything `null`, forward
//!   only).
//!
//! [`every_op_with_a_gradient_has_a_case`] fails when an operator with a
//! gradient (`Gradient::Rule`, `Kernel` or `Zero`) has no case and is not in
//! [`EXCLUDED`], so new operators get covered. Aliases are one operator
//! (`list_ops` folds them); cases may name an operator by an alias.

use oxnet_core::{autograd, random, registry, AttrValue, DType, Device, Gradient, NDArray, Req, Result};
use oxnet_graph::{Executor, Symbol};
use std::collections::{BTreeMap, BTreeSet};

/// Operators with a gradient that have no case, each with the reason.
/// Keep this short: prefer adding a case.
const EXCLUDED: &[(&str, &str)] = &[
    (
        "_contrib_boolean_mask",
        "its output shape depends on the mask's values: imperative only, no graph (its unit tests check the gradient)",
    ),
    ("reset_arrays", "it has no outputs: it zeroes its inputs in place (its unit test checks that)"),
    (
        "IdentityAttachKLSparseReg",
        "each backward pass moves its aux state moving_avg, which the next gradient reads: repeated backward passes differ by design (its unit test checks the values through autograd)",
    ),
];

/// Operators whose executor result disagrees with imperative autograd, with
/// the diagnosis. Their cases still run and must fail; a case that starts to
/// pass makes the test fail so that the entry gets removed.
const KNOWN_BUGS: &[(&str, &str)] = &[];

/// What `add` gradient buffers hold before backward.
const ADD_FILL: f64 = 0.75;
/// The seed set before every forward call, so that operators drawing random
/// numbers (Dropout) draw the same numbers imperatively and in the executor.
/// The generator is global: no other test in this file may draw from it.
const SEED: u64 = 20240611;
const RTOL: f64 = 1e-12;
const ATOL: f64 = 1e-12;

/// The name under which the test's custom operator (for `Custom`) is registered.
const CUSTOM_OP_TYPE: &str = "every_op_mul_add";

#[path = "every_op/cases.rs"]
mod cases;
use cases::{cases, distinct, next_salt, numel, setup, Case, In};

// ---------------------------------------------------------------------------
// Running one case

type Outcome = std::result::Result<(), String>;

fn err(what: &str) -> impl Fn(oxnet_core::Error) -> String + '_ {
    move |e| format!("{what}: {e}")
}

fn compare(what: &str, got: &[f64], want: &[f64]) -> Outcome {
    if got.len() != want.len() {
        return Err(format!("{what}: {} values, expected {}", got.len(), want.len()));
    }
    for (j, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = g == w || (g - w).abs() <= ATOL + RTOL * w.abs();
        if !ok {
            return Err(format!("{what}: element {j} is {g}, expected {w}\n  got  {got:?}\n  want {want:?}"));
        }
    }
    Ok(())
}

/// Shape, dtype and values of an array.
#[derive(Debug, Clone)]
struct Snap {
    shape: Vec<usize>,
    dtype: DType,
    values: Vec<f64>,
}

fn snap(a: &NDArray) -> Snap {
    Snap { shape: a.shape().to_vec(), dtype: a.dtype(), values: a.to_vec::<f64>().unwrap() }
}

fn compare_snaps(what: &str, got: &[Snap], want: &[Snap]) -> Outcome {
    if got.len() != want.len() {
        return Err(format!("{what}: {} outputs, expected {}", got.len(), want.len()));
    }
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        if g.shape != w.shape || g.dtype != w.dtype {
            return Err(format!(
                "{what}: output {k} is {:?} {}, expected {:?} {}",
                g.shape, g.dtype, w.shape, w.dtype
            ));
        }
        compare(&format!("{what}: output {k}"), &g.values, &w.values)?;
    }
    Ok(())
}

/// The imperative reference of one case.
struct Reference {
    /// Visible outputs of a recorded train-mode call.
    train: Vec<Snap>,
    /// Visible outputs of a predict-mode call.
    predict: Vec<Snap>,
    /// One head gradient per visible output.
    head_grads: Vec<NDArray>,
    /// Gradient of each input (`None` for inputs without gradient).
    grads: Vec<Option<Vec<f64>>>,
}

fn call(case: &Case, params: &[(String, String)], inputs: &[NDArray]) -> Result<Vec<NDArray>> {
    let attrs: Vec<(&str, AttrValue)> =
        params.iter().map(|(k, v)| (k.as_str(), AttrValue::Raw(v.clone()))).collect();
    let refs: Vec<&NDArray> = inputs.iter().collect();
    random::seed(SEED);
    oxnet_core::invoke(case.op, &refs, &attrs)
}

fn reference(
    case: &Case,
    params: &[(String, String)],
    n_args: usize,
    n_vis: usize,
) -> std::result::Result<Reference, String> {
    let inputs: Vec<NDArray> = case.inputs.iter().map(In::array).collect();
    let differentiable: Vec<bool> =
        case.inputs.iter().enumerate().map(|(i, s)| s.grad && i < n_args).collect();
    for (x, d) in inputs.iter().zip(&differentiable) {
        if *d {
            x.attach_grad(Req::Write).map_err(err("attach_grad"))?;
        }
    }
    let outs = {
        let _r = autograd::record();
        call(case, params, &inputs).map_err(err("imperative forward (train)"))?
    };
    let outs = &outs[..n_vis.min(outs.len())];
    let train: Vec<Snap> = outs.iter().map(snap).collect();
    let head_grads: Vec<NDArray> = outs
        .iter()
        .map(|o| {
            let v = distinct(o.size(), 0.5, 1.5, next_salt());
            NDArray::from_vec(v, o.shape()).unwrap().astype(o.dtype()).unwrap()
        })
        .collect();
    let any_grad = differentiable.iter().any(|d| *d);
    if any_grad {
        let heads: Vec<&NDArray> = outs.iter().collect();
        let hg: Vec<Option<&NDArray>> = head_grads.iter().map(Some).collect();
        autograd::backward(&heads, &hg, Default::default()).map_err(err("imperative backward"))?;
    }
    let grads = inputs
        .iter()
        .zip(&differentiable)
        .map(|(x, d)| d.then(|| x.grad().expect("attached").to_vec::<f64>().unwrap()))
        .collect();
    let predict = {
        let fresh: Vec<NDArray> = case.inputs.iter().map(In::array).collect();
        let _p = autograd::pause();
        let _m = autograd::predict_mode();
        call(case, params, &fresh).map_err(err("imperative forward (predict)"))?
    };
    let predict = predict[..n_vis.min(predict.len())].iter().map(snap).collect();
    Ok(Reference { train, predict, head_grads, grads })
}

/// Binds `sym` with fresh copies of the case's inputs, one request per
/// argument; `add` buffers start at [`ADD_FILL`].
fn bind(sym: &Symbol, case: &Case, n_args: usize, reqs: &[Req]) -> std::result::Result<Executor, String> {
    let arrays: Vec<NDArray> = case.inputs.iter().map(In::array).collect();
    let (args, aux) = arrays.split_at(n_args);
    let grads = args
        .iter()
        .zip(reqs)
        .map(|(a, r)| match r {
            Req::Null => None,
            Req::Add => Some(NDArray::full(a.shape(), ADD_FILL, a.dtype(), Device::Cpu).unwrap()),
            _ => Some(NDArray::full(a.shape(), -3.0, a.dtype(), Device::Cpu).unwrap()), // overwritten
        })
        .collect();
    Executor::new(sym, Device::Cpu, args.to_vec(), grads, reqs.to_vec(), aux.to_vec()).map_err(err("bind"))
}

fn forward(exe: &mut Executor, is_train: bool) -> std::result::Result<Vec<Snap>, String> {
    random::seed(SEED);
    let outs =
        exe.forward(is_train).map_err(err(if is_train { "forward(true)" } else { "forward(false)" }))?;
    Ok(outs.iter().map(snap).collect())
}

fn backward(exe: &mut Executor, r: &Reference) -> Outcome {
    let hg: Vec<Option<NDArray>> = r.head_grads.iter().map(|g| Some(g.clone())).collect();
    exe.backward(&hg).map_err(err("backward"))
}

fn executor_grad(exe: &Executor, i: usize) -> std::result::Result<Vec<f64>, String> {
    let g = exe.grad_arrays()[i].as_ref().ok_or_else(|| format!("argument {i} has no gradient buffer"))?;
    Ok(g.to_vec::<f64>().unwrap())
}

/// `values` as stored in `dtype`.
fn round_to(dtype: DType, values: Vec<f64>, shape: &[usize]) -> Vec<f64> {
    NDArray::from_vec(values, shape).unwrap().astype(dtype).unwrap().to_vec::<f64>().unwrap()
}

fn run_case(case: &Case) -> Outcome {
    let op = registry::get(case.op).map_err(err("registry"))?;
    let mut params: Vec<(String, String)> =
        case.attrs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    if op.attrs.iter().any(|a| a.name == "num_args") && !params.iter().any(|(k, _)| k == "num_args") {
        params.push(("num_args".into(), case.inputs.len().to_string()));
    }

    // the graph: one variable per input
    let vars: Vec<Symbol> = (0..case.inputs.len()).map(|i| Symbol::var(&format!("x{i}"))).collect();
    let sym = Symbol::compose_op(case.op, &vars, &[], params.clone(), Some("node"), BTreeMap::new())
        .map_err(err("compose_op"))?;
    let call = sym.entries()[0].node.op.clone().expect("an operator node");
    let (n_args, n_aux, n_out) = call.arity().map_err(err("arity"))?;
    if n_args + n_aux != case.inputs.len() {
        return Err(format!(
            "the case gives {} inputs, the operator takes {n_args} + {n_aux} aux",
            case.inputs.len()
        ));
    }
    let n_vis = call.visible_outputs().map_err(err("visible_outputs"))?;
    if sym.num_outputs() != n_vis || n_vis > n_out {
        return Err(format!(
            "the symbol has {} outputs, the operator shows {n_vis} of {n_out}",
            sym.num_outputs()
        ));
    }
    let names = |r: std::ops::Range<usize>| r.map(|i| format!("x{i}")).collect::<Vec<_>>();
    let args = sym.list_arguments().map_err(err("list_arguments"))?;
    let aux = sym.list_auxiliary_states().map_err(err("list_auxiliary_states"))?;
    if args != names(0..n_args) || aux != names(n_args..n_args + n_aux) {
        return Err(format!(
            "arguments {args:?} and aux states {aux:?} are not the variables in input order"
        ));
    }

    let r = reference(case, &params, n_args, n_vis)?;
    let differentiable: Vec<usize> = (0..n_args).filter(|&i| case.inputs[i].grad).collect();
    // the comparisons below are only worth something if the gradients are not all zero
    let nonzero =
        differentiable.iter().any(|&i| r.grads[i].as_ref().is_some_and(|g| g.iter().any(|v| *v != 0.0)));
    match call.op.gradient {
        Gradient::Zero if nonzero => return Err("a Gradient::Zero operator gave a nonzero gradient".into()),
        Gradient::Rule(_) | Gradient::Kernel { .. } if !differentiable.is_empty() && !nonzero => {
            return Err("every reference gradient is zero: choose inputs that show something".into())
        }
        _ => {}
    }
    let req_of = |i: usize, req: Req| if differentiable.contains(&i) { req } else { Req::Null };

    // grad_req write
    let reqs: Vec<Req> = (0..n_args).map(|i| req_of(i, Req::Write)).collect();
    let mut exe = bind(&sym, case, n_args, &reqs)?;
    let outs = forward(&mut exe, true)?;
    compare_snaps("write: forward(true)", &outs, &r.train)?;
    if let Some(property) = case.property {
        let inputs: Vec<NDArray> = case.inputs.iter().map(In::array).collect();
        let values: Vec<Vec<f64>> = outs.iter().map(|s| s.values.clone()).collect();
        property(&inputs, &values).map_err(|e| format!("forward(true): {e}"))?;
    }
    if !differentiable.is_empty() {
        for pass in 1..=2 {
            backward(&mut exe, &r)?;
            for &i in &differentiable {
                let want = r.grads[i].as_ref().expect("differentiable");
                compare(
                    &format!("write: gradient of input {i} after backward #{pass}"),
                    &executor_grad(&exe, i)?,
                    want,
                )?;
            }
        }
    }
    for (i, g) in exe.grad_arrays().iter().enumerate() {
        if g.is_some() != differentiable.contains(&i) {
            return Err(format!("write: argument {i} has a gradient buffer: {}", g.is_some()));
        }
    }
    let outs = forward(&mut exe, false)?;
    compare_snaps("write: forward(false)", &outs, &r.predict)?;
    // a train-mode forward and backward again after a predict-mode forward
    let outs = forward(&mut exe, true)?;
    compare_snaps("write: forward(true) after forward(false)", &outs, &r.train)?;
    if !differentiable.is_empty() {
        backward(&mut exe, &r)?;
        for &i in &differentiable {
            let want = r.grads[i].as_ref().expect("differentiable");
            compare(
                &format!("write: gradient of input {i} after a second forward(true)"),
                &executor_grad(&exe, i)?,
                want,
            )?;
        }
    }

    if differentiable.is_empty() {
        return Ok(());
    }

    // grad_req add: pre-filled buffers accumulate, twice over two backward calls
    let reqs: Vec<Req> = (0..n_args).map(|i| req_of(i, Req::Add)).collect();
    let mut exe = bind(&sym, case, n_args, &reqs)?;
    compare_snaps("add: forward(true)", &forward(&mut exe, true)?, &r.train)?;
    // what the buffers should hold, accumulated (and rounded) in their dtype
    let mut want: Vec<Vec<f64>> = (0..n_args).map(|i| vec![ADD_FILL; numel(&case.inputs[i].shape)]).collect();
    for pass in 1..=2 {
        backward(&mut exe, &r)?;
        for &i in &differentiable {
            let g = r.grads[i].as_ref().expect("differentiable");
            let sum: Vec<f64> = want[i].iter().zip(g).map(|(a, b)| a + b).collect();
            want[i] = round_to(case.inputs[i].dtype, sum, &case.inputs[i].shape);
            compare(
                &format!("add: gradient of input {i} after backward #{pass}"),
                &executor_grad(&exe, i)?,
                &want[i],
            )?;
        }
    }
    compare_snaps("add: forward(false)", &forward(&mut exe, false)?, &r.predict)?;

    // grad_req null on the first differentiable input, write on the others
    let first = differentiable[0];
    let reqs: Vec<Req> =
        (0..n_args).map(|i| if i == first { Req::Null } else { req_of(i, Req::Write) }).collect();
    let mut exe = bind(&sym, case, n_args, &reqs)?;
    compare_snaps("null: forward(true)", &forward(&mut exe, true)?, &r.train)?;
    if exe.grad_arrays()[first].is_some() {
        return Err(format!("null: argument {first} has a gradient buffer"));
    }
    if differentiable.len() >= 2 {
        backward(&mut exe, &r)?;
        for &i in &differentiable[1..] {
            let want = r.grads[i].as_ref().expect("differentiable");
            compare(
                &format!("null on input {first}: gradient of input {i}"),
                &executor_grad(&exe, i)?,
                want,
            )?;
        }
    }
    compare_snaps("null: forward(false)", &forward(&mut exe, false)?, &r.predict)?;
    Ok(())
}

fn has_gradient(name: &str) -> bool {
    let op = registry::get(name).unwrap();
    matches!(op.gradient, Gradient::Rule(_) | Gradient::Kernel { .. } | Gradient::Zero)
}

fn canonical(name: &str) -> String {
    registry::get(name).map(|op| op.name.clone()).unwrap_or_else(|_| name.to_string())
}

fn case_label(case: &Case) -> String {
    let attrs: Vec<String> = case.attrs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let shapes: Vec<String> =
        case.inputs.iter().map(|i| format!("{:?}{}", i.shape, if i.grad { "" } else { "*" })).collect();
    format!("{}({}; {})", case.op, shapes.join(", "), attrs.join(", "))
}

// ---------------------------------------------------------------------------
// The tests

#[test]
fn executor_matches_imperative_autograd_for_every_op() {
    setup();
    let known: BTreeMap<&str, &str> = KNOWN_BUGS.iter().copied().collect();
    let mut failures = Vec::new();
    let mut known_failures = BTreeSet::new();
    let mut known_passes = BTreeSet::new();
    let cases = cases();
    for case in &cases {
        let name = canonical(case.op);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_case(case)))
            .unwrap_or_else(|p| {
                Err(format!(
                    "panicked: {}",
                    p.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default()
                ))
            });
        match (outcome, known.contains_key(name.as_str())) {
            (Ok(()), false) => {}
            (Ok(()), true) => {
                known_passes.insert(name);
            }
            (Err(e), true) => {
                eprintln!("known bug, still failing: {}: {e}", case_label(case));
                known_failures.insert(name);
            }
            (Err(e), false) => failures.push(format!("{}: {e}", case_label(case))),
        }
    }
    let fixed: Vec<&String> = known_passes.difference(&known_failures).collect();
    assert!(
        failures.is_empty() && fixed.is_empty(),
        "{} of {} cases failed:\n{}\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n"),
        if fixed.is_empty() {
            String::new()
        } else {
            format!("operators in KNOWN_BUGS whose cases all pass now (remove them from the list): {fixed:?}")
        }
    );
}

#[test]
fn every_op_with_a_gradient_has_a_case() {
    setup();
    let covered: BTreeSet<String> = cases().iter().map(|c| canonical(c.op)).collect();
    let excluded: BTreeMap<&str, &str> = EXCLUDED.iter().copied().collect();
    let mut problems = Vec::new();
    for (name, _) in EXCLUDED.iter().chain(KNOWN_BUGS) {
        if !registry::contains(name) {
            problems.push(format!("`{name}` is listed in EXCLUDED or KNOWN_BUGS but not registered"));
        } else if canonical(name) != *name {
            problems.push(format!("`{name}` is an alias; list `{}`", canonical(name)));
        }
    }
    for name in &covered {
        if !registry::contains(name) {
            problems.push(format!("a case names `{name}`, which is not registered"));
        } else if !has_gradient(name) {
            problems.push(format!("a case names `{name}`, which has no gradient"));
        }
        if excluded.contains_key(name.as_str()) {
            problems.push(format!("`{name}` has a case and is in EXCLUDED"));
        }
    }
    for (name, _) in KNOWN_BUGS {
        if !covered.contains(*name) {
            problems.push(format!("`{name}` is in KNOWN_BUGS but has no case"));
        }
    }
    let mut with_gradient = 0;
    for info in registry::list_ops() {
        if !has_gradient(&info.name) {
            continue;
        }
        with_gradient += 1;
        if !covered.contains(&info.name) && !excluded.contains_key(info.name.as_str()) {
            problems.push(format!(
                "operator `{}` has a gradient but no case in tests/every_op.rs: add one to `cases()` \
                 (or, with a reason, to EXCLUDED)",
                info.name
            ));
        }
    }
    assert!(with_gradient > 0, "no operator with a gradient is registered");
    eprintln!(
        "{with_gradient} operators with a gradient: {} with cases, {} excluded",
        covered.len(),
        EXCLUDED.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
