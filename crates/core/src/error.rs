//! The engine's one error type.
//!
//! Every fallible call in oxnet returns [`Result`]. Errors raised inside an
//! operator are wrapped by the dispatcher in [`Error::Op`], so a message
//! always names the operator it came from and keeps the original cause.

use std::fmt;

/// An error from the oxnet engine.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A problem with shapes: mismatched, impossible or unknown.
    #[error("shape error: {0}")]
    Shape(String),
    /// A data type that is not supported or does not match.
    #[error("dtype error: {0}")]
    DType(String),
    /// A device that is not available or does not match.
    #[error("device error: {0}")]
    Device(String),
    /// No operator is registered under this name.
    #[error("unknown operator `{0}` ({hint})", hint = crate::registry::unknown_op_hint())]
    UnknownOp(String),
    /// An attribute is unknown, missing or malformed.
    #[error("attribute `{attr}`: {msg}")]
    Attr {
        /// The attribute's name.
        attr: String,
        /// What is wrong with it.
        msg: String,
    },
    /// An autograd misuse, such as a second backward through a freed graph.
    #[error("autograd: {0}")]
    Autograd(String),
    /// Any other invalid argument.
    #[error("{0}")]
    Invalid(String),
    /// A user's custom operator failed; `source` keeps its original error
    /// (a Python exception, a C++ message, a Rust error) for callers to inspect.
    #[error("{msg}")]
    Custom {
        /// The failure's message.
        msg: String,
        /// The original error, if the operator returned one.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    },
    /// A custom operator panicked. The engine caught the panic and stays usable.
    #[error("panicked: {0}")]
    Panic(String),
    /// An error raised inside operator `op`.
    #[error("operator `{op}`: {source}")]
    Op {
        /// The operator's name.
        op: String,
        /// What went wrong inside it.
        #[source]
        source: Box<Error>,
    },
    /// An error raised while a graph ran or was inferred, at node `node`
    /// (operator `op`).
    #[error("node `{node}` ({op}): {source}")]
    Node {
        /// The node's name.
        node: String,
        /// Its operator's name.
        op: String,
        /// What went wrong there.
        #[source]
        source: Box<Error>,
    },
}

/// The result type of every fallible oxnet call.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Wraps `self` so that it names operator `op`, unless it already names
    /// `op` (or a refinement of it such as `Custom(op_type=x)` for `Custom`).
    /// An error from an operator called inside another operator names both.
    pub fn in_op(self, op: &str) -> Error {
        match &self {
            Error::Op { op: inner, .. }
                if inner == op || (inner.starts_with(op) && inner[op.len()..].starts_with('(')) =>
            {
                self
            }
            _ => Error::Op { op: op.to_string(), source: Box::new(self) },
        }
    }

    /// Wraps `self` so that it names graph node `node` of operator `op`.
    pub fn in_node(self, node: &str, op: &str) -> Error {
        Error::Node { node: node.to_string(), op: op.to_string(), source: Box::new(self) }
    }

    /// The innermost error, skipping the operator and node wrappers.
    pub fn root(&self) -> &Error {
        match self {
            Error::Op { source, .. } | Error::Node { source, .. } => source.root(),
            other => other,
        }
    }

    /// An attribute error.
    pub fn attr(attr: impl Into<String>, msg: impl fmt::Display) -> Error {
        Error::Attr { attr: attr.into(), msg: msg.to_string() }
    }

    /// A custom-operator failure carrying an original error.
    pub fn custom<E>(err: E) -> Error
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        Error::Custom { msg: err.to_string(), source: Some(Box::new(err)) }
    }

    /// A custom-operator failure with only a message.
    pub fn custom_msg(msg: impl fmt::Display) -> Error {
        Error::Custom { msg: msg.to_string(), source: None }
    }
}

/// Returns early with an [`Error::Shape`] built like `format!`.
#[macro_export]
macro_rules! shape_err {
    ($($t:tt)*) => { return Err($crate::Error::Shape(format!($($t)*))) };
}

/// Returns early with an [`Error::Invalid`] built like `format!`.
#[macro_export]
macro_rules! invalid {
    ($($t:tt)*) => { return Err($crate::Error::Invalid(format!($($t)*))) };
}
