//! Rust custom operators: the seeds' CustomOp / CustomOpProp system, and
//! function-style operators with per-argument gradients.
//!
//! A property ([`CustomOpProp`]) describes an operator: its argument,
//! output and aux-state names, shape and dtype inference, which arrays its
//! backward needs, and how to create the operator ([`CustomOp`]) that does
//! the work. Register a factory of properties under a name with
//! [`register`]; call it as the `Custom` operator with `op_type=<name>`:
//!
//! ```
//! use oxnet_core::custom::{self, CustomOp, CustomOpProp};
//! use oxnet_core::{invoke1, Device, DType, NDArray, Req, Result, Shape};
//! use std::sync::Arc;
//!
//! struct Double;
//! impl CustomOp for Double {
//!     fn forward(&self, _train: bool, req: &[Req], ins: &[NDArray], outs: &[NDArray], _aux: &[NDArray]) -> Result<()> {
//!         let doubled: Vec<f32> = ins[0].to_vec::<f32>()?.iter().map(|v| 2.0 * v).collect();
//!         custom::assign(&outs[0], req[0], &NDArray::from_vec(doubled, ins[0].shape())?)
//!     }
//! }
//! struct DoubleProp;
//! impl CustomOpProp for DoubleProp {
//!     fn create_operator(&self, _: Device, _: &[Shape], _: &[DType]) -> Result<Arc<dyn CustomOp>> {
//!         Ok(Arc::new(Double))
//!     }
//! }
//! custom::register("double", |_kwargs| Ok(Arc::new(DoubleProp)));
//! let x = NDArray::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
//! let y = invoke1("Custom", &[&x], &[("op_type", "double".into())]).unwrap();
//! assert_eq!(y.to_vec::<f32>().unwrap(), vec![2.0, 4.0]);
//! ```

mod function;
mod prop;
mod register;

pub use function::FunctionOp;
pub use prop::{assign, CustomOp, CustomOpProp, Dependency};
pub(crate) use register::custom_op_def;
pub use register::{
    cached_operator_count, is_registered, register, registered_names, unregister, PropFactory,
};
