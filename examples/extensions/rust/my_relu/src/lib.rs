//! `my_relu`: max(x, 0) with its gradient, as an oxnet extension library
//! written with the Rust SDK; with a partitioner that gathers `my_relu`
//! nodes into `_my_relu_subgraph` nodes and graph passes (see `graph.rs`).

mod graph;

use oxnet_sdk::*;

/// The operator: one input, one output of the same shape and dtype.
struct MyRelu;

impl Signature for MyRelu {
    fn parse_attrs(&self, _attrs: &Attrs) -> OpResult<(usize, usize)> {
        Ok((1, 1))
    }

    fn infer_type(
        &self,
        _attrs: &Attrs,
        ins: &mut [Option<DType>],
        outs: &mut [Option<DType>],
    ) -> OpResult<()> {
        match ins[0] {
            Some(DType::F32) | Some(DType::F64) => {
                outs[0] = ins[0];
                Ok(())
            }
            other => Err(format!("my_relu takes float32 or float64, got {other:?}")),
        }
    }
}

fn relu<T: Element + PartialOrd + Default + std::ops::Add<Output = T>>(x: &[T], y: &mut [T], req: Req) {
    let zero = T::default();
    for (y, &x) in y.iter_mut().zip(x) {
        req.store(y, if x > zero { x } else { zero });
    }
}

fn relu_grad<T: Element + PartialOrd + Default + std::ops::Add<Output = T>>(
    dy: &[T],
    x: &[T],
    dx: &mut [T],
    req: Req,
) {
    let zero = T::default();
    for ((g, &d), &x) in dx.iter_mut().zip(dy).zip(x) {
        req.store(g, if x > zero { d } else { zero });
    }
}

impl Operator for MyRelu {
    fn forward(
        &self,
        _: &Attrs,
        ins: &[Tensor],
        outs: &mut [TensorMut],
        req: &[Req],
        _: &mut Resource,
    ) -> OpResult<()> {
        match ins[0].dtype() {
            Some(DType::F64) => relu(ins[0].as_slice::<f64>()?, outs[0].as_mut_slice::<f64>()?, req[0]),
            _ => relu(ins[0].as_slice::<f32>()?, outs[0].as_mut_slice::<f32>()?, req[0]),
        }
        Ok(())
    }

    fn has_backward(&self) -> bool {
        true
    }

    /// inputs: [out_grad, x, y]; one gradient: dx.
    fn backward(
        &self,
        _: &Attrs,
        ins: &[Tensor],
        grads: &mut [TensorMut],
        req: &[Req],
        _: &mut Resource,
    ) -> OpResult<()> {
        match ins[1].dtype() {
            Some(DType::F64) => relu_grad(
                ins[0].as_slice::<f64>()?,
                ins[1].as_slice::<f64>()?,
                grads[0].as_mut_slice::<f64>()?,
                req[0],
            ),
            _ => relu_grad(
                ins[0].as_slice::<f32>()?,
                ins[1].as_slice::<f32>()?,
                grads[0].as_mut_slice::<f32>()?,
                req[0],
            ),
        }
        Ok(())
    }
}

/// A test hook: an operator that panics in forward (the host must report it
/// as an error and stay usable).
struct Panicky;

impl Signature for Panicky {
    fn parse_attrs(&self, _attrs: &Attrs) -> OpResult<(usize, usize)> {
        Ok((1, 1))
    }
}

impl Operator for Panicky {
    fn forward(
        &self,
        _: &Attrs,
        _: &[Tensor],
        _: &mut [TensorMut],
        _: &[Req],
        _: &mut Resource,
    ) -> OpResult<()> {
        panic!("my_relu_panic was asked to panic")
    }
}

fn library() -> LibraryBuilder {
    LibraryBuilder::new()
        .op("my_relu", MyRelu)
        .op("my_relu_panic", Panicky)
        // a chain of relus is one relu: the subgraph operator computes my_relu
        .subgraph_op("_my_relu_subgraph", MyRelu)
        .partitioner(graph::partitioner())
        .pass("my_relu_from_relu", graph::from_relu)
        .pass("my_relu_faulty", graph::faulty_pass)
}

export_library!(library);
