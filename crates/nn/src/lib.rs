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
//! - [`parameter`], [`collection`]: Parameters (deferred shapes, gradients,
//!   multipliers) and collections of them by name.
//! - [`block`], [`layers`], [`loss`]: the `Block` trait, layers and losses;
//!   [`hybrid`] runs a block as one cached graph traced from its `forward`;
//!   [`naming`] gives blocks MXNet's prefixes (`dense0_`).
//! - [`trainer`]: the `Trainer` applying an optimizer to parameters.
//! - [`distributed`]: data-parallel training over processes (a
//!   communicator; MPI with the `mpi` feature).

pub mod block;
pub mod collection;
pub mod distributed;
pub mod hybrid;
pub mod init;
pub mod io;
pub mod layers;
pub mod loss;
pub mod naming;
pub mod optim;
pub mod parameter;
pub mod trainer;

/// The README's Rust examples (which use the core, the graph and the nn
/// layer), compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
mod readme_doctests {}

/// docs/rnn.md's Rust example, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/rnn.md")]
mod rnn_doc_doctests {}
