//! # oxnet-nn
//!
//! The nn layer of oxnet (see `DESIGN.md`): the stateful machinery of
//! training, shared by the Rust API and the Python `oxnet.gluon`.
//!
//! - [`io`]: parameter files — MXNet's binary `.params`/`nd.save` format,
//!   read and written, and safetensors.
//! - [`init`]: initializers (`Zero`, `Xavier`, ...), by name as MXNet
//!   serialises them.
//! - [`optim`]: optimizers whose updates are core operators
//!   (`sgd_mom_update`, `adam_update`, ...) and learning-rate schedulers.

pub mod init;
pub mod io;
pub mod optim;
