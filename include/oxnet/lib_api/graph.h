/*
 * Part of oxnet/lib_api.h (included by it; do not include directly): the
 * reference API for graphs, partitioners and graph passes.
 */
#ifndef OXNET_LIB_API_H_
#error "include oxnet/lib_api.h, not this part of it"
#endif
#ifndef OXNET_LIB_API_GRAPH_H_
#define OXNET_LIB_API_GRAPH_H_

namespace oxnet {
namespace ext {

/* ------------------------------------------------------------------------- */
/* Graphs, partitioners and graph passes                                      */
/* ------------------------------------------------------------------------- */
/* Graphs cross the ABI as NNVM graph JSON (see docs/extensions.md, "Graphs
 * across the ABI"); the classes below read and write it. */

class Node;
class Graph;

/** Allocates new parameters (arguments and auxiliary states) in a graph pass,
 *  through oxnet (which owns their memory, on the CPU). */
class PassResource {
 public:
  /** Wraps the ABI's pass resource (oxnet does this for you). */
  explicit PassResource(const oxnet_ext_pass_resource* res) : res_(res) {}

  /** A new argument `name` of `shapes` and `dtype` on `ctx` (CPU only); also
   *  kept in this resource's map. Throws when oxnet cannot allocate it. */
  MXTensor* alloc_arg(const std::string& name, const std::vector<int64_t>& shapes, const MXContext& ctx,
                      MXDType dtype) const {
    return alloc(name, shapes, ctx, dtype, false);
  }
  /** A new auxiliary state `name` (see alloc_arg). */
  MXTensor* alloc_aux(const std::string& name, const std::vector<int64_t>& shapes, const MXContext& ctx,
                      MXDType dtype) const {
    return alloc(name, shapes, ctx, dtype, true);
  }

 private:
  MXTensor* alloc(const std::string& name, const std::vector<int64_t>& shapes, const MXContext& ctx, MXDType dtype,
                  bool aux) const {
    const char* what = aux ? "alloc_aux" : "alloc_arg";
    if (ctx.dev_type != "cpu") {
      throw std::runtime_error(std::string(what) + "(`" + name + "`): oxnet allocates pass parameters on the CPU only, not on `" +
                               ctx.dev_type + "`");
    }
    if (detail_dl_bits(dtype) == 0) throw std::runtime_error(std::string(what) + "(`" + name + "`): unknown dtype");
    if (!res_ || !res_->alloc_param) throw std::runtime_error(std::string(what) + ": this oxnet offers no parameter allocation");
    DLTensor* t = res_->alloc_param(res_->host_data, name.c_str(), aux ? 1 : 0, shapes.data(),
                                    static_cast<int32_t>(shapes.size()), static_cast<int32_t>(dtype));
    if (!t) throw std::runtime_error(std::string(what) + "(`" + name + "`): oxnet could not allocate it");
    MXTensor& m = (aux ? aux_ : args_)[name];
    m.setTensor(static_cast<char*>(t->data) + t->byte_offset, dtype, shapes.data(), static_cast<int>(shapes.size()), 0,
                MXContext::CPU(), kDefaultStorage);
    return &m;
  }
  static int detail_dl_bits(MXDType t) {
    return (t == kFloat32 || t == kFloat64 || t == kFloat16 || t == kUint8 || t == kInt32 || t == kInt8 || t == kInt64 ||
            t == kBool || t == kBfloat16)
               ? 1
               : 0;
  }
  const oxnet_ext_pass_resource* res_;
  mutable std::unordered_map<std::string, MXTensor> args_, aux_;
};

/** One input or output of a node: the other node and the output index
 *  (for `Node::outputs`: the consuming node and which of its inputs it is). */
struct NodeEntry {
  /** The other node. */
  Node* node;
  /** The output index of the producer (or the input index of the consumer). */
  int entry;
};

/** A node of a Graph: an operator application, or an input (op "null"). */
class Node {
 public:
  /** An empty node. */
  Node() : tensor(nullptr), res(nullptr) {}

