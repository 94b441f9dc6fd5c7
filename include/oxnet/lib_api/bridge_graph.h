/*
 * Part of oxnet/lib_api.h (included by it; do not include directly): the
 * bridge from registered partitioners and graph passes to the C ABI, and the
 * library table.
 */
#ifndef OXNET_LIB_API_H_
#error "include oxnet/lib_api.h, not this part of it"
#endif
#ifndef OXNET_LIB_API_BRIDGE_GRAPH_H_
#define OXNET_LIB_API_BRIDGE_GRAPH_H_

#pragma GCC visibility push(hidden)

namespace oxnet {
namespace ext {
namespace detail {

/* ---- partitioners and graph passes ---- */

/** The host table the library was loaded with (for log messages). */
inline const oxnet_ext_host*& host_table() {
  static const oxnet_ext_host* host = nullptr;
  return host;
}

/** Logs a warning through the host (where a callback has no error sink). */
inline void log_warning(const std::string& m) noexcept {
  const oxnet_ext_host* h = host_table();
  if (h && h->log) h->log(h->host_data, 1, m.c_str());
}

/** Options as the reference's map. */
inline AttrMap options_map(const oxnet_ext_attrs* a) {
  AttrMap m;
  if (!a || a->count <= 0 || !a->keys || !a->values) return m;
  for (int32_t i = 0; i < a->count; ++i) {
    if (a->keys[i]) m[a->keys[i]] = a->values[i] ? a->values[i] : "";
  }
  return m;
}

/** Parses a graph oxnet passed; a malformed one becomes the call's error. */
inline std::unique_ptr<Graph> host_graph(const char* json, const char* what) {
  if (!json) throw bridge_error(std::string("oxnet passed no ") + what);
  try {
    return std::unique_ptr<Graph>(Graph::fromString(json));
  } catch (const std::exception& e) {
    throw bridge_error(std::string("cannot read the ") + what + " oxnet passed: " + e.what());
  }
}

/** Most strategies (over all partitioners) one library may register. */
constexpr int kMaxStrategies = 64;

/** One strategy: its partitioner and index there. */
struct StrategyRef {
  CustomPartitioner* part;
  int index;
};

/** The library's strategies, numbered across partitioners (filled by LibraryTable). */
inline std::vector<StrategyRef>& strategy_refs() {
  static std::vector<StrategyRef> refs;
  return refs;
}

inline int32_t call_supported_ops(const StrategyRef& s, const char* json, int32_t* ids, int32_t num_nodes,
                                  const oxnet_ext_attrs* options, oxnet_ext_error* err) {
  return guarded(err, [&]() {
    supportedOps_t fn = s.part->getSupportedOps(s.index);
    if (!fn) throw bridge_error("this strategy has no supportedOps");
    std::unique_ptr<Graph> g = host_graph(json, "graph");
    if (num_nodes < 0 || static_cast<size_t>(num_nodes) != g->size() || (num_nodes > 0 && !ids)) {
      throw bridge_error("oxnet passed room for " + std::to_string(num_nodes) + " ids for a graph of " +
                         std::to_string(g->size()) + " nodes");
    }
    std::vector<int> v(static_cast<size_t>(num_nodes), -2);
    MXReturnValue r = fn(g.get(), &v, options_map(options));
    if (r != MX_SUCCESS) return r;
    if (v.size() != static_cast<size_t>(num_nodes)) {
      throw bridge_error("supportedOps resized its id list (" + std::to_string(num_nodes) + " entries expected)");
    }
    int max_id = -1;
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] < -2) {
        throw bridge_error("supportedOps gave node " + std::to_string(i) + " the id " + std::to_string(v[i]) +
                           " (use -2: not supported, -1: any subgraph, >= 0: that subgraph)");
      }
      max_id = std::max(max_id, v[i]);
    }
    // the ABI has no "any subgraph": those nodes share one fresh id
    const int any = max_id + 1;
    for (size_t i = 0; i < v.size(); ++i) ids[i] = v[i] == -2 ? -1 : v[i] == -1 ? any : v[i];
    return MX_SUCCESS;
  });
}

/** A selector and the graph it was created for (which it may keep pointers into). */
struct SelectorBox {
  CustomOpSelector* sel;
  Graph* graph;
};

