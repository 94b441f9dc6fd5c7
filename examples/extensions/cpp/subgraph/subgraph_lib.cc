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
 *   operator `_custom_subgraph_op` (a subgraph operator): runs the subgraph
 *     given as NNVM JSON in its attribute `subgraph_sym_json` on float32
 *     inputs (one per input node of the subgraph, in order), for subgraphs of
 *     my_gemm / state_gemm (matrix products) and relu nodes.
 *
 * Build: g++ -std=c++17 -shared -fPIC -O2 -I <oxnet>/include/oxnet subgraph_lib.cc -o libsubgraph_lib.so
 */
#include <map>
#include <memory>
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

/* ---- the subgraph operator ---- */

/* The subgraph in the operator's attributes (the caller deletes it). */
static Graph* subgraphOf(const Options& attrs) {
  if (!attrs.count(MX_STR_SUBGRAPH_SYM_JSON)) return nullptr;
  return Graph::fromString(attrs.at(MX_STR_SUBGRAPH_SYM_JSON));
}

/* A float32 matrix (or vector) computed while running the subgraph. */
struct Value {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

/* Runs (with_data) or only shapes (!with_data) the subgraph's nodes from the
 * values of its input nodes; the values of its outputs go to `outs`. */
static MXReturnValue runSubgraph(Graph* g, const std::vector<Value>& ins, std::vector<Value>* outs, bool with_data) {
  std::map<Node*, Value> vals;
  for (size_t i = 0; i < g->inputs.size(); i++) vals[g->inputs[i]] = ins[i];
  std::vector<Node*> order = g->topological_sort();
  for (Node* n : order) {
    if (n->op == "null") continue;
    if (n->inputs.empty() || !vals.count(n->inputs[0].node)) {
      MX_ERROR_MSG << "_custom_subgraph_op: node `" << n->name << "` reads no computed value";
      return MX_FAIL;
    }
    const Value& a = vals[n->inputs[0].node];
    Value out;
    if (n->op == "relu" && n->inputs.size() == 1) {
      out.shape = a.shape;
      if (with_data) {
        for (float x : a.data) out.data.push_back(x > 0 ? x : 0);
      }
    } else if (is_gemm(n->op) && n->inputs.size() == 2 && vals.count(n->inputs[1].node)) {
      const Value& b = vals[n->inputs[1].node];
      if (a.shape.size() != 2 || b.shape.size() != 2 || a.shape[1] != b.shape[0]) {
        MX_ERROR_MSG << "_custom_subgraph_op: node `" << n->name << "` multiplies matrices of incompatible shapes";
        return MX_FAIL;
      }
      int64_t m = a.shape[0], k = a.shape[1], p = b.shape[1];
      out.shape = {m, p};
      if (with_data) {
        out.data.assign(static_cast<size_t>(m * p), 0.0f);
        for (int64_t i = 0; i < m; i++)
          for (int64_t j = 0; j < p; j++)
            for (int64_t t = 0; t < k; t++) out.data[i * p + j] += a.data[i * k + t] * b.data[t * p + j];
      }
    } else {
      MX_ERROR_MSG << "_custom_subgraph_op: cannot run node `" << n->name << "` (op " << n->op
                   << " with " << n->inputs.size() << " inputs); it runs my_gemm, state_gemm and relu";
      return MX_FAIL;
    }
    vals[n] = out;
  }
  for (const NodeEntry& e : g->outputs) outs->push_back(vals[e.node]);
  return MX_SUCCESS;
}

static MXReturnValue sgParseAttrs(const Options& attrs, int* num_in, int* num_out) {
  std::unique_ptr<Graph> g(subgraphOf(attrs));
  if (!g) {
    MX_ERROR_MSG << "_custom_subgraph_op needs its subgraph in the attribute " << MX_STR_SUBGRAPH_SYM_JSON;
    return MX_FAIL;
  }
  *num_in = static_cast<int>(g->inputs.size());
  *num_out = static_cast<int>(g->outputs.size());
  return MX_SUCCESS;
}

static MXReturnValue sgInferType(const Options& attrs, std::vector<int>* in_types, std::vector<int>* out_types) {
  (void)attrs;
  for (int t : *in_types) {
    if (t != kFloat32) {
      MX_ERROR_MSG << "_custom_subgraph_op runs float32 inputs only";
      return MX_FAIL;
    }
  }
  for (int& t : *out_types) t = kFloat32;
  return MX_SUCCESS;
}

static MXReturnValue sgInferShape(const Options& attrs, std::vector<std::vector<unsigned int>>* in_shapes,
                                  std::vector<std::vector<unsigned int>>* out_shapes) {
  std::unique_ptr<Graph> g(subgraphOf(attrs));
  if (!g) return MX_FAIL;
  std::vector<Value> ins, outs;
  for (const auto& s : *in_shapes) {
    if (s.empty()) return MX_SUCCESS;  // an input shape is not known yet: nor are the outputs
  }
  for (const auto& s : *in_shapes) ins.push_back(Value{std::vector<int64_t>(s.begin(), s.end()), {}});
  if (runSubgraph(g.get(), ins, &outs, false) != MX_SUCCESS) return MX_FAIL;
  for (size_t i = 0; i < outs.size(); i++) (*out_shapes)[i].assign(outs[i].shape.begin(), outs[i].shape.end());
  return MX_SUCCESS;
}

static MXReturnValue sgForward(const Options& attrs, std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                               const OpResource& res) {
  (void)res;
  std::unique_ptr<Graph> g(subgraphOf(attrs));
  if (!g) return MX_FAIL;
  std::vector<Value> ins, outs;
  for (MXTensor& t : *inputs) {
    const float* d = t.data<float>();
    ins.push_back(Value{t.shape, std::vector<float>(d, d + t.size())});
  }
  if (runSubgraph(g.get(), ins, &outs, true) != MX_SUCCESS) return MX_FAIL;
  for (size_t i = 0; i < outs.size(); i++) {
    float* d = (*outputs)[i].data<float>();
    for (size_t j = 0; j < outs[i].data.size(); j++) d[j] = outs[i].data[j];
  }
  return MX_SUCCESS;
}

REGISTER_OP(_custom_subgraph_op)
    .setParseAttrs(sgParseAttrs)
    .setInferType(sgInferType)
    .setInferShape(sgInferShape)
    .setForward(sgForward, "cpu")
    .setIsSubgraphOp();

MXReturnValue initialize(int version) {
  if (version < 10900) {
    MX_ERROR_MSG << "subgraph_lib needs the library API of MXNet 1.9 or later, got " << version;
    return MX_FAIL;
  }
  return MX_SUCCESS;
}