  /** Lets this node allocate parameters (the bridge calls it in graph passes). */
  void _setPassResource(PassResource* res_) { res = res_; }

  /** Allocates this (input) node's tensor as a new argument named after the
   *  node (graph passes only); `tensor` then points at it. */
  void alloc_arg(const std::vector<int64_t>& shapes, const MXContext& ctx, MXDType dtype) {
    if (!res) throw std::runtime_error("Node::alloc_arg(`" + name + "`): parameters can be allocated only in a graph pass");
    tensor = res->alloc_arg(name, shapes, ctx, dtype);
  }
  /** Allocates this node's tensor as a new auxiliary state (see alloc_arg). */
  void alloc_aux(const std::vector<int64_t>& shapes, const MXContext& ctx, MXDType dtype) {
    if (!res) throw std::runtime_error("Node::alloc_aux(`" + name + "`): parameters can be allocated only in a graph pass");
    tensor = res->alloc_aux(name, shapes, ctx, dtype);
  }

  /** The operator's name ("null" for inputs). */
  std::string op;
  /** The node's unique name. */
  std::string name;
  /** For inputs: the parameter's data when known (oxnet passes none yet; set by alloc_arg). */
  MXTensor* tensor;
  /** The entries this node reads. */
  std::vector<NodeEntry> inputs;
  /** The nodes reading this one (filled when parsed; not updated by edits). */
  std::vector<NodeEntry> outputs;
  /** Subgraphs of a subgraph operator's node (owned by the graph). */
  std::vector<Graph*> subgraphs;
  /** The node's attributes. */
  std::unordered_map<std::string, std::string> attrs;

