//! Every case of `every_op.rs` (one per operator with a gradient) re-run
//! with its inputs on the GPU and compared with the CPU: the outputs of a
//! recorded call and the input gradients after `backward`, imperatively and
//! through an [`Executor`] bound on the GPU. Operators with GPU kernels run
//! them; the others run on host copies (see `oxnet_core::gpu::fallback`),
//! so this checks both and the transfers around them.
//!
//! Needs a GPU and a build with the `cuda` feature:
//! `cargo test -p oxnet-graph --features oxnet-ops/cuda --test every_op_gpu`.
//! Elsewhere it prints why it checks nothing and passes.

use oxnet_core::{autograd, gpu, random, registry, AttrValue, DType, Device, NDArray, Req, Result};
use oxnet_graph::{Executor, Symbol};
use std::collections::BTreeMap;

/// What `cases.rs` needs from its parent module.
type Outcome = std::result::Result<(), String>;
const CUSTOM_OP_TYPE: &str = "every_op_mul_add";
const SEED: u64 = 20240611;

#[path = "every_op/cases.rs"]
#[allow(dead_code)]
mod cases;
use cases::{cases, distinct, next_salt, setup, Case, In};

const GPU: Device = Device::Gpu(0);

/// Values of one call: outputs, then one gradient per differentiable input.
struct Run {
    outputs: Vec<(Vec<usize>, DType, Vec<f64>)>,
    grads: Vec<Vec<f64>>,
}

fn attrs_of(case: &Case) -> Vec<(String, String)> {
    let mut params: Vec<(String, String)> =
        case.attrs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let op = registry::get(case.op).expect("a registered operator");
    if op.attrs.iter().any(|a| a.name == "num_args") && !params.iter().any(|(k, _)| k == "num_args") {
        params.push(("num_args".into(), case.inputs.len().to_string()));
    }
    params
}

fn host(a: &NDArray) -> Result<Vec<f64>> {
    a.to_vec::<f64>()
}

/// A recorded call of the case on `device` and `backward` with `head_grads`.
fn imperative(case: &Case, device: Device, head_grads: &[Vec<f64>]) -> Result<Run> {
    let params = attrs_of(case);
    let (_, n_args, visible) = graph_of(case)?;
    let inputs: Vec<NDArray> =
        case.inputs.iter().map(|i| i.array().to_device(device)).collect::<Result<_>>()?;
    let diff: Vec<usize> = (0..n_args).filter(|&i| case.inputs[i].grad).collect();
    for &i in &diff {
        inputs[i].attach_grad(Req::Write)?;
    }
    let attrs: Vec<(&str, AttrValue)> =
        params.iter().map(|(k, v)| (k.as_str(), AttrValue::Raw(v.clone()))).collect();
    let refs: Vec<&NDArray> = inputs.iter().collect();
    random::seed(SEED);
    let outs = {
        let _r = autograd::record();
        oxnet_core::invoke(case.op, &refs, &attrs)?
    };
    let outs = &outs[..visible.min(outs.len())];
    for o in outs {
        if o.device() != device {
            return Err(oxnet_core::Error::Device(format!(
                "an output is on {}, expected {device}",
                o.device()
            )));
        }
    }
    let outputs =
        outs.iter().map(|o| Ok((o.shape().to_vec(), o.dtype(), host(o)?))).collect::<Result<Vec<_>>>()?;
    if !diff.is_empty() && !head_grads.is_empty() {
        let hg: Vec<NDArray> = outs
            .iter()
            .zip(head_grads)
            .map(|(o, g)| NDArray::from_vec(g.clone(), o.shape())?.astype(o.dtype())?.to_device(device))
            .collect::<Result<_>>()?;
        let heads: Vec<&NDArray> = outs.iter().collect();
        let hg: Vec<Option<&NDArray>> = hg.iter().map(Some).collect();
        autograd::backward(&heads, &hg, Default::default())?;
    }
    let grads = diff.iter().map(|&i| host(&inputs[i].grad().expect("attached"))).collect::<Result<_>>()?;
    Ok(Run { outputs, grads })
}

/// The same through an executor bound on `device` (grad_req write).
fn executor(case: &Case, device: Device, head_grads: &[Vec<f64>]) -> Result<Run> {
    let (sym, n_args, _) = graph_of(case)?;
    let arrays: Vec<NDArray> =
        case.inputs.iter().map(|i| i.array().to_device(device)).collect::<Result<_>>()?;
    let (args, aux) = arrays.split_at(n_args);
    let diff: Vec<usize> = (0..n_args).filter(|&i| case.inputs[i].grad).collect();
    let grads: Vec<Option<NDArray>> = args
        .iter()
        .enumerate()
        .map(|(i, a)| diff.contains(&i).then(|| NDArray::zeros(a.shape(), a.dtype(), device)).transpose())
        .collect::<Result<_>>()?;
    let reqs: Vec<Req> =
        (0..n_args).map(|i| if diff.contains(&i) { Req::Write } else { Req::Null }).collect();
    let mut exe = Executor::new(&sym, device, args.to_vec(), grads, reqs, aux.to_vec())?;
    random::seed(SEED);
    let outs = exe.forward(true)?;
    let outputs =
        outs.iter().map(|o| Ok((o.shape().to_vec(), o.dtype(), host(o)?))).collect::<Result<Vec<_>>>()?;
    if !diff.is_empty() {
        let hg: Vec<Option<NDArray>> = outs
            .iter()
            .zip(head_grads)
            .map(|(o, g)| {
                NDArray::from_vec(g.clone(), o.shape())?.astype(o.dtype())?.to_device(device).map(Some)
            })
            .collect::<Result<_>>()?;
        exe.backward(&hg)?;
    }
    let grads = diff
        .iter()
        .map(|&i| host(exe.grad_arrays()[i].as_ref().expect("a gradient buffer")))
        .collect::<Result<_>>()?;
    Ok(Run { outputs, grads })
}

