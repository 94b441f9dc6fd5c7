//! Rust custom operators: registration, reuse, requests, errors and panics,
//! aux states, zero inputs, function-style operators.

use oxnet_core::check::OpChecker;
use oxnet_core::custom::{self, CustomOp, CustomOpProp, Dependency, FunctionOp};
use oxnet_core::{
    autograd, invoke, invoke1, invoke_into, registry, DType, Device, Error, NDArray, Req, Result, Shape,
};
use oxnet_ops as _; // the built-in operators these tests call
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// y = scale * x, with a configurable failure mode.
struct Scale {
    scale: f64,
    mode: String,
}

impl CustomOp for Scale {
    fn forward(
        &self,
        _t: bool,
        req: &[Req],
        ins: &[NDArray],
        outs: &[NDArray],
        _aux: &[NDArray],
    ) -> Result<()> {
        assert!(!autograd::is_recording(), "ops inside a custom forward must not be recorded");
        match self.mode.as_str() {
            "panic" => panic!("boom in forward"),
            "error" => return Err(Error::custom(std::io::Error::other("disk on fire"))),
            "shape" => {
                // an operator called inside forward fails
                invoke1("elemwise_add", &[&ins[0], &NDArray::zeros(&[7], DType::F64, Device::Cpu)?], &[])?;
            }
            "write_input" => {
                ins[0].as_mut_slice::<f64>()?[0] = 1.0;
            }
            "write_view" => {
                // a view, or a detached handle, of an input is read-only too
                ins[0].reshape(&[-1])?.detach().fill(5.0)?;
            }
            _ => {}
        }
        let y = invoke1("_mul_scalar", &[&ins[0]], &[("scalar", self.scale.into())])?;
        custom::assign(&outs[0], req[0], &y)
    }

    fn backward(
        &self,
        req: &[Req],
        og: &[NDArray],
        ins: &[NDArray],
        outs: &[NDArray],
        ig: &[NDArray],
        _aux: &[NDArray],
    ) -> Result<()> {
        // only the output gradient was declared as a dependency
        assert_eq!(ins[0].shape(), &[0]);
        assert_eq!(outs[0].shape(), &[0]);
        let g = invoke1("_mul_scalar", &[&og[0]], &[("scalar", self.scale.into())])?;
        custom::assign(&ig[0], req[0], &g)
    }
}

struct ScaleProp {
    scale: f64,
    mode: String,
    created: Arc<AtomicUsize>,
}

impl CustomOpProp for ScaleProp {
    fn declare_backward_dependency(
        &self,
        out_grad: &[Dependency],
        _: &[Dependency],
        _: &[Dependency],
    ) -> Vec<Dependency> {
        out_grad.to_vec()
    }
    fn create_operator(&self, _: Device, _: &[Shape], _: &[DType]) -> Result<Arc<dyn CustomOp>> {
        self.created.fetch_add(1, Ordering::SeqCst);
        Ok(Arc::new(Scale { scale: self.scale, mode: self.mode.clone() }))
    }
}

fn kw<'a>(kwargs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    kwargs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

fn register_scale(name: &str) -> Arc<AtomicUsize> {
    let created = Arc::new(AtomicUsize::new(0));
    let c = created.clone();
    custom::register(name, move |kwargs| {
        let scale = kw(kwargs, "scale")
            .unwrap_or("2")
            .parse::<f64>()
            .map_err(|_| Error::attr("scale", "not a number"))?;
        let mode = kw(kwargs, "mode").unwrap_or("ok").to_string();
        Ok(Arc::new(ScaleProp { scale, mode, created: c.clone() }))
    });
    created
}

fn x64(v: &[f64]) -> NDArray {
    NDArray::from_slice(v, &[v.len()]).unwrap()
}

#[test]
fn scale_passes_the_op_checker() {
    register_scale("scale_check");
    let x = x64(&[1.0, -2.0, 0.5]);
    OpChecker::new("Custom", &[x]).attr("op_type", "scale_check").attr("scale", "3").run().unwrap();
}