 private:
  friend class Graph;
  PassResource* res;
  int num_outputs_ = 1;
};

/** A graph in NNVM form: nodes, inputs (argument nodes), outputs (heads) and
 *  graph attributes. Parse one with fromString, write it back with toString. */
class Graph {
 public:
  /** An empty graph. */
  Graph() : res(nullptr) {}
  /** Deletes the nodes and their subgraphs. */
  ~Graph() {
    for (Node* n : nodes) {
      for (Graph* g : n->subgraphs) delete g;
      delete n;
    }
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /** Parses NNVM graph JSON; the caller owns the result. Throws std::runtime_error on malformed input. */
  static Graph* fromString(const std::string& json) { return fromJson(JsonVal::parse(json)); }

  /** Builds a graph from parsed NNVM JSON; the caller owns the result. */
  static Graph* fromJson(JsonVal val) {
    std::unique_ptr<Graph> g(new Graph());
    auto field = [](const JsonVal& m, const char* key) -> const JsonVal* {
      auto it = m.map.find(JsonVal(std::string(key)));
      return it == m.map.end() ? nullptr : &it->second;
    };
    auto bad = [](const std::string& m) { return std::runtime_error("graph JSON: " + m); };
    if (val.type != MAP) throw bad("the graph is not a JSON object");
    const JsonVal* nodes = field(val, "nodes");
    if (!nodes || nodes->type != LIST) throw bad("no \"nodes\" list");
    const int n = static_cast<int>(nodes->list.size());
    for (int i = 0; i < n; ++i) g->nodes.push_back(new Node());
    auto entry = [&](const JsonVal& e, const std::string& where) -> NodeEntry {
      if (e.type != LIST || e.list.size() < 2 || e.list[0].type != NUM || e.list[1].type != NUM ||
          !e.list[0].str.empty() || !e.list[1].str.empty()) {
        throw bad(where + " is not [node id, output index, version]");
      }
      int id = e.list[0].num, idx = e.list[1].num;
      if (id < 0 || id >= n) {
        throw bad(where + " refers to node " + std::to_string(id) + ", but the graph has " + std::to_string(n) + " nodes");
      }
      if (idx < 0) throw bad(where + " has the negative output index " + std::to_string(idx));
      Node* p = g->nodes[static_cast<size_t>(id)];
      p->num_outputs_ = std::max(p->num_outputs_, idx + 1);
      return NodeEntry{p, idx};
    };
    for (int i = 0; i < n; ++i) {
      const JsonVal& jn = nodes->list[static_cast<size_t>(i)];
      Node* node = g->nodes[static_cast<size_t>(i)];
      std::string where = "node " + std::to_string(i);
      if (jn.type != MAP) throw bad(where + " is not a JSON object");
      const JsonVal* op = field(jn, "op");
      const JsonVal* name = field(jn, "name");
      if (!op || op->type != STR) throw bad(where + " has no string \"op\"");
      if (!name || name->type != STR) throw bad(where + " has no string \"name\"");
      node->op = op->str;
      node->name = name->str;
      where += " (`" + node->name + "`)";
      if (const JsonVal* ins = field(jn, "inputs")) {
        if (ins->type != LIST) throw bad(where + ": \"inputs\" is not a list");
        for (size_t j = 0; j < ins->list.size(); ++j) {
          NodeEntry e = entry(ins->list[j], where + " input " + std::to_string(j));
          node->inputs.push_back(e);
          e.node->outputs.push_back(NodeEntry{node, static_cast<int>(j)});
        }
      }
      for (const char* key : {"attrs", "attr", "param"}) {
        const JsonVal* a = field(jn, key);
        if (!a) continue;
        if (a->type != MAP) throw bad(where + ": \"" + key + "\" is not an object");
        for (const auto& kv : a->map) node->attrs[kv.first.str] = kv.second.type == STR ? kv.second.str : kv.second.dump();
      }
      if (const JsonVal* subs = field(jn, "subgraphs")) {
        if (subs->type != LIST) throw bad(where + ": \"subgraphs\" is not a list");
        for (const JsonVal& s : subs->list) node->subgraphs.push_back(fromJson(s));
      }
    }
    if (const JsonVal* rows = field(val, "node_row_ptr")) {
      if (rows->type == LIST && rows->list.size() == static_cast<size_t>(n) + 1) {
        for (int i = 0; i < n; ++i) {
          int count = rows->list[static_cast<size_t>(i) + 1].num - rows->list[static_cast<size_t>(i)].num;
          Node* p = g->nodes[static_cast<size_t>(i)];
          p->num_outputs_ = std::max(p->num_outputs_, count);
        }
      }
    }
    if (const JsonVal* args = field(val, "arg_nodes")) {
      if (args->type != LIST) throw bad("\"arg_nodes\" is not a list");
      for (const JsonVal& a : args->list) {
        if (a.type != NUM || a.num < 0 || a.num >= n) throw bad("\"arg_nodes\" holds " + a.dump() + ", not a node id");
        g->inputs.push_back(g->nodes[static_cast<size_t>(a.num)]);
      }
    } else {
      for (Node* p : g->nodes) {
        if (p->op == "null") g->inputs.push_back(p);
      }
    }
    if (const JsonVal* heads = field(val, "heads")) {
      if (heads->type != LIST) throw bad("\"heads\" is not a list");
      for (size_t j = 0; j < heads->list.size(); ++j) g->outputs.push_back(entry(heads->list[j], "head " + std::to_string(j)));
    }
    if (const JsonVal* attrs = field(val, "attrs")) {
      if (attrs->type != MAP) throw bad("\"attrs\" is not an object");
      for (const auto& kv : attrs->map) g->attrs[kv.first.str] = kv.second;
    }
    return g.release();
  }

  /** The graph as NNVM JSON: nodes in topological order (see topological_sort),
   *  "arg_nodes" (every node whose op is "null"), "node_row_ptr", "heads", "attrs". */
  JsonVal toJson() const {
    std::vector<Node*> order = topological_sort();
    std::unordered_map<const Node*, int> id;
    for (size_t i = 0; i < order.size(); ++i) id[order[i]] = static_cast<int>(i);
    auto key = [](const char* k) { return JsonVal(std::string(k)); };
    auto entry = [&](const NodeEntry& e, const std::string& where) {
      auto it = id.find(e.node);
      if (!e.node || it == id.end()) throw std::runtime_error(where + " refers to a node that is not in the graph");
      JsonVal v(LIST);
      v.list.push_back(JsonVal(it->second));
      v.list.push_back(JsonVal(e.entry));
      v.list.push_back(JsonVal(0));
      return v;
    };
    std::vector<int> outputs_of(order.size(), 1);
    auto count = [&](const NodeEntry& e) {
      auto it = id.find(e.node);
      if (it != id.end()) outputs_of[static_cast<size_t>(it->second)] = std::max(outputs_of[static_cast<size_t>(it->second)], e.entry + 1);
    };
    JsonVal nodes_json(LIST), args(LIST), rows(LIST), heads(LIST);
    for (size_t i = 0; i < order.size(); ++i) {
      const Node* n = order[i];
      outputs_of[i] = std::max(outputs_of[i], n->num_outputs_);
      JsonVal jn(MAP);
      jn.map[key("op")] = JsonVal(n->op);
      jn.map[key("name")] = JsonVal(n->name);
      JsonVal ins(LIST);
      for (size_t j = 0; j < n->inputs.size(); ++j) {
        ins.list.push_back(entry(n->inputs[j], "input " + std::to_string(j) + " of node `" + n->name + "`"));
        count(n->inputs[j]);
      }
      jn.map[key("inputs")] = ins;
      if (!n->attrs.empty()) {
        JsonVal a(MAP);
        for (const auto& kv : n->attrs) a.map[JsonVal(kv.first)] = JsonVal(kv.second);
        jn.map[key("attrs")] = a;
      }
      if (!n->subgraphs.empty()) {
        JsonVal subs(LIST);
        for (const Graph* s : n->subgraphs) subs.list.push_back(s->toJson());
        jn.map[key("subgraphs")] = subs;
      }
      nodes_json.list.push_back(jn);
      if (n->op == "null") args.list.push_back(JsonVal(static_cast<int>(i)));
    }
    for (size_t j = 0; j < outputs.size(); ++j) {
      heads.list.push_back(entry(outputs[j], "head " + std::to_string(j)));
      count(outputs[j]);
    }
    int row = 0;
    rows.list.push_back(JsonVal(0));
    for (int c : outputs_of) rows.list.push_back(JsonVal(row += c));
    JsonVal g(MAP);
    g.map[key("nodes")] = nodes_json;
    g.map[key("arg_nodes")] = args;
    g.map[key("node_row_ptr")] = rows;
    g.map[key("heads")] = heads;
    JsonVal a(MAP);
    for (const auto& kv : attrs) a.map[JsonVal(kv.first)] = kv.second;
    g.map[key("attrs")] = a;
    return g;
  }

  /** The graph as NNVM JSON text (see toJson). */
  std::string toString() const { return toJson().dump(); }

  /** Post-order visit of `n` and its unvisited inputs (removed from `to_visit`). */
  void _dfs_util(Node* n, std::unordered_set<Node*>* to_visit, std::function<void(Node*)> handler) const {
    if (!to_visit->erase(n)) return;
    for (const NodeEntry& e : n->inputs) _dfs_util(e.node, to_visit, handler);
    handler(n);
  }

  /** Calls `handler` on every node reachable from the outputs, inputs before the nodes reading them. */
  void DFS(std::function<void(Node*)> handler) const {
    std::unordered_set<Node*> to_visit(nodes.begin(), nodes.end());
    for (const NodeEntry& e : outputs) _dfs_util(e.node, &to_visit, handler);
  }

  /** Every node, each after the nodes it reads, otherwise in the graph's
   *  order (so a graph read from JSON keeps its node ids). Nodes that no
   *  output depends on are kept. Throws if the inputs form a cycle. */
  std::vector<Node*> topological_sort() const {
    std::unordered_map<const Node*, size_t> index;
    for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i]] = i;
    std::vector<size_t> waiting(nodes.size(), 0);
    std::vector<std::vector<size_t>> readers(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      for (const NodeEntry& e : nodes[i]->inputs) {
        auto it = index.find(e.node);
        if (it == index.end()) {
          throw std::runtime_error("node `" + nodes[i]->name + "` reads a node that is not in the graph (add it with addNode)");
        }
        ++waiting[i];
        readers[it->second].push_back(i);
      }
    }
    std::vector<Node*> order;
    std::vector<size_t> ready;  // min-heap of indices
    auto cmp = std::greater<size_t>();
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (waiting[i] == 0) ready.push_back(i);
    }
    std::make_heap(ready.begin(), ready.end(), cmp);
    while (!ready.empty()) {
      std::pop_heap(ready.begin(), ready.end(), cmp);
      size_t i = ready.back();
      ready.pop_back();
      order.push_back(nodes[i]);
      for (size_t r : readers[i]) {
        if (--waiting[r] == 0) {
          ready.push_back(r);
          std::push_heap(ready.begin(), ready.end(), cmp);
        }
      }
    }
    if (order.size() != nodes.size()) throw std::runtime_error("the graph has a cycle");
    return order;
  }