/** Runs a selector callback (which has no error sink): an exception is logged and fails the call. */
template <typename F>
int32_t selector_call(void* selector, const char* what, F&& f) noexcept {
  try {
    if (!selector) throw bridge_error("no selector");
    f(static_cast<SelectorBox*>(selector)->sel);
    return OXNET_EXT_OK;
  } catch (const std::exception& e) {
    try {
      log_warning(std::string("CustomOpSelector::") + what + " threw a C++ exception: " + e.what());
    } catch (...) {
    }
  } catch (...) {
    log_warning(std::string("CustomOpSelector::") + what + " threw a C++ exception that is not a std::exception");
  }
  return OXNET_EXT_FAIL;
}

inline int32_t selector_select(void* s, int32_t node, int32_t* selected) {
  return selector_call(s, "Select", [&](CustomOpSelector* sel) { *selected = sel->Select(node) ? 1 : 0; });
}
inline int32_t selector_select_input(void* s, int32_t node, int32_t input, int32_t* selected) {
  return selector_call(s, "SelectInput",
                       [&](CustomOpSelector* sel) { *selected = sel->SelectInput(node, input) ? 1 : 0; });
}
inline int32_t selector_select_output(void* s, int32_t node, int32_t output, int32_t* selected) {
  return selector_call(s, "SelectOutput",
                       [&](CustomOpSelector* sel) { *selected = sel->SelectOutput(node, output) ? 1 : 0; });
}
inline int32_t selector_filter(void* s, const int32_t* candidates, int32_t num_candidates, int32_t* keep,
                               int32_t* num_keep) {
  return selector_call(s, "Filter", [&](CustomOpSelector* sel) {
    std::vector<int> c(candidates, candidates + (num_candidates > 0 ? num_candidates : 0)), k;
    sel->Filter(c, &k);
    if (k.size() > c.size()) throw bridge_error("kept more nodes than the candidates");
    for (size_t i = 0; i < k.size(); ++i) {
      if (std::find(c.begin(), c.end(), k[i]) == c.end()) {
        throw bridge_error("kept node " + std::to_string(k[i]) + ", which is not a candidate");
      }
      keep[i] = k[i];
    }
    *num_keep = static_cast<int32_t>(k.size());
  });
}
inline void selector_reset(void* s) {
  selector_call(s, "Reset", [&](CustomOpSelector* sel) { sel->Reset(); });
}
inline void selector_destroy(void* s) {
  SelectorBox* box = static_cast<SelectorBox*>(s);
  if (!box) return;
  try {
    delete box->sel;
  } catch (...) {
    log_warning("a CustomOpSelector's destructor threw a C++ exception");
  }
  delete box->graph;
  delete box;
}

inline int32_t call_create_selector(const StrategyRef& s, const char* json, const oxnet_ext_attrs* options,
                                    oxnet_ext_selector* out, oxnet_ext_error* err) {
  return guarded(err, [&]() {
    createSelector_t fn = s.part->getCreateSelector(s.index);
    if (!fn) throw bridge_error("this strategy has no createSelector");
    std::unique_ptr<Graph> g = host_graph(json, "graph");
    CustomOpSelector* sel = nullptr;
    MXReturnValue r = fn(g.get(), &sel, options_map(options));
    if (r != MX_SUCCESS) {
      delete sel;
      return r;
    }
    if (!sel) throw bridge_error("createSelector returned MX_SUCCESS without creating a CustomOpSelector");
    out->selector = new SelectorBox{sel, g.release()};
    out->select = &selector_select;
    out->select_input = &selector_select_input;
    out->select_output = &selector_select_output;
    out->filter = &selector_filter;
    out->reset = &selector_reset;
    out->destroy = &selector_destroy;
    return MX_SUCCESS;
  });
}

inline int32_t call_review_subgraph(const StrategyRef& s, const char* json, int32_t subgraph_id,
                                    const oxnet_ext_attrs* options, int32_t* accept, oxnet_ext_sink* attrs_out,
                                    oxnet_ext_error* err) {
  return guarded(err, [&]() {
    reviewSubgraph_t fn = s.part->getReviewSubgraph(s.index);
    if (!fn) throw bridge_error("this strategy has no reviewSubgraph");
    std::unique_ptr<Graph> g = host_graph(json, "subgraph");
    bool ok = false;  // as the reference: rejected unless the review accepts it
    AttrMap attrs;
    MXReturnValue r = fn(g.get(), static_cast<int>(subgraph_id), &ok, options_map(options), &attrs);
    if (r != MX_SUCCESS) return r;
    *accept = ok ? 1 : 0;
    if (!attrs.empty()) {
      if (!attrs_out || !attrs_out->push) throw bridge_error("oxnet passed no sink for the subgraph's attributes");
      std::map<std::string, std::string> sorted(attrs.begin(), attrs.end());
      for (const auto& kv : sorted) attrs_out->push(attrs_out->host_data, kv.first.c_str(), kv.second.c_str());
    }
    return MX_SUCCESS;
  });
}

