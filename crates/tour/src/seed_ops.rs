//! Sigmoid, Dense and Softmax as Rust custom operators (the seeds' CustomOp
//! examples, translated).

use oxnet_core::custom::{self, CustomOp, CustomOpProp, Dependency};
use oxnet_core::{invoke1, DType, Device, Element, Error, NDArray, Req, Result, Shape};
use std::sync::Arc;

/// `y = 1 / (1 + exp(-x))`, computed on the engine's buffers directly.
pub struct Sigmoid;

impl CustomOp for Sigmoid {
    fn forward(
        &self,
        _is_train: bool,
        req: &[Req],
        in_data: &[NDArray],
        out_data: &[NDArray],
        _aux: &[NDArray],
    ) -> Result<()> {
        // read the engine's input buffer in place (no copy)
        oxnet_core::with_float_dtype!(in_data[0].dtype(), T => {
            let x = in_data[0].as_slice::<T>()?;
            let y: Vec<T> = x.iter().map(|v| T::from_f64(1.0 / (1.0 + (-v.to_f64()).exp()))).collect();
            custom::assign(&out_data[0], req[0], &NDArray::from_vec(y, in_data[0].shape())?)
        })
    }

    fn backward(
        &self,
        req: &[Req],
        out_grad: &[NDArray],
        _in_data: &[NDArray],
        out_data: &[NDArray],
        in_grad: &[NDArray],
        _aux: &[NDArray],
    ) -> Result<()> {
        oxnet_core::with_float_dtype!(out_data[0].dtype(), T => {
            let y = out_data[0].as_slice::<T>()?;
            let dy = out_grad[0].as_slice::<T>()?;
            let dx: Vec<T> = y
                .iter()
                .zip(dy)
                .map(|(y, g)| {
                    let (y, g) = (y.to_f64(), g.to_f64());
                    T::from_f64(g * (1.0 - y) * y)
                })
                .collect();
            custom::assign(&in_grad[0], req[0], &NDArray::from_vec(dx, out_data[0].shape())?)
        })
    }
}

/// The property of [`Sigmoid`]: every hook keeps the reference's default.
pub struct SigmoidProp;

impl CustomOpProp for SigmoidProp {
    // backward reads only the output and its gradient
    fn declare_backward_dependency(
        &self,
        out_grad: &[Dependency],
        _in_data: &[Dependency],
        out_data: &[Dependency],
    ) -> Vec<Dependency> {
        [out_grad, out_data].concat()
    }

    fn create_operator(&self, _: Device, _: &[Shape], _: &[DType]) -> Result<Arc<dyn CustomOp>> {
        Ok(Arc::new(Sigmoid))
    }
}

/// `y = data · weightᵀ + bias`, composed of oxnet operators.
pub struct Dense {
    bias: f64,
}

impl CustomOp for Dense {
    fn forward(
        &self,
        _is_train: bool,
        req: &[Req],
        in_data: &[NDArray],
        out_data: &[NDArray],
        _aux: &[NDArray],
    ) -> Result<()> {
        let xw = invoke1("dot", &[&in_data[0], &in_data[1]], &[("transpose_b", true.into())])?;
        let y = invoke1("_plus_scalar", &[&xw], &[("scalar", self.bias.into())])?;
        custom::assign(&out_data[0], req[0], &y)
    }

    fn backward(
        &self,
        req: &[Req],
        out_grad: &[NDArray],
        in_data: &[NDArray],
        _out_data: &[NDArray],
        in_grad: &[NDArray],
        _aux: &[NDArray],
    ) -> Result<()> {
        // dx = dy · W ; dW = dyᵀ · x  (the seed's backward computed only a
        // transposed dW and called it dx; this is the full gradient)
        let dx = invoke1("dot", &[&out_grad[0], &in_data[1]], &[])?;
        let dw = invoke1("dot", &[&out_grad[0], &in_data[0]], &[("transpose_a", true.into())])?;
        custom::assign(&in_grad[0], req[0], &dx)?;
        custom::assign(&in_grad[1], req[1], &dw)
    }
}

/// The property of [`Dense`]: two arguments and a `bias` keyword.
pub struct DenseProp {
    bias: f64,
}