  /** Prints the nodes (with their inputs and attributes), the inputs and the outputs to std::cout. */
  void print(int indent = 0) const {
    std::string pad(static_cast<size_t>(indent > 0 ? indent : 0), ' ');
    std::cout << pad << "graph: " << nodes.size() << " nodes, " << inputs.size() << " inputs, " << outputs.size()
              << " outputs\n";
    for (const Node* n : nodes) {
      std::cout << pad << "  node `" << n->name << "` op " << n->op;
      for (size_t j = 0; j < n->inputs.size(); ++j) {
        const Node* in = n->inputs[j].node;
        std::cout << (j ? ", " : " <- ") << (in ? in->name : "?") << "[" << n->inputs[j].entry << "]";
      }
      std::map<std::string, std::string> sorted(n->attrs.begin(), n->attrs.end());
      for (const auto& kv : sorted) std::cout << " " << kv.first << "=" << kv.second;
      std::cout << "\n";
      for (const Graph* s : n->subgraphs) s->print(indent + 4);
    }
    for (const NodeEntry& e : outputs) {
      std::cout << pad << "  output " << (e.node ? e.node->name : "?") << "[" << e.entry << "]\n";
    }
  }

  /** Adds a node `name` applying `op` (no inputs yet: push NodeEntry values to its `inputs`). */
  Node* addNode(const std::string& name, const std::string& op) {
    std::unique_ptr<Node> n(new Node());
    n->name = name;
    n->op = op;
    n->res = res;
    nodes.push_back(n.get());
    return n.release();
  }

