//! A loaded library's partitioners and graph passes as backends of the
//! graph layer's `optimize_for` (registered under the partitioner's or the
//! pass's name when the library loads, as MXNet names its backends).

use crate::graph_ext::{GraphPass, PartitionStrategy};
use crate::loader::Library;
use oxnet_core::Result;
use oxnet_graph::partition::{self, Backend, PassParam};
use std::sync::Arc;

struct StrategyBackend(PartitionStrategy);

impl partition::PartitionStrategy for StrategyBackend {
    fn name(&self) -> String {
        format!("{}/{}", self.0.partitioner(), self.0.name())
    }

    fn subgraph_op(&self) -> String {
        self.0.subgraph_op_name().to_string()
    }

    fn select(&self, graph_json: &str, num_nodes: usize, options: &[(&str, &str)]) -> Result<Vec<i32>> {
        self.0.supported_ops(graph_json, num_nodes, options)
    }

    fn review(
        &self,
        subgraph_json: &str,
        id: i32,
        options: &[(&str, &str)],
    ) -> Result<(bool, Vec<(String, String)>)> {
        self.0.review_subgraph(subgraph_json, id, options)
    }
}

struct PassBackend(GraphPass);

impl partition::GraphPass for PassBackend {
    fn name(&self) -> String {
        self.0.name().to_string()
    }

    fn run(&self, graph_json: &str, options: &[(&str, &str)]) -> Result<(String, Vec<PassParam>)> {
        let out = self.0.run_with_zeros(graph_json, options)?;
        let params = out
            .params
            .into_iter()
            .map(|p| PassParam { name: p.name, is_aux: p.is_aux, array: p.array })
            .collect();
        Ok((out.graph_json, params))
    }
}

/// Registers `lib`'s partitioners and passes as `optimize_for` backends.
pub(crate) fn register(lib: &Library) {
    for part in lib.partitioners() {
        let strategies: Vec<Arc<dyn partition::PartitionStrategy>> = lib
            .strategies()
            .iter()
            .filter(|s| s.partitioner() == part.name)
            .map(|s| Arc::new(StrategyBackend(s.clone())) as Arc<dyn partition::PartitionStrategy>)
            .collect();
        partition::register_backend(&part.name, Backend::Partitioner(strategies));
    }
    for name in lib.passes() {
        if let Ok(pass) = lib.pass(name) {
            partition::register_backend(name, Backend::Pass(Arc::new(PassBackend(pass))));
        }
    }
}
