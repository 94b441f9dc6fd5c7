//! # oxnet-graph
//!
//! The graph layer of oxnet: one graph IR of operator nodes from the one
//! registry ([`node`]), built through MXNet 1.x's Symbol API ([`Symbol`]) or
//! read from NNVM JSON ([`json`]); shape and dtype inference over whole
//! graphs ([`infer`]); and an [`Executor`] that runs a bound graph through
//! the same operator kernels eager calls use.
//!
//! Graphs are made of operators, so this crate links the built-in ones
//! (`oxnet-ops`): a program that uses the graph layer has them registered.
//!
//! ```
//! use oxnet_graph::{simple_bind, GradReqs, Symbol};
//! use oxnet_core::{Device, Req};
//! use std::collections::HashMap;
//!
//! let x = Symbol::var("x");
//! let y = Symbol::op("sigmoid", &[&x], &[], Some("y")).unwrap();
//! let shapes = HashMap::from([("x".to_string(), vec![2])]);
//! let mut exe = simple_bind(&y, Device::Cpu, &GradReqs::All(Req::Write), &HashMap::new(), &shapes).unwrap();
//! exe.arg_arrays()[0].fill(0.0).unwrap();
//! let out = exe.forward(true).unwrap()[0].to_vec::<f32>().unwrap();
//! assert_eq!(out, vec![0.5, 0.5]);
//! exe.backward(&[]).unwrap();
//! assert_eq!(exe.grad_arrays()[0].as_ref().unwrap().to_vec::<f32>().unwrap(), vec![0.25, 0.25]);
//! ```

pub mod cached;
pub mod control_flow;
pub mod cse;
pub mod cut;
pub mod default_subgraph;
pub mod dot;
pub mod executor;
pub mod gradient;
pub mod indexed;
pub mod infer;
pub mod json;
pub mod names;
pub mod node;
pub mod partition;
pub mod plan;
pub mod recorded;
pub mod symbol;
pub mod trace;

pub use cached::CachedGraph;
pub use executor::{simple_bind, Executor, GradReqs, MonitorFn};
pub use indexed::IndexedGraph;
pub use node::{Entry, Node, OpCall};
pub use recorded::recorded_symbol;
pub use symbol::{Symbol, VarOptions};

// Links the built-in operators: their registrar reaches the core registry
// at link time, so nothing here names an operator crate's items.
use oxnet_ops as _;
