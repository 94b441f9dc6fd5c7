//! # oxnet-library
//!
//! Loads compiled operator libraries at run time (MXNet's
//! `mx.library.load`). A library is a shared object built against
//! `include/oxnet/oxnet_ext.h` (C), `include/oxnet/lib_api.h` (C++) or the
//! `oxnet-sdk` crate (Rust); it exports `oxnet_ext_entry`, which hands oxnet
//! its operators. [`load`] checks the library's ABI version and struct
//! sizes, calls its `initialize` hook and registers every operator in the
//! one registry, where it works like a built-in: imperative calls by name,
//! autograd, the op checker.
//!
//! ```no_run
//! let lib = oxnet_library::load("/abs/path/libmy_relu.so", true)?;
//! assert!(lib.op_names().iter().any(|n| n == "my_relu"));
//! let x = oxnet_core::NDArray::from_vec(vec![-1.0f32, 2.0], &[2])?;
//! let y = oxnet_core::invoke1("my_relu", &[&x], &[])?;
//! # Ok::<(), oxnet_core::Error>(())
//! ```
//!
//! Libraries stay loaded for the life of the process (their operators
//! point into them). Loading a path again returns the library loaded
//! before. Any failure leaves the registry as it was.

mod backends;
mod call;
mod convert;
mod graph_ext;
mod graph_json;
mod host;
mod infer_cache;
mod loader;
mod mxnet;
mod opdef;
mod selector;

pub use graph_ext::{zeros_param, GraphPass, NewParam, PartitionStrategy, PassOutput};
pub use loader::{find_pass, find_strategy, load, load_with, loaded, GraphExtension, Library, LoadOptions};