  /** Adds an input node `name` (op "null") and lists it in `inputs` (oxnet addition). */
  Node* addInput(const std::string& name) {
    Node* n = addNode(name, "null");
    inputs.push_back(n);
    return n;
  }

  /** Node `idx` (in the order of the JSON, then of addNode). Throws std::out_of_range. */
  Node* getNode(size_t idx) { return nodes.at(idx); }
  /** Node `idx` (read only). */
  const Node* getNode(size_t idx) const { return nodes.at(idx); }

  /** The graph attribute `key`; throws std::runtime_error when absent. */
  const JsonVal& getAttr(const std::string& key) const {
    auto it = attrs.find(key);
    if (it == attrs.end()) throw std::runtime_error("the graph has no attribute `" + key + "`");
    return it->second;
  }

  /** Number of nodes. */
  size_t size() const { return nodes.size(); }

  /** Lets the nodes allocate parameters (the bridge calls it in graph passes). */
  void _setPassResource(PassResource* res_) {
    res = res_;
    for (Node* n : nodes) n->res = res_;
  }

  /** Points each input node's `tensor` at the parameter of its name, if given. */
  void _setParams(std::unordered_map<std::string, MXTensor>* args, std::unordered_map<std::string, MXTensor>* aux) {
    for (Node* n : inputs) {
      if (args && args->count(n->name)) n->tensor = &(*args)[n->name];
      else if (aux && aux->count(n->name)) n->tensor = &(*aux)[n->name];
    }
  }

