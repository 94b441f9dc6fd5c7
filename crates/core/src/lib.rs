//! # oxnet-core
//!
//! The core layer of oxnet: [`NDArray`], the operator abstraction
//! ([`OpDef`]) and its one [`registry`], [`dispatch`], imperative
//! [`autograd`], tracing hooks ([`trace`]), Rust custom operators
//! ([`custom`]), the op checker ([`check`]) and the thread pool
//! ([`parallel`]).
//!
//! Core holds no built-in operator: those live in the `oxnet-ops` crate,
//! written against this crate's public API like any user's operator crate,
//! and reach the registry by link-time collection
//! ([`register_operators!`]). Here an operator of one's own, with a
//! backward kernel, differentiated by autograd:
//!
//! ```
//! use oxnet_core::store::store_slice;
//! use oxnet_core::{autograd, invoke1, registry, BackwardDeps, NDArray, OpDef, Req};
//!
//! fn times(k: f32, req: Req, x: &NDArray, out: &NDArray) -> oxnet_core::Result<()> {
//!     let y: Vec<f32> = x.as_slice::<f32>()?.iter().map(|v| k * v).collect();
//!     store_slice(req, out.as_mut_slice::<f32>()?, &y);
//!     Ok(())
//! }
//! registry::register(
//!     OpDef::new("triple")
//!         .forward(|ctx, ins, outs| times(3.0, ctx.req[0], &ins[0], &outs[0]))
//!         .backward(
//!             |_attrs| BackwardDeps { out_grads: vec![0], ..Default::default() },
//!             |ctx, args, in_grads| match &args.out_grads[0] {
//!                 Some(dy) => times(3.0, ctx.req[0], dy, &in_grads[0]),
//!                 None => Ok(()),
//!             },
//!         ),
//! );
//! let x = NDArray::from_vec(vec![0.0f32, 1.0, 2.0], &[3]).unwrap();
//! x.attach_grad(Req::Write).unwrap();
//! let y = {
//!     let _rec = autograd::record();
//!     invoke1("triple", &[&x], &[]).unwrap()
//! };
//! assert_eq!(y.to_vec::<f32>().unwrap(), vec![0.0, 3.0, 6.0]);
//! y.backward().unwrap();
//! assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![3.0; 3]);
//! ```

pub mod attrs;
pub mod autograd;
pub mod check;
pub mod custom;
pub mod device;
pub mod dispatch;
pub mod dtype;
pub mod error;
pub mod fork;
pub mod gpu;
pub mod ndarray;
pub mod op;
pub mod parallel;
pub mod profiler;
pub mod random;
pub mod registry;
pub mod shape;
pub mod storage;
pub mod store;
pub mod strided;
pub mod trace;

pub use attrs::{AttrKind, AttrSpec, AttrValue, Attrs};
pub use device::{Device, HostDevice, HostKind};
pub use dispatch::{invoke, invoke1, invoke_into, invoke_op};
pub use dtype::{DType, Element, FloatElement};
pub use error::{Error, Result};
pub use half;
pub use ndarray::{NDArray, SliceSpec};
pub use op::{
    BackwardArgs, BackwardDeps, GradCtx, GradInto, Gradient, OpContext, OpDef, OpState, ReadyFn, Req,
    Resource,
};
pub use shape::Shape;

#[doc(hidden)]
pub use linkme;