/// The case as a one-node graph, with the operator's argument count and
/// its visible outputs.
fn graph_of(case: &Case) -> Result<(Symbol, usize, usize)> {
    let vars: Vec<Symbol> = (0..case.inputs.len()).map(|i| Symbol::var(&format!("x{i}"))).collect();
    let sym = Symbol::compose_op(case.op, &vars, &[], attrs_of(case), Some("node"), BTreeMap::new())?;
    let call = sym.entries()[0].node.op.clone().expect("an operator node");
    let n_args = call.arity()?.0;
    let visible = sym.num_outputs();
    Ok((sym, n_args, visible))
}

/// GPU and CPU agree to `rtol` (float64 maths libraries differ in the last bits).
fn close(what: &str, got: &[f64], want: &[f64], rtol: f64) -> Outcome {
    if got.len() != want.len() {
        return Err(format!("{what}: {} values, expected {}", got.len(), want.len()));
    }
    for (j, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = g == w || (g.is_nan() && w.is_nan()) || (g - w).abs() <= rtol * (1.0 + w.abs());
        if !ok {
            return Err(format!("{what}: element {j} is {g} on the GPU, {w} on the CPU"));
        }
    }
    Ok(())
}

/// Compares two runs; `random`: the operator draws random numbers, which
/// the GPU draws with its own generator, so only shapes and dtypes can agree
/// (tests/python/test_gpu_random.py checks those draws).
fn compare(what: &str, gpu: &Run, cpu: &Run, rtol: f64, random: bool) -> Outcome {
    if gpu.outputs.len() != cpu.outputs.len() {
        return Err(format!(
            "{what}: {} outputs on the GPU, {} on the CPU",
            gpu.outputs.len(),
            cpu.outputs.len()
        ));
    }
    for (k, (g, c)) in gpu.outputs.iter().zip(&cpu.outputs).enumerate() {
        if g.0 != c.0 || g.1 != c.1 {
            return Err(format!(
                "{what}: output {k} is {:?} {} on the GPU, {:?} {} on the CPU",
                g.0, g.1, c.0, c.1
            ));
        }
        if !random {
            close(&format!("{what}: output {k}"), &g.2, &c.2, rtol)?;
        }
    }
    if random {
        return Ok(());
    }
    for (k, (g, c)) in gpu.grads.iter().zip(&cpu.grads).enumerate() {
        close(&format!("{what}: gradient {k}"), g, c, rtol)?;
    }
    Ok(())
}

fn run_case(case: &Case) -> Outcome {
    let e = |what: &'static str| move |err: oxnet_core::Error| format!("{what}: {err}");
    let n_out = graph_of(case).map_err(e("compose"))?.2;
    let head_grads: Vec<Vec<f64>> = {
        let probe = imperative(case, Device::Cpu, &[]).map_err(e("CPU forward"))?;
        probe.outputs.iter().take(n_out).map(|o| distinct(o.2.len(), 0.5, 1.5, next_salt())).collect()
    };
    let cpu = imperative(case, Device::Cpu, &head_grads).map_err(e("CPU"))?;
    // float64 maths libraries differ in the last bits; anything computed in
    // float32 (inputs or outputs) to float32's precision
    let all_f64 =
        case.inputs.iter().all(|i| i.dtype == DType::F64) && cpu.outputs.iter().all(|o| o.1 == DType::F64);
    let rtol = if all_f64 { 1e-9 } else { 1e-5 };
    let gpu_run = imperative(case, GPU, &head_grads).map_err(e("GPU, imperative"))?;
    let random = registry::get(case.op)
        .map(|op| op.resources.contains(&oxnet_core::Resource::Random))
        .unwrap_or(false);
    compare("imperative", &gpu_run, &cpu, rtol, random)?;
    let cpu = executor(case, Device::Cpu, &head_grads).map_err(e("CPU executor"))?;
    let gpu_run = executor(case, GPU, &head_grads).map_err(e("GPU executor"))?;
    compare("executor", &gpu_run, &cpu, rtol, random)
}

#[test]
fn every_op_on_the_gpu_matches_the_cpu() {
    if gpu::num_gpus() == 0 {
        eprintln!("every_op_gpu: no GPU (or a build without the `cuda` feature): nothing checked");
        return;
    }
    setup();
    let cases = cases();
    let mut failures = Vec::new();
    for case in &cases {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_case(case)))
            .unwrap_or_else(|_| Err("panicked".to_string()));
        if let Err(e) = outcome {
            let shapes: Vec<String> = case.inputs.iter().map(|i: &In| format!("{:?}", i.shape)).collect();
            failures.push(format!("{}({}): {e}", case.op, shapes.join(", ")));
        }
    }
    eprintln!(
        "every_op_gpu: {} of {} cases agree; operators run on the host: {}",
        cases.len() - failures.len(),
        cases.len(),
        gpu::fallback::fallen_back().len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