  /** The input (argument) nodes, as listed by "arg_nodes". */
  std::vector<Node*> inputs;
  /** The graph's outputs ("heads"). */
  std::vector<NodeEntry> outputs;
  /** Graph attributes (values as JSON: strings, or MXNet's ["str", "value"] pairs). */
  std::map<std::string, JsonVal> attrs;

 private:
  std::vector<Node*> nodes;
  PassResource* res;
};

/** Grows subgraphs node by node (an alternative to supportedOps): derive from
 *  it and create one in your createSelector function; oxnet deletes it. */
class CustomOpSelector {
 public:
  /** Virtual: oxnet deletes selectors through this class. */
  virtual ~CustomOpSelector() = default;
  /** Whether node `nodeID` starts (or joins) a subgraph. */
  virtual bool Select(int nodeID) = 0;
  /** Whether to grow from node `nodeID` into its input node `input_nodeID`. */
  virtual bool SelectInput(int nodeID, int input_nodeID) = 0;
  /** Whether to grow from node `nodeID` into its output node `output_nodeID`. */
  virtual bool SelectOutput(int nodeID, int output_nodeID) = 0;
  /** Chooses which of the grown `candidates` to keep (default: all). */
  virtual void Filter(const std::vector<int>& candidates, std::vector<int>* keep) {
    keep->insert(keep->end(), candidates.begin(), candidates.end());
  }
  /** Forgets per-subgraph state (called after a subgraph was grown). */
  virtual void Reset() {}
};

/** A graph pass: rewrites `graph` in place. */
typedef MXReturnValue (*graphPass_t)(Graph* graph,
                                     const std::unordered_map<std::string, std::string>& options);

/** A graph pass's registration: REGISTER_PASS(name).setBody(fn). */
class CustomPass {
 public:
  /** An unnamed pass. */
  CustomPass() : name("ERROR"), pass(nullptr) {}
  /** A pass named `pass_name` with no body yet. */
  explicit CustomPass(const char* pass_name) : name(pass_name), pass(nullptr) {}
  /** Sets the pass function. */
  CustomPass& setBody(graphPass_t fn) {
    if (pass) registration_error = "setBody was called twice";
    pass = fn;
    return *this;
  }
  /** The pass's name. */
  const char* name;
  /** The pass function. */
  graphPass_t pass;
  /** Mistakes found by the setters; the library's load fails with them. */
  std::string registration_error;
};

/** Marks supported nodes: set `(*ids)[i]` to -1 (any subgraph) or a subgraph
 *  id >= 0 for node i; it starts at -2 (not supported). */
typedef MXReturnValue (*supportedOps_t)(const Graph* graph, std::vector<int>* ids,
                                        const std::unordered_map<std::string, std::string>& options);
/** Creates a CustomOpSelector for `graph` (which lives as long as the selector). */
typedef MXReturnValue (*createSelector_t)(const Graph* graph, CustomOpSelector** sel_inst,
                                          const std::unordered_map<std::string, std::string>& options);
/** Reviews one subgraph: sets `*accept` (false unless set) and may add attributes for its node. */
typedef MXReturnValue (*reviewSubgraph_t)(const Graph* subgraph, int subgraph_id, bool* accept,
                                          const std::unordered_map<std::string, std::string>& options,
                                          std::unordered_map<std::string, std::string>* attrs);

/** A partitioner's registration (MXNet's "backend"): REGISTER_PARTITIONER(name)
 *  .addStrategy(strategy, subgraph_op).setSupportedOps(strategy, fn) ... */
class CustomPartitioner {
 public:
  /** An unnamed partitioner. */
  CustomPartitioner() : name("ERROR") {}
  /** A partitioner named `backend_name` with no strategies yet. */
  explicit CustomPartitioner(const char* backend_name) : name(backend_name) {}