/** The ABI entry points of strategy K (the ABI's strategies carry no user
 *  data, so each strategy gets its own functions). */
template <int K>
struct StrategyThunks {
  static int32_t supported_ops(void*, const char* json, int32_t* ids, int32_t n, const oxnet_ext_attrs* o,
                               oxnet_ext_error* err) {
    return call_supported_ops(strategy_refs()[K], json, ids, n, o, err);
  }
  static int32_t create_selector(void*, const char* json, const oxnet_ext_attrs* o, oxnet_ext_selector* out,
                                 oxnet_ext_error* err) {
    return call_create_selector(strategy_refs()[K], json, o, out, err);
  }
  static int32_t review_subgraph(void*, const char* json, int32_t id, const oxnet_ext_attrs* o, int32_t* accept,
                                 oxnet_ext_sink* attrs_out, oxnet_ext_error* err) {
    return call_review_subgraph(strategy_refs()[K], json, id, o, accept, attrs_out, err);
  }
};

/** Strategy K's three functions. */
struct ThunkSet {
  oxnet_ext_supported_ops_fn supported_ops;
  oxnet_ext_create_selector_fn create_selector;
  oxnet_ext_review_subgraph_fn review_subgraph;
};

template <int... K>
const ThunkSet* thunk_table(std::integer_sequence<int, K...>) {
  static const ThunkSet table[] = {
      {&StrategyThunks<K>::supported_ops, &StrategyThunks<K>::create_selector, &StrategyThunks<K>::review_subgraph}...};
  return table;
}

/** The functions of strategy k < kMaxStrategies. */
inline const ThunkSet& strategy_thunks(int k) {
  return thunk_table(std::make_integer_sequence<int, kMaxStrategies>())[k];
}

inline int32_t run_pass(void* user, const char* json, const oxnet_ext_attrs* options, oxnet_ext_sink* out,
                        const oxnet_ext_pass_resource* res, oxnet_ext_error* err) {
  return guarded(err, [&]() {
    CustomPass* pass = static_cast<CustomPass*>(user);
    std::unique_ptr<Graph> g = host_graph(json, "graph");
    PassResource pr(res);
    g->_setPassResource(&pr);
    MXReturnValue r = pass->pass(g.get(), options_map(options));
    if (r != MX_SUCCESS) return r;
    std::string text;
    try {
      text = g->toString();
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::exception& e) {
      throw bridge_error(std::string("the rewritten graph cannot be written: ") + e.what());
    }
    if (!out || !out->push) throw bridge_error("oxnet passed no sink for the rewritten graph");
    out->push(out->host_data, nullptr, text.c_str());
    return MX_SUCCESS;
  });
}

/** Registration mistakes of partitioners and passes ("" when none). */
inline std::string graph_registration_errors() {
  std::string all;
  auto add = [&](const std::string& m) {
    if (!all.empty()) all += "; ";
    all += m;
  };
  auto* parts = Registry<CustomPartitioner>::get();
  int total = 0;
  for (int i = 0; i < parts->size(); ++i) {
    CustomPartitioner& p = parts->get(i);
    std::string problems = p.registration_error;
    auto note = [&](const std::string& m) { problems += (problems.empty() ? "" : "; ") + m; };
    if (p.strategies.empty()) note("no strategy (call addStrategy)");
    for (size_t s = 0; s < p.strategies.size(); ++s) {
      int k = static_cast<int>(s);
      if (!p.getSupportedOps(k) && !p.getCreateSelector(k)) {
        note(std::string("strategy `") + p.strategies[s] + "` has neither supportedOps nor createSelector");
      }
    }
    auto known = [&](const std::string& st) {
      for (const char* s : p.strategies) {
        if (st == s) return true;
      }
      return false;
    };
    for (const auto& kv : p.supported_map) {
      if (!known(kv.first)) note("setSupportedOps for unknown strategy `" + kv.first + "` (call addStrategy first)");
    }
    for (const auto& kv : p.selector_map) {
      if (!known(kv.first)) note("setCreateSelector for unknown strategy `" + kv.first + "` (call addStrategy first)");
    }
    for (const auto& kv : p.review_map) {
      if (!known(kv.first)) note("setReviewSubgraph for unknown strategy `" + kv.first + "` (call addStrategy first)");
    }
    total += static_cast<int>(p.strategies.size());
    if (!problems.empty()) add("bad registration of partitioner `" + std::string(p.name ? p.name : "") + "`: " + problems);
  }
  if (total > kMaxStrategies) {
    add("the library registers " + std::to_string(total) + " partitioning strategies; this header supports at most " +
        std::to_string(kMaxStrategies));
  }
  auto* passes = Registry<CustomPass>::get();
  for (int i = 0; i < passes->size(); ++i) {
    CustomPass& p = passes->get(i);
    std::string problems = p.registration_error;
    if (!p.pass) problems += (problems.empty() ? "" : "; ") + std::string("no body (call setBody)");
    if (!problems.empty()) add("bad registration of graph pass `" + std::string(p.name ? p.name : "") + "`: " + problems);
  }
  return all;
}

