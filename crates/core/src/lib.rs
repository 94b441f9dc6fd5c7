//! # oxnet-core
//!
//! The core layer of oxnet: [`NDArray`], the operator registry
//! ([`OpDef`], [`registry`]), the built-in operators ([`ops`]), imperative
//! autograd ([`autograd`]) and Rust custom operators ([`custom`]).
//!
//! ```
//! use oxnet_core::{autograd, invoke1, NDArray, Req};
//! let x = NDArray::from_vec(vec![0.0f32, 1.0, 2.0], &[3]).unwrap();
//! x.attach_grad(Req::Write).unwrap();
//! let y = {
//!     let _rec = autograd::record();
//!     invoke1("sigmoid", &[&x], &[]).unwrap()
//! };
//! y.backward().unwrap();
//! let g = x.grad().unwrap().to_vec::<f32>().unwrap();
//! assert!((g[0] - 0.25).abs() < 1e-6);
//! ```

pub mod attrs;
pub mod autograd;
pub mod check;
pub mod custom;
pub mod device;
pub mod dispatch;
pub mod dtype;
pub mod error;
pub mod kernels;
pub mod ndarray;
pub mod op;
pub mod ops;
pub mod parallel;
pub mod random;
pub mod registry;
pub mod shape;
pub mod storage;
pub mod strided;
pub mod trace;

pub use attrs::{AttrKind, AttrSpec, AttrValue, Attrs};
pub use device::Device;
pub use dispatch::{invoke, invoke1, invoke_into, invoke_op};
pub use dtype::{DType, Element, FloatElement};
pub use error::{Error, Result};
pub use half;
pub use ndarray::{NDArray, SliceSpec};
pub use op::{
    BackwardArgs, BackwardDeps, GradCtx, GradInto, Gradient, OpContext, OpDef, OpState, Req, Resource,
};
pub use shape::Shape;