  /** Adds strategy `prop_name`, whose accepted subgraphs become `sg_name` operators. */
  CustomPartitioner& addStrategy(const char* prop_name, const char* sg_name) {
    std::string p = prop_name ? prop_name : "";
    for (const char* s : strategies) {
      if (p == s) note("addStrategy(\"" + p + "\", ...) was called twice");
    }
    if (p.empty() || !sg_name || !*sg_name) note("addStrategy needs a strategy name and a subgraph operator name");
    strategies.push_back(prop_name ? prop_name : "");
    op_names.push_back(sg_name ? sg_name : "");
    return *this;
  }
  /** Sets strategy `prop_name`'s supported-ops function. */
  CustomPartitioner& setSupportedOps(const char* prop_name, supportedOps_t fn) {
    supported_map[prop_name ? prop_name : ""] = fn;
    return *this;
  }
  /** Sets strategy `prop_name`'s selector factory. */
  CustomPartitioner& setCreateSelector(const char* prop_name, createSelector_t fn) {
    selector_map[prop_name ? prop_name : ""] = fn;
    return *this;
  }
  /** Sets strategy `prop_name`'s subgraph review. */
  CustomPartitioner& setReviewSubgraph(const char* prop_name, reviewSubgraph_t fn) {
    review_map[prop_name ? prop_name : ""] = fn;
    return *this;
  }
  /** Strategy `stg_id`'s supported-ops function (NULL if none). */
  supportedOps_t getSupportedOps(int stg_id) { return lookup(supported_map, stg_id); }
  /** Strategy `stg_id`'s selector factory (NULL if none). */
  createSelector_t getCreateSelector(int stg_id) { return lookup(selector_map, stg_id); }
  /** Strategy `stg_id`'s review (NULL if none). */
  reviewSubgraph_t getReviewSubgraph(int stg_id) { return lookup(review_map, stg_id); }

  /** The partitioner's name. */
  const char* name;
  /** Functions by strategy name. */
  std::map<std::string, supportedOps_t> supported_map;
  std::map<std::string, createSelector_t> selector_map;
  std::map<std::string, reviewSubgraph_t> review_map;
  /** Strategy names, in order. */
  std::vector<const char*> strategies;
  /** Subgraph operator name of each strategy. */
  std::vector<const char*> op_names;
  /** Mistakes found by the setters; the library's load fails with them. */
  std::string registration_error;

 private:
  template <typename F>
  F lookup(const std::map<std::string, F>& m, int stg_id) {
    if (stg_id < 0 || static_cast<size_t>(stg_id) >= strategies.size()) return nullptr;
    auto it = m.find(strategies[static_cast<size_t>(stg_id)]);
    return it == m.end() ? nullptr : it->second;
  }
  void note(const std::string& p) {
    if (!registration_error.empty()) registration_error += "; ";
    registration_error += p;
  }
};

/** Registers a partitioner: `REGISTER_PARTITIONER(my_part).addStrategy("s", "_sg_op").setSupportedOps("s", fn);`. */
#define MX_REGISTER_PROP_NAME_(Name) OxnetCustomPartitioner_##Name
#define MX_REGISTER_PROP_DEF_(Name) static ::oxnet::ext::CustomPartitioner MX_REGISTER_PROP_NAME_(Name)
#define REGISTER_PARTITIONER(Name)                          \
  MX_STR_CONCAT(MX_REGISTER_PROP_DEF_(Name), __COUNTER__) = \
      ::oxnet::ext::Registry<::oxnet::ext::CustomPartitioner>::get()->add(MX_TOSTRING(Name))

/** Registers a graph pass: `REGISTER_PASS(my_pass).setBody(fn);`. */
#define MX_REGISTER_PASS_NAME_(Name) OxnetCustomPass_##Name
#define MX_REGISTER_PASS_DEF_(Name) static ::oxnet::ext::CustomPass MX_REGISTER_PASS_NAME_(Name)
#define REGISTER_PASS(Name)                                 \
  MX_STR_CONCAT(MX_REGISTER_PASS_DEF_(Name), __COUNTER__) = \
      ::oxnet::ext::Registry<::oxnet::ext::CustomPass>::get()->add(MX_TOSTRING(Name))

}  // namespace ext
}  // namespace oxnet

#endif  // OXNET_LIB_API_GRAPH_H_
