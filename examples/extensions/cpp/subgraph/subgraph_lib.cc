/*
 * A partitioner and two graph passes written against the reference system's
 * library API (MXNet 1.9's lib_api.h): this source builds unchanged against
 * oxnet's header (`-I <oxnet>/include/oxnet`) and against MXNet's.
 *
 *   partitioner `my_part`:
 *     strategy `by_op`: supportedOps marks every my_gemm / state_gemm node
 *       (except the one named by the option `exclude`) for any subgraph;
 *     strategy `grow`: a CustomOpSelector that grows subgraphs through
 *       neighbouring gemm nodes;
 *     both review each subgraph: rejected when the option `reject` is "true",
 *     otherwise accepted with the attributes `num_gemms` (how many gemm nodes
 *     it holds) and `reviewed_by`; both become `_custom_subgraph_op` nodes.
 *   pass `prefix_names`: renames every operator node to <prefix><name>
 *     (option `prefix`, default "ext_") and marks it with `renamed_by`;
 *   pass `add_bias`: adds a new float32 parameter `bias` of shape [1] holding
 *     1.0 and a `broadcast_add` node adding it to the graph's first output.
 *
 * Build: g++ -std=c++17 -shared -fPIC -O2 -I <oxnet>/include/oxnet subgraph_lib.cc -o libsubgraph_lib.so
 */
#include <string>
#include <unordered_map>
#include <vector>

#include "lib_api.h"

using namespace mxnet::ext;

typedef std::unordered_map<std::string, std::string> Options;

static bool is_gemm(const std::string& op) { return op == "my_gemm" || op == "state_gemm"; }

static MXReturnValue supportedOps(const Graph* graph, std::vector<int>* ids, const Options& options) {
  std::string exclude = options.count("exclude") ? options.at("exclude") : "";
  for (size_t i = 0; i < graph->size(); i++) {
    const Node* node = graph->getNode(i);
    if (is_gemm(node->op) && node->name != exclude) (*ids)[i] = -1;  // any subgraph
  }
  return MX_SUCCESS;
}

static MXReturnValue reviewSubgraph(const Graph* subgraph, int subgraph_id, bool* accept, const Options& options,
                                    std::unordered_map<std::string, std::string>* attrs) {
  if (options.count("reject") && options.at("reject") == "true") {
    *accept = false;
    return MX_SUCCESS;
  }
  int gemms = 0;
  for (size_t i = 0; i < subgraph->size(); i++) {
    if (is_gemm(subgraph->getNode(i)->op)) gemms++;
  }
  (*attrs)["num_gemms"] = std::to_string(gemms);
  (*attrs)["reviewed_by"] = "my_part/" + std::to_string(subgraph_id);
  *accept = true;
  return MX_SUCCESS;
}

/* Grows a subgraph from a gemm node into neighbouring gemm nodes. */
class GemmSelector : public CustomOpSelector {
 public:
  explicit GemmSelector(const Graph* graph) : graph_(graph) {}
  bool Select(int nodeID) override { return gemm(nodeID); }
  bool SelectInput(int nodeID, int input_nodeID) override { return gemm(nodeID) && gemm(input_nodeID); }
  bool SelectOutput(int nodeID, int output_nodeID) override { return gemm(nodeID) && gemm(output_nodeID); }
  void Filter(const std::vector<int>& candidates, std::vector<int>* keep) override {
    for (int id : candidates) {
      if (gemm(id)) keep->push_back(id);
    }
  }
  void Reset() override {}

 private:
  bool gemm(int id) const { return id >= 0 && static_cast<size_t>(id) < graph_->size() && is_gemm(graph_->getNode(id)->op); }
  const Graph* graph_;
};

static MXReturnValue createSelector(const Graph* graph, CustomOpSelector** sel_inst, const Options& options) {
  (void)options;
  *sel_inst = new GemmSelector(graph);
  return MX_SUCCESS;
}

REGISTER_PARTITIONER(my_part)
    .addStrategy("by_op", "_custom_subgraph_op")
    .setSupportedOps("by_op", supportedOps)
    .setReviewSubgraph("by_op", reviewSubgraph)
    .addStrategy("grow", "_custom_subgraph_op")
    .setCreateSelector("grow", createSelector)
    .setReviewSubgraph("grow", reviewSubgraph);

static MXReturnValue prefixNames(Graph* graph, const Options& options) {
  std::string prefix = options.count("prefix") ? options.at("prefix") : "ext_";
  for (size_t i = 0; i < graph->size(); i++) {
    Node* node = graph->getNode(i);
    if (node->op == "null") continue;
    node->name = prefix + node->name;
    node->attrs["renamed_by"] = "prefix_names";
  }
  return MX_SUCCESS;
}

static MXReturnValue addBias(Graph* graph, const Options& options) {
  (void)options;
  if (graph->outputs.empty()) {
    MX_ERROR_MSG << "add_bias: the graph has no output";
    return MX_FAIL;
  }
  Node* bias = graph->addNode("bias", "null");
  graph->inputs.push_back(bias);
  bias->alloc_arg({1}, MXContext::CPU(), kFloat32);
  bias->tensor->data<float>()[0] = 1.0f;
  Node* add = graph->addNode("bias_add", "broadcast_add");
  add->inputs.push_back(graph->outputs[0]);
  add->inputs.push_back(NodeEntry{bias, 0});
  graph->outputs[0] = NodeEntry{add, 0};
  return MX_SUCCESS;
}

REGISTER_PASS(prefix_names).setBody(prefixNames);
REGISTER_PASS(add_bias).setBody(addBias);

MXReturnValue initialize(int version) {
  if (version < 10900) {
    MX_ERROR_MSG << "subgraph_lib needs the library API of MXNet 1.9 or later, got " << version;
    return MX_FAIL;
  }
  return MX_SUCCESS;
}
