//! Imperative automatic differentiation.
//!
//! While recording ([`record`]), every operator call whose inputs take part
//! in differentiation appends a node to a tape held by the output arrays
//! themselves. [`backward`] and [`grad`] walk that tape in reverse topological
//! order, applying each operator's gradient. Gradient rules are operator
//! calls too, so with `create_graph` they are recorded in turn and
//! higher-order gradients follow.

mod mode;
mod recorded;
mod tape;

pub use mode::{
    is_recording, is_training, pause, predict_mode, record, record_with, set_recording, set_training,
    train_mode, ModeGuard,
};
pub use recorded::{recorded_graph, RecordedCall, RecordedGraph, RecordedInput};
pub use tape::{
    attach_grad, backward, fresh_grad, grad, grad_of, grad_req_of, mark_variables, set_fresh_grad,
    set_grad_ready_hook, BackwardOptions,
};
pub(crate) use tape::{record_node, AgEntry};
