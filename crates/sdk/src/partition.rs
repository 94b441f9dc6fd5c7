//! Partitioners: named strategies that choose the nodes a library's
//! subgraph operator can run, and review each subgraph found.

use crate::traits::OpResult;
use crate::Attrs;
use std::ffi::CString;

/// Grows subgraphs node by node (MXNet's `CustomOpSelector`). oxnet calls
/// [`select`](Self::select) on each node not yet in a subgraph, in graph
/// order; from a selected seed it offers the neighbours (inputs through
/// [`select_input`](Self::select_input), consumers through
/// [`select_output`](Self::select_output)), then [`filter`](Self::filter)s
/// the candidates and [`reset`](Self::reset)s the selector. Node ids are
/// positions in the graph JSON the selector was created with. Variables
/// are never offered.
pub trait Selector: Send + 'static {
    /// Whether to start a subgraph at `node_id`.
    fn select(&mut self, node_id: usize) -> bool;
    /// Whether to grow from `node_id` (in the subgraph) into its input node `input_node_id`.
    fn select_input(&mut self, node_id: usize, input_node_id: usize) -> bool;
    /// Whether to grow from `node_id` (in the subgraph) into its consumer `output_node_id`.
    fn select_output(&mut self, node_id: usize, output_node_id: usize) -> bool;
    /// The candidates to keep (a subset of `candidates`). Default: all.
    fn filter(&mut self, candidates: &[usize]) -> Vec<usize> {
        candidates.to_vec()
    }
    /// Forgets the subgraph just grown. Default: nothing to forget.
    fn reset(&mut self) {}
}

/// A review's verdict on one subgraph, with the attributes its subgraph
/// node receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review {
    /// Whether to replace the subgraph with the subgraph operator.
    pub accept: bool,
    /// Attributes for the subgraph node.
    pub attrs: Vec<(String, String)>,
}

impl Review {
    /// Keep the subgraph.
    pub fn accept() -> Review {
        Review { accept: true, attrs: Vec::new() }
    }

    /// Leave the subgraph's nodes as they are.
    pub fn reject() -> Review {
        Review { accept: false, attrs: Vec::new() }
    }

    /// Adds an attribute for the subgraph node.
    pub fn attr(mut self, key: &str, value: impl ToString) -> Review {
        self.attrs.push((key.to_string(), value.to_string()));
        self
    }
}

pub(crate) type SupportedOpsFn = Box<dyn Fn(&str, &mut [i32], &Attrs) -> OpResult<()> + Send + Sync>;
pub(crate) type CreateSelectorFn = Box<dyn Fn(&str, &Attrs) -> OpResult<Box<dyn Selector>> + Send + Sync>;
pub(crate) type ReviewFn = Box<dyn Fn(&str, i32, &Attrs) -> OpResult<Review> + Send + Sync>;

/// How a strategy chooses nodes.
pub(crate) enum Selection {
    SupportedOps(SupportedOpsFn),
    Selector(CreateSelectorFn),
}

/// One partitioning strategy: how it chooses nodes, the operator that
/// replaces each subgraph, and an optional review.
pub struct Strategy {
    pub(crate) name: CString,
    pub(crate) subgraph_op: CString,
    pub(crate) selection: Selection,
    pub(crate) review: Option<ReviewFn>,
}

impl Strategy {
    /// A strategy marking nodes itself: `f(graph_json, ids, options)` sets
    /// `ids[i]` (one per node, -1 on entry) to the subgraph id (>= 0) node `i`
    /// joins, or leaves -1. Subgraphs become `subgraph_op` nodes.
    pub fn supported_ops(
        name: &str,
        subgraph_op: &str,
        f: impl Fn(&str, &mut [i32], &Attrs) -> OpResult<()> + Send + Sync + 'static,
    ) -> Strategy {
        Strategy {
            name: crate::export::c_name(name),
            subgraph_op: crate::export::c_name(subgraph_op),
            selection: Selection::SupportedOps(Box::new(f)),
            review: None,
        }
    }

    /// A strategy growing subgraphs with a [`Selector`] that
    /// `f(graph_json, options)` creates for each graph.
    pub fn selector(
        name: &str,
        subgraph_op: &str,
        f: impl Fn(&str, &Attrs) -> OpResult<Box<dyn Selector>> + Send + Sync + 'static,
    ) -> Strategy {
        Strategy {
            name: crate::export::c_name(name),
            subgraph_op: crate::export::c_name(subgraph_op),
            selection: Selection::Selector(Box::new(f)),
            review: None,
        }
    }

    /// Reviews each subgraph: `f(subgraph_json, subgraph_id, options)`.
    /// Without a review every subgraph is accepted.
    pub fn review(
        mut self,
        f: impl Fn(&str, i32, &Attrs) -> OpResult<Review> + Send + Sync + 'static,
    ) -> Strategy {
        self.review = Some(Box::new(f));
        self
    }
}

/// Most strategies one partitioner may have.
pub const MAX_STRATEGIES: usize = 8;

/// A partitioner (MXNet's backend): a name and its strategies.
pub struct Partitioner {
    pub(crate) name: CString,
    pub(crate) strategies: Vec<Strategy>,
}

impl Partitioner {
    /// A partitioner without strategies yet.
    pub fn new(name: &str) -> Partitioner {
        Partitioner { name: crate::export::c_name(name), strategies: Vec::new() }
    }

    /// Adds a strategy (at most [`MAX_STRATEGIES`]; more refuse the load).
    pub fn strategy(mut self, s: Strategy) -> Partitioner {
        self.strategies.push(s);
        self
    }
}