impl DenseProp {
    /// Parses the keyword arguments (strings, as in the reference).
    pub fn from_kwargs(kwargs: &[(String, String)]) -> Result<DenseProp> {
        let raw = kwargs
            .iter()
            .find(|(k, _)| k == "bias")
            .map(|(_, v)| v.as_str())
            .ok_or_else(|| Error::attr("bias", "dense needs a `bias` keyword"))?;
        let bias =
            raw.parse::<f64>().map_err(|_| Error::attr("bias", format!("expected a number, got `{raw}`")))?;
        Ok(DenseProp { bias })
    }
}

impl CustomOpProp for DenseProp {
    fn list_arguments(&self) -> Vec<String> {
        vec!["data".into(), "weight".into()]
    }

    fn infer_shape(&self, in_shapes: &[Shape]) -> Result<(Vec<Shape>, Vec<Shape>, Vec<Shape>)> {
        let (data, weight) = (&in_shapes[0], &in_shapes[1]);
        if data.len() != 2 || weight.len() != 2 || data[1] != weight[1] {
            return Err(Error::Shape(format!(
                "dense needs data (N, K) and weight (M, K), got {:?} and {:?}",
                data.as_slice(),
                weight.as_slice()
            )));
        }
        let out = Shape::from_slice(&[data[0], weight[0]]);
        Ok((in_shapes.to_vec(), vec![out], vec![]))
    }

    fn create_operator(&self, _: Device, _: &[Shape], _: &[DType]) -> Result<Arc<dyn CustomOp>> {
        Ok(Arc::new(Dense { bias: self.bias }))
    }
}

/// Softmax over axis 1 whose backward is the cross-entropy gradient
/// `softmax(x) - one_hot(label)` (seed 000).
pub struct Softmax;

impl CustomOp for Softmax {
    fn forward(
        &self,
        _is_train: bool,
        req: &[Req],
        in_data: &[NDArray],
        out_data: &[NDArray],
        _aux: &[NDArray],
    ) -> Result<()> {
        let y = invoke1("softmax", &[&in_data[0]], &[("axis", 1i64.into())])?;
        custom::assign(&out_data[0], req[0], &y)
    }

    fn backward(
        &self,
        req: &[Req],
        _out_grad: &[NDArray],
        in_data: &[NDArray],
        out_data: &[NDArray],
        in_grad: &[NDArray],
        _aux: &[NDArray],
    ) -> Result<()> {
        let y = out_data[0].to_vec::<f64>()?;
        let labels = in_data[1].to_vec::<f64>()?;
        let (n, k) = (out_data[0].shape()[0], out_data[0].shape()[1]);
        let mut dx = y;
        for (i, &label) in labels.iter().enumerate() {
            if !(label >= 0.0 && (label as usize) < k) {
                return Err(Error::Invalid(format!(
                    "label {label} of sample {i} is out of range for {k} classes"
                )));
            }
            dx[i * k + label as usize] -= 1.0;
        }
        let dx = NDArray::from_vec(dx, &[n, k])?.astype(in_grad[0].dtype())?;
        custom::assign(&in_grad[0], req[0], &dx)
    }
}

/// The property of [`Softmax`]: arguments `data` and `label`.
pub struct SoftmaxProp;

impl CustomOpProp for SoftmaxProp {
    fn need_top_grad(&self) -> bool {
        false
    }

    fn list_arguments(&self) -> Vec<String> {
        vec!["data".into(), "label".into()]
    }

    fn infer_shape(&self, in_shapes: &[Shape]) -> Result<(Vec<Shape>, Vec<Shape>, Vec<Shape>)> {
        let data = in_shapes[0].clone();
        if data.len() != 2 {
            return Err(Error::Shape(format!("softmax needs data (N, K), got {:?}", data.as_slice())));
        }
        Ok((vec![data.clone(), Shape::from_slice(&[data[0]])], vec![data], vec![]))
    }

    fn infer_type(&self, in_types: &[DType]) -> Result<(Vec<DType>, Vec<DType>, Vec<DType>)> {
        Ok((in_types.to_vec(), vec![in_types[0]], vec![]))
    }

    fn create_operator(&self, _: Device, _: &[Shape], _: &[DType]) -> Result<Arc<dyn CustomOp>> {
        Ok(Arc::new(Softmax))
    }
}

/// Registers `sigmoid`, `dense` and `softmax_label` as custom operators.
pub fn register_all() {
    custom::register("sigmoid", |_| Ok(Arc::new(SigmoidProp)));
    custom::register("dense", |kwargs| Ok(Arc::new(DenseProp::from_kwargs(kwargs)?)));
    custom::register("softmax_label", |_| Ok(Arc::new(SoftmaxProp)));
}