#[test]
fn operator_is_created_once_per_shape_signature() {
    let created = register_scale("scale_reuse");
    let a = x64(&[1.0, 2.0]);
    for _ in 0..50 {
        let y =
            invoke1("Custom", &[&a], &[("op_type", "scale_reuse".into()), ("scale", "2".into())]).unwrap();
        assert_eq!(y.to_vec::<f64>().unwrap(), vec![2.0, 4.0]);
    }
    assert_eq!(created.load(Ordering::SeqCst), 1);
    invoke1("Custom", &[&x64(&[1.0, 2.0, 3.0])], &[("op_type", "scale_reuse".into()), ("scale", "2".into())])
        .unwrap();
    assert_eq!(created.load(Ordering::SeqCst), 2);
    assert_eq!(custom::cached_operator_count("scale_reuse", &[("scale", "2")]), 2);
}

#[test]
fn errors_and_panics_name_the_operator_and_leave_the_engine_usable() {
    register_scale("scale_fail");
    let x = x64(&[1.0]);
    let call =
        |mode: &str| invoke1("Custom", &[&x], &[("op_type", "scale_fail".into()), ("mode", mode.into())]);

    let err = call("panic").unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("scale_fail") && msg.contains("boom in forward"), "{msg}");
    assert!(matches!(err.root(), Error::Panic(_)));

    let err = call("error").unwrap_err();
    assert!(err.to_string().contains("disk on fire"));
    let Error::Custom { source: Some(src), .. } = err.root() else {
        panic!("expected the original error: {err}")
    };
    assert!(src.downcast_ref::<std::io::Error>().is_some());

    let msg = call("shape").unwrap_err().to_string();
    assert!(msg.contains("scale_fail") && msg.contains("elemwise_add") && msg.contains("[7]"), "{msg}");

    for mode in ["write_input", "write_view"] {
        let msg = call(mode).unwrap_err().to_string();
        assert!(msg.contains("read-only"), "{msg}");
    }
    assert_eq!(x.to_vec::<f64>().unwrap(), vec![1.0]);

    // the engine and the operator still work
    assert_eq!(call("ok").unwrap().to_vec::<f64>().unwrap(), vec![2.0]);
}

#[test]
fn unknown_op_type_and_bad_kwargs_are_errors() {
    let x = x64(&[1.0]);
    let msg = invoke1("Custom", &[&x], &[("op_type", "never_registered".into())]).unwrap_err().to_string();
    assert!(msg.contains("never_registered"), "{msg}");
    register_scale("scale_kwargs");
    let msg = invoke1("Custom", &[&x], &[("op_type", "scale_kwargs".into()), ("scale", "abc".into())])
        .unwrap_err()
        .to_string();
    assert!(msg.contains("scale"), "{msg}");
    let msg = invoke1("Custom", &[&x, &x], &[("op_type", "scale_kwargs".into())]).unwrap_err().to_string();
    assert!(msg.contains("expects 1 inputs"), "{msg}");
}

#[test]
fn requests_are_honoured() {
    register_scale("scale_req");
    let op = registry::get("Custom").unwrap();
    let attrs = op.parse_attrs(&[("op_type", "scale_req".into())]).unwrap();
    let x = x64(&[1.0, 2.0]);
    let out = x64(&[10.0, 10.0]);
    invoke_into(&op, &[&x], &attrs, std::slice::from_ref(&out), &[Req::Add]).unwrap();
    assert_eq!(out.to_vec::<f64>().unwrap(), vec![12.0, 14.0]);
    invoke_into(&op, &[&x], &attrs, std::slice::from_ref(&out), &[Req::Write]).unwrap();
    assert_eq!(out.to_vec::<f64>().unwrap(), vec![2.0, 4.0]);
    invoke_into(&op, &[&x], &attrs, std::slice::from_ref(&out), &[Req::Null]).unwrap();
    assert_eq!(out.to_vec::<f64>().unwrap(), vec![2.0, 4.0]);
}