/** Checks every registration, then runs the library's own `initialize`. */
inline int32_t initialize_library(int32_t host_version, oxnet_ext_error* err) {
  return guarded(err, [&]() {
    auto* reg = Registry<CustomOp>::get();
    bool all_good = true;
    for (int i = 0; i < reg->size(); ++i) {
      CustomOp& op = reg->get(i);
      std::string problems = op.registration_error;
      auto add = [&](const char* p) {
        if (!problems.empty()) problems += "; ";
        problems += p;
      };
      if (!op.parse_attrs) add("no parseAttrs (call setParseAttrs)");
      if (!op.infer_shape) add("no inferShape (call setInferShape)");
      bool any = false;
      for (int s = 0; s < OXNET_EXT_NUM_DEVICE_SLOTS; ++s) any = any || op.forward_fn[s] || op.create_op_fn[s];
      if (!any) add("neither a forward function nor createOpState (call setForward or setCreateOpState)");
      if (!problems.empty()) {
        MX_ERROR_MSG << "bad registration of operator `" << (op.name ? op.name : "") << "`: " << problems;
        all_good = false;
      }
    }
    std::string graph_problems = graph_registration_errors();
    if (!graph_problems.empty()) {
      MX_ERROR_MSG << graph_problems;
      all_good = false;
    }
    if (!all_good) return MX_FAIL;
    detail_version::host() = static_cast<int>(host_version);
    if (&::initialize != nullptr) {
      MXReturnValue r = ::initialize(MX_LIBRARY_COMPAT_VERSION);
      if (r != MX_SUCCESS && error_messages().empty()) {
        MX_ERROR_MSG << "the library's initialize(" << MX_LIBRARY_COMPAT_VERSION << ") returned MX_FAIL";
      }
      return r;
    }
    return MX_SUCCESS;
  });
}

/** The library's ABI table, built once from the registry. */
struct LibraryTable {
  std::vector<oxnet_ext_op> ops;
  std::vector<oxnet_ext_strategy> strategies;
  std::vector<oxnet_ext_partitioner> partitioners;
  std::vector<oxnet_ext_pass> passes;
  oxnet_ext_library lib;

