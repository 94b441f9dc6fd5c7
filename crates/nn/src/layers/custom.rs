//! [`CustomLayer`]: any registered operator as a layer, with parameters
//! passed as its trailing inputs, so users put their own operators (Rust,
//! Python or library `Custom` operators, or any other) in a network; and
//! [`infer_param_shapes`], which fills parameters' unknown shapes from an
//! operator's own (bidirectional) shape inference.

use super::OpCall;
use crate::block::{in_block, Block};
use crate::naming::unique_prefix;
use crate::parameter::{shape_is_known, shape_string, Parameter, SharedInit};
use oxnet_core::registry::Op;
use oxnet_core::{AttrValue, Attrs, Error, NDArray, Result, Shape};

/// Fills the unknown dimensions of `params` (the trailing inputs of `op`,
/// after `data`) from the operator's shape inference given the data's
/// shapes. Parameters of known shape are left alone; a parameter the
/// operator cannot infer is an error naming it and block `block`.
pub fn infer_param_shapes(
    op: &Op,
    attrs: &Attrs,
    data: &[&NDArray],
    params: &[&Parameter],
    block: &str,
) -> Result<()> {
    if params.iter().all(|p| shape_is_known(&p.shape())) {
        return Ok(());
    }
    let mut ins: Vec<Option<Shape>> = data.iter().map(|x| Some(Shape::from_slice(x.shape()))).collect();
    ins.extend(params.iter().map(|p| {
        let s = p.shape();
        shape_is_known(&s).then(|| Shape::from_slice(&s))
    }));
    let (_, _, n_out) = oxnet_core::dispatch::arity(op, attrs)?;
    let mut outs: Vec<Option<Shape>> = vec![None; n_out];
    // an operator that cannot infer backwards may fail here: the error below names the parameter
    let inferred = (op.infer_shape)(attrs, &mut ins, &mut outs);
    for (p, s) in params.iter().zip(&ins[data.len()..]) {
        if shape_is_known(&p.shape()) {
            continue;
        }
        match s {
            Some(s) if shape_is_known(s) => p.set_shape(s)?,
            _ => {
                let why = match &inferred {
                    Err(e) => format!(": {e}"),
                    Ok(()) => String::new(),
                };
                return Err(Error::Shape(format!(
                    "block `{block}`: the shape {} of Parameter `{}` cannot be inferred from inputs of shapes {} \
                     by operator `{}`{why}; give its full shape",
                    shape_string(&p.shape()),
                    p.name(),
                    data.iter().map(|x| shape_string(x.shape())).collect::<Vec<_>>().join(", "),
                    op.name
                )));
            }
        }
    }
    Ok(())
}

/// A registered operator as a layer: the call's inputs, then the layer's
/// parameters in the order they were added, are the operator's inputs;
/// all its outputs are the layer's outputs.
///
/// ```
/// use oxnet_core::NDArray;
/// use oxnet_nn::block::Block;
/// use oxnet_nn::init::One;
/// use oxnet_nn::layers::CustomLayer;
/// use oxnet_nn::parameter::shared_init;
///
/// // FullyConnected without bias as a layer whose weight shape (3, 0) is inferred
/// let fc = CustomLayer::op("FullyConnected", &[("num_hidden", 3i64.into()), ("no_bias", true.into())])
///     .unwrap()
///     .with_param("weight", &[3, 0], None);
/// fc.initialize(&shared_init(One)).unwrap();
/// let x = NDArray::from_vec(vec![1.0f32, 2.0], &[1, 2]).unwrap();
/// assert_eq!(fc.call(&x).unwrap().to_vec::<f32>().unwrap(), vec![3.0, 3.0, 3.0]);
/// ```
///
/// A `Custom` operator is named by its `op_type`:
/// `CustomLayer::custom("sigmoid", &[])`, with keyword attributes as strings.
pub struct CustomLayer {
    prefix: String,
    kind: String,
    call: OpCall,
    params: Vec<(String, Parameter)>,
}

impl CustomLayer {
    /// The registered operator `name` with attributes `attrs` (checked now).
    pub fn op(name: &str, attrs: &[(&str, AttrValue)]) -> Result<CustomLayer> {
        let call = OpCall::new(name, attrs)?;
        Ok(CustomLayer { prefix: unique_prefix(name), kind: name.to_string(), call, params: Vec::new() })
    }

    /// The custom operator registered as `op_type` (called as
    /// `Custom(op_type=...)`), with its keyword arguments.
    pub fn custom(op_type: &str, kwargs: &[(&str, &str)]) -> Result<CustomLayer> {
        let mut attrs: Vec<(&str, AttrValue)> = vec![("op_type", op_type.into())];
        attrs.extend(kwargs.iter().map(|(k, v)| (*k, AttrValue::from(*v))));
        let call = OpCall::new("Custom", &attrs)?;
        Ok(CustomLayer {
            prefix: unique_prefix(op_type),
            kind: format!("Custom(op_type={op_type})"),
            call,
            params: Vec::new(),
        })
    }

    /// Adds a parameter named `<prefix><name>` of `shape` (0 for a dimension
    /// the operator's inference fills from the first input), with its own
    /// initializer if given; it is passed after the inputs and the
    /// parameters added before it.
    pub fn with_param(mut self, name: &str, shape: &[usize], init: Option<SharedInit>) -> CustomLayer {
        let mut p = Parameter::new(format!("{}{name}", self.prefix), shape).allow_deferred_init(true);
        if let Some(init) = init {
            p = p.with_init(init);
        }
        self.params.push((name.to_string(), p));
        self
    }

    /// Adds an existing parameter (to share one between layers).
    pub fn with_shared_param(mut self, name: &str, param: Parameter) -> CustomLayer {
        self.params.push((name.to_string(), param));
        self
    }

    /// The parameter added under `name`.
    pub fn param(&self, name: &str) -> Option<&Parameter> {
        self.params.iter().find(|(k, _)| k == name).map(|(_, p)| p)
    }

    fn run(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        let data: Vec<&NDArray> = inputs.iter().collect();
        let params: Vec<&Parameter> = self.params.iter().map(|(_, p)| p).collect();
        infer_param_shapes(&self.call.op, &self.call.attrs, &data, &params, self.name())?;
        let values = params.iter().map(|p| p.data()).collect::<Result<Vec<_>>>()?;
        let mut all = data;
        all.extend(values.iter());
        self.call.call(&all)
    }
}

impl Block for CustomLayer {
    fn prefix(&self) -> &str {
        &self.prefix
    }

    fn params(&self) -> Vec<(String, Parameter)> {
        self.params.clone()
    }

    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        self.run(inputs).map_err(|e| in_block(e, self.name(), &self.kind))
    }
}