/// Two outputs (sum and difference), one aux state counting calls, and a
/// shape function that refines nothing.
struct SumDiff;
impl CustomOp for SumDiff {
    fn forward(
        &self,
        _t: bool,
        req: &[Req],
        ins: &[NDArray],
        outs: &[NDArray],
        aux: &[NDArray],
    ) -> Result<()> {
        custom::assign(&outs[0], req[0], &invoke1("elemwise_add", &[&ins[0], &ins[1]], &[])?)?;
        custom::assign(&outs[1], req[1], &invoke1("elemwise_sub", &[&ins[0], &ins[1]], &[])?)?;
        let count = aux[0].as_mut_slice::<f64>()?;
        count[0] += 1.0;
        Ok(())
    }
    fn backward(
        &self,
        req: &[Req],
        og: &[NDArray],
        _i: &[NDArray],
        _o: &[NDArray],
        ig: &[NDArray],
        _aux: &[NDArray],
    ) -> Result<()> {
        custom::assign(&ig[0], req[0], &invoke1("elemwise_add", &[&og[0], &og[1]], &[])?)?;
        custom::assign(&ig[1], req[1], &invoke1("elemwise_sub", &[&og[0], &og[1]], &[])?)
    }
}
struct SumDiffProp;
impl CustomOpProp for SumDiffProp {
    fn list_arguments(&self) -> Vec<String> {
        vec!["a".into(), "b".into()]
    }
    fn list_outputs(&self) -> Vec<String> {
        vec!["sum".into(), "diff".into()]
    }
    fn list_auxiliary_states(&self) -> Vec<String> {
        vec!["calls".into()]
    }
    fn infer_shape(&self, s: &[Shape]) -> Result<(Vec<Shape>, Vec<Shape>, Vec<Shape>)> {
        Ok((s.to_vec(), vec![s[0].clone(), s[0].clone()], vec![Shape::from_slice(&[1])]))
    }
    fn create_operator(&self, _: Device, _: &[Shape], _: &[DType]) -> Result<Arc<dyn CustomOp>> {
        Ok(Arc::new(SumDiff))
    }
}

#[test]
fn multiple_outputs_and_aux_states() {
    custom::register("sumdiff", |_| Ok(Arc::new(SumDiffProp)));
    let a = x64(&[1.0, 2.0]);
    let b = x64(&[0.5, 4.0]);
    let calls = x64(&[0.0]);
    a.attach_grad(Req::Write).unwrap();
    b.attach_grad(Req::Write).unwrap();
    let outs = {
        let _r = autograd::record();
        invoke("Custom", &[&a, &b, &calls], &[("op_type", "sumdiff".into())]).unwrap()
    };
    assert_eq!(outs[0].to_vec::<f64>().unwrap(), vec![1.5, 6.0]);
    assert_eq!(outs[1].to_vec::<f64>().unwrap(), vec![0.5, -2.0]);
    assert_eq!(calls.to_vec::<f64>().unwrap(), vec![1.0]);
    // d/da (3*sum + 1*diff) = 4, d/db = 2
    let h0 = x64(&[3.0, 3.0]);
    let h1 = x64(&[1.0, 1.0]);
    autograd::backward(&[&outs[0], &outs[1]], &[Some(&h0), Some(&h1)], Default::default()).unwrap();
    assert_eq!(a.grad().unwrap().to_vec::<f64>().unwrap(), vec![4.0, 4.0]);
    assert_eq!(b.grad().unwrap().to_vec::<f64>().unwrap(), vec![2.0, 2.0]);
    let e = invoke("Custom", &[&a, &b], &[("op_type", "sumdiff".into())]).unwrap_err().to_string();
    assert!(e.contains("aux: calls"), "{e}");
}

/// An operator with no inputs: fills its output with a constant from kwargs.
struct Constant(f64, usize);
impl CustomOp for Constant {
    fn forward(
        &self,
        _t: bool,
        req: &[Req],
        _i: &[NDArray],
        outs: &[NDArray],
        _aux: &[NDArray],
    ) -> Result<()> {
        custom::assign(&outs[0], req[0], &NDArray::full(&[self.1], self.0, DType::F32, Device::Cpu)?)
    }
}
struct ConstantProp(f64, usize);
impl CustomOpProp for ConstantProp {
    fn list_arguments(&self) -> Vec<String> {
        vec![]
    }
    fn infer_shape(&self, _: &[Shape]) -> Result<(Vec<Shape>, Vec<Shape>, Vec<Shape>)> {
        Ok((vec![], vec![Shape::from_slice(&[self.1])], vec![]))
    }
    fn infer_type(&self, _: &[DType]) -> Result<(Vec<DType>, Vec<DType>, Vec<DType>)> {
        Ok((vec![], vec![DType::F32], vec![]))
    }
    fn create_operator(&self, _: Device, _: &[Shape], _: &[DType]) -> Result<Arc<dyn CustomOp>> {
        Ok(Arc::new(Constant(self.0, self.1)))
    }
}

#[test]
fn zero_input_operator() {
    custom::register("constant", |kw| {
        let v = kw
            .iter()
            .find(|(k, _)| k == "value")
            .map(|(_, v)| v.parse::<f64>().unwrap_or(0.0))
            .unwrap_or(0.0);
        Ok(Arc::new(ConstantProp(v, 3)))
    });
    let y = invoke1("Custom", &[], &[("op_type", "constant".into()), ("value", "1.5".into())]).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![1.5; 3]);
}