  LibraryTable() : lib{OXNET_EXT_LIBRARY_HEADER, nullptr, nullptr, nullptr, nullptr, 0, 0, 0, 0} {
    auto* reg = Registry<CustomOp>::get();
    for (int i = 0; i < reg->size(); ++i) {
      CustomOp& op = reg->get(i);
      oxnet_ext_op d;
      memset(&d, 0, sizeof d);
      d.struct_size = static_cast<uint32_t>(sizeof(oxnet_ext_op));
      d.is_subgraph_op = op.isSGop ? 1 : 0;
      d.name = op.name;
      d.user_data = &op;
      d.parse_attrs = &parse_attrs;
      d.infer_type = &infer_type;
      d.infer_shape = &infer_shape;
      d.mutate_inputs = op.mutate_inputs ? &mutate_inputs : nullptr;
      d.forward[OXNET_EXT_SLOT_CPU] = op.forward_fn[OXNET_EXT_SLOT_CPU] ? &kernel<OXNET_EXT_SLOT_CPU, false> : nullptr;
      d.forward[OXNET_EXT_SLOT_GPU] = op.forward_fn[OXNET_EXT_SLOT_GPU] ? &kernel<OXNET_EXT_SLOT_GPU, false> : nullptr;
      d.backward[OXNET_EXT_SLOT_CPU] = op.backward_fn[OXNET_EXT_SLOT_CPU] ? &kernel<OXNET_EXT_SLOT_CPU, true> : nullptr;
      d.backward[OXNET_EXT_SLOT_GPU] = op.backward_fn[OXNET_EXT_SLOT_GPU] ? &kernel<OXNET_EXT_SLOT_GPU, true> : nullptr;
      d.create_state[OXNET_EXT_SLOT_CPU] = op.create_op_fn[OXNET_EXT_SLOT_CPU] ? &create_state<OXNET_EXT_SLOT_CPU> : nullptr;
      d.create_state[OXNET_EXT_SLOT_GPU] = op.create_op_fn[OXNET_EXT_SLOT_GPU] ? &create_state<OXNET_EXT_SLOT_GPU> : nullptr;
      ops.push_back(d);
    }
    lib.initialize = &initialize_library;
    lib.ops = ops.empty() ? nullptr : ops.data();
    lib.num_ops = static_cast<int32_t>(ops.size());
    add_partitioners();
    add_passes();
  }

  /** One descriptor per partitioner, its strategies numbered across the library
   *  (a strategy past kMaxStrategies gets no functions: initialize refuses the load). */
  void add_partitioners() {
    auto* reg = Registry<CustomPartitioner>::get();
    std::vector<StrategyRef>& refs = strategy_refs();
    refs.clear();
    for (int i = 0; i < reg->size(); ++i) {
      CustomPartitioner& p = reg->get(i);
      for (size_t s = 0; s < p.strategies.size(); ++s) {
        int k = static_cast<int>(refs.size());
        refs.push_back(StrategyRef{&p, static_cast<int>(s)});
        oxnet_ext_strategy d;
        memset(&d, 0, sizeof d);
        d.name = p.strategies[s];
        d.subgraph_op_name = p.op_names[s];
        if (k < kMaxStrategies) {
          const ThunkSet& t = strategy_thunks(k);
          d.supported_ops = p.getSupportedOps(static_cast<int>(s)) ? t.supported_ops : nullptr;
          d.create_selector = p.getCreateSelector(static_cast<int>(s)) ? t.create_selector : nullptr;
          d.review_subgraph = p.getReviewSubgraph(static_cast<int>(s)) ? t.review_subgraph : nullptr;
        }
        strategies.push_back(d);
      }
    }
    size_t next = 0;  // the strategies vector is complete: point into it
    for (int i = 0; i < reg->size(); ++i) {
      CustomPartitioner& p = reg->get(i);
      oxnet_ext_partitioner d;
      memset(&d, 0, sizeof d);
      d.struct_size = static_cast<uint32_t>(sizeof(oxnet_ext_partitioner));
      d.num_strategies = static_cast<int32_t>(p.strategies.size());
      d.name = p.name;
      d.user_data = &p;
      d.strategies = p.strategies.empty() ? nullptr : strategies.data() + next;
      next += p.strategies.size();
      partitioners.push_back(d);
    }
    lib.partitioners = partitioners.empty() ? nullptr : partitioners.data();
    lib.num_partitioners = static_cast<int32_t>(partitioners.size());
  }

  /** One descriptor per graph pass. */
  void add_passes() {
    auto* reg = Registry<CustomPass>::get();
    for (int i = 0; i < reg->size(); ++i) {
      CustomPass& p = reg->get(i);
      oxnet_ext_pass d;
      memset(&d, 0, sizeof d);
      d.struct_size = static_cast<uint32_t>(sizeof(oxnet_ext_pass));
      d.name = p.name;
      d.user_data = &p;
      d.run = p.pass ? &run_pass : nullptr;
      passes.push_back(d);
    }
    lib.passes = passes.empty() ? nullptr : passes.data();
    lib.num_passes = static_cast<int32_t>(passes.size());
  }
};

inline const oxnet_ext_library* library_table() noexcept {
  try {
    static LibraryTable table;
    return &table.lib;
  } catch (...) {
    return nullptr;
  }
}

}  // namespace detail
}  // namespace ext
}  // namespace oxnet

#pragma GCC visibility pop

#endif  // OXNET_LIB_API_BRIDGE_GRAPH_H_