#[test]
fn wrong_infer_shape_is_an_error() {
    struct BadProp;
    impl CustomOpProp for BadProp {
        fn infer_shape(&self, s: &[Shape]) -> Result<(Vec<Shape>, Vec<Shape>, Vec<Shape>)> {
            // claims the input must be twice as long
            Ok((vec![Shape::from_slice(&[s[0][0] * 2])], vec![s[0].clone()], vec![]))
        }
        fn create_operator(&self, _: Device, _: &[Shape], _: &[DType]) -> Result<Arc<dyn CustomOp>> {
            unreachable!("never created")
        }
    }
    custom::register("bad_shape", |_| Ok(Arc::new(BadProp)));
    let msg = invoke1("Custom", &[&x64(&[1.0])], &[("op_type", "bad_shape".into())]).unwrap_err().to_string();
    assert!(msg.contains("expects [2]"), "{msg}");
}

#[test]
fn re_registering_replaces() {
    register_scale("scale_again");
    custom::register("scale_again", |_| {
        Ok(Arc::new(ScaleProp { scale: 10.0, mode: "ok".into(), created: Arc::new(AtomicUsize::new(0)) }))
    });
    let y = invoke1("Custom", &[&x64(&[1.0])], &[("op_type", "scale_again".into())]).unwrap();
    assert_eq!(y.to_vec::<f64>().unwrap(), vec![10.0]);
    assert!(custom::registered_names().contains(&"scale_again".to_string()));
}

/// Seed 002: a softmax cross-entropy loss as a function with its gradient.
#[test]
fn function_op_with_def_grad_matches_numeric_gradient() {
    fn probs(x: &[f64], n: usize, k: usize) -> Vec<f64> {
        let mut p = vec![0.0; n * k];
        for i in 0..n {
            let row = &x[i * k..(i + 1) * k];
            let m = row.iter().cloned().fold(f64::MIN, f64::max);
            let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
            for j in 0..k {
                p[i * k + j] = (row[j] - m).exp() / s;
            }
        }
        p
    }
    FunctionOp::new("my_softmax", &["x", "y"], |ins| {
        let (n, k) = (ins[0].shape()[0], ins[0].shape()[1]);
        let p = probs(&ins[0].to_vec::<f64>()?, n, k);
        let y = ins[1].to_vec::<f64>()?;
        let loss = -(0..n).map(|i| p[i * k + y[i] as usize].ln()).sum::<f64>() / n as f64;
        Ok(vec![NDArray::scalar(loss)])
    })
    .def_grad(0, |_ans, ins, g| {
        let (n, k) = (ins[0].shape()[0], ins[0].shape()[1]);
        let mut p = probs(&ins[0].to_vec::<f64>()?, n, k);
        let y = ins[1].to_vec::<f64>()?;
        for i in 0..n {
            p[i * k + y[i] as usize] -= 1.0;
        }
        let scale = g[0].to_scalar()? / n as f64;
        NDArray::from_vec(p.iter().map(|v| v * scale).collect(), &[n, k])
    })
    .register();

    let x = NDArray::random_uniform(-1.0, 1.0, &[4, 3], DType::F64).unwrap();
    let y = NDArray::from_vec(vec![0.0f64, 2.0, 1.0, 1.0], &[4]).unwrap();
    OpChecker::new("my_softmax", &[x, y]).no_grad(&[1]).run().unwrap();
}

#[test]
fn threads_calling_custom_ops_at_once_get_right_results() {
    let created = register_scale("scale_threads");
    let handles: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..250 {
                    let n = 1 + (i + t) % 3; // three shape signatures, interleaved
                    let x = NDArray::full(&[n], (t * 1000 + i) as f64, DType::F64, Device::Cpu).unwrap();
                    let y = invoke1(
                        "Custom",
                        &[&x],
                        &[("op_type", "scale_threads".into()), ("scale", "3".into())],
                    )
                    .unwrap();
                    assert_eq!(y.to_vec::<f64>().unwrap(), vec![3.0 * (t * 1000 + i) as f64; n]);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // one operator per shape signature (a race may create a duplicate, never more per thread)
    let made = created.load(Ordering::SeqCst);
    assert!((3..=12).contains(&made), "{made} operators created");
}
