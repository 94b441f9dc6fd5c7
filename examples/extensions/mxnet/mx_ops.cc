/*
 * mx_ops.cc -- an operator library written for Apache MXNet 1.9.1, as an
 * MXNet user would write it: it includes MXNet's own "mxnet/lib_api.h" and is
 * linked with MXNet's lib_api.cc (both from the mxnet 1.9.1 wheel; see
 * scripts/fetch_mxnet_sdk.py). oxnet loads the resulting libmx_ops.so
 * unchanged (MXNet's library ABI, version 11).
 *
 * Operators:
 *   mx_gemm        C = A.B for 2-D float32/float64 matrices, forward and backward;
 *                  the forward transposes B into a workspace from res.alloc_cpu
 *   mx_state_gemm  stateful: C = scale * A.B; each instance counts its forward
 *                  calls, starting at the attribute test_kw (test hooks below)
 *   mx_noise       out = x + u, u uniform in [0, 1) drawn from the CPU random
 *                  states (even elements: state 0, odd: the last state)
 *   mx_throw       its forward throws std::runtime_error
 *   mx_fail        fails (MX_FAIL with a message) in the callback its attribute
 *                  `stage` names (default: forward); silent=1: without a message
 *   mx_accumulate  mutates input 1 in place (in1 += in0); out = in0
 *   mx_probe       describes what the kernel is given (devices, dtype codes,
 *                  workspace, stream) as 8 float32 values
 * Partitioner mx_part (strategies by_op: supportedOps, grow: a selector; both
 * review their subgraphs) and graph pass mx_tag_pass.
 *
 * Build: make (MXNET_SDK=<dir holding include/mxnet/lib_api.h and src/lib_api.cc>)
 */
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "mxnet/lib_api.h"

using namespace mxnet::ext;

typedef std::unordered_map<std::string, std::string> Attrs;
typedef std::vector<std::vector<unsigned int>> Shapes;

/* ----------------------------------------------------------------------- */
/* Helpers                                                                  */
/* ----------------------------------------------------------------------- */

static const char* dtype_name(int t) {
  switch (t) {
    case kFloat32: return "float32";
    case kFloat64: return "float64";
    case kFloat16: return "float16";
    case kUint8: return "uint8";
    case kInt32: return "int32";
    case kInt8: return "int8";
    case kInt64: return "int64";
    default: return "unknown";
  }
}

static std::string attr_or(const Attrs& attrs, const char* key, const std::string& fallback) {
  auto it = attrs.find(key);
  return it == attrs.end() ? fallback : it->second;
}

/* c[m x n] = a[m x k] . b[k x n]; bt (n x k) is b transposed, scratch of the caller. */
template <typename T>
static void matmul(const T* a, const T* b, T* c, T* bt, int64_t m, int64_t k, int64_t n, T scale) {
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) bt[j * k + p] = b[p * n + j];
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      T sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += a[i * k + p] * bt[j * k + p];
      c[i * n + j] = scale * sum;
    }
  }
}

/* Forward of the gemms: inputs A, B; output C (always overwritten, as in MXNet). */
template <typename T>
static MXReturnValue gemm_forward(std::vector<MXTensor>* in, std::vector<MXTensor>* out, const OpResource& res,
                                  T scale) {
  MXTensor& a = (*in)[0];
  MXTensor& b = (*in)[1];
  const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  T* bt = static_cast<T*>(res.alloc_cpu(static_cast<int>(k * n * sizeof(T))));
  if (bt == nullptr && k * n > 0) {
    MX_ERROR_MSG << "gemm: no workspace for " << k * n << " elements";
    return MX_FAIL;
  }
  matmul(a.data<T>(), b.data<T>(), (*out)[0].data<T>(), bt, m, k, n, scale);
  return MX_SUCCESS;
}

/* Backward of the gemms, MXNet's layout: inputs dC, A, B, C; outputs dA, dB.
 * dA = scale * dC . B^T, dB = scale * A^T . dC (overwritten). */
template <typename T>
static MXReturnValue gemm_backward(std::vector<MXTensor>* in, std::vector<MXTensor>* out, const OpResource& res,
                                   T scale) {
  if (in->size() != 4 || out->size() != 2) {
    MX_ERROR_MSG << "gemm backward: expected 4 inputs (dC, A, B, C) and 2 outputs, got " << in->size() << " and "
                 << out->size();
    return MX_FAIL;
  }
  const T* dc = (*in)[0].data<T>();
  const T* a = (*in)[1].data<T>();
  const T* b = (*in)[2].data<T>();
  const int64_t m = (*in)[1].shape[0], k = (*in)[1].shape[1], n = (*in)[2].shape[1];
  T* da = (*out)[0].data<T>();
  T* db = (*out)[1].data<T>();
  // dA (m x k) = dC (m x n) . B^T: row p of B is column p of B^T
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      T sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += dc[i * n + j] * b[p * n + j];
      da[i * k + p] = scale * sum;
    }
  // dB (k x n) = A^T (k x m) . dC (m x n), A^T formed in a workspace
  T* at = static_cast<T*>(res.alloc_cpu(static_cast<int>(m * k * sizeof(T))));
  if (at == nullptr && m * k > 0) {
    MX_ERROR_MSG << "gemm backward: no workspace for " << m * k << " elements";
    return MX_FAIL;
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) at[p * m + i] = a[i * k + p];
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) {
      T sum = 0;
      for (int64_t i = 0; i < m; ++i) sum += at[p * m + i] * dc[i * n + j];
      db[p * n + j] = scale * sum;
    }
  return MX_SUCCESS;
}

/* ----------------------------------------------------------------------- */
/* mx_gemm                                                                  */
/* ----------------------------------------------------------------------- */

static MXReturnValue gemm_parse(const Attrs&, int* num_in, int* num_out) {
  *num_in = 2;
  *num_out = 1;
  return MX_SUCCESS;
}

static MXReturnValue gemm_infer_type(const Attrs&, std::vector<int>* in, std::vector<int>* out) {
  for (size_t i = 0; i < in->size(); ++i) {
    if ((*in)[i] != kFloat32 && (*in)[i] != kFloat64) {
      MX_ERROR_MSG << "mx_gemm: input " << i << " must be float32 or float64, got " << dtype_name((*in)[i]);
      return MX_FAIL;
    }
  }
  if ((*in)[0] != (*in)[1]) {
    MX_ERROR_MSG << "mx_gemm: both inputs must have one dtype, got " << dtype_name((*in)[0]) << " and "
                 << dtype_name((*in)[1]);
    return MX_FAIL;
  }
  (*out)[0] = (*in)[0];
  return MX_SUCCESS;
}

static MXReturnValue gemm_infer_shape(const Attrs&, Shapes* in, Shapes* out) {
  const std::vector<unsigned>& a = (*in)[0];
  const std::vector<unsigned>& b = (*in)[1];
  if (a.size() != 2 || b.size() != 2) {
    MX_ERROR_MSG << "mx_gemm: both inputs must be 2-D matrices, got " << a.size() << "-D and " << b.size() << "-D";
    return MX_FAIL;
  }
  if (a[1] != b[0]) {
    MX_ERROR_MSG << "mx_gemm: cannot multiply " << a[0] << "x" << a[1] << " by " << b[0] << "x" << b[1]
                 << " (inner dimensions differ)";
    return MX_FAIL;
  }
  (*out)[0] = {a[0], b[1]};
  return MX_SUCCESS;
}

static MXReturnValue gemm_forward_cpu(const Attrs&, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                                      const OpResource& res) {
  if ((*in)[0].dtype == kFloat64) return gemm_forward<double>(in, out, res, 1.0);
  return gemm_forward<float>(in, out, res, 1.0f);
}

static MXReturnValue gemm_backward_cpu(const Attrs&, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                                       const OpResource& res) {
  if ((*in)[0].dtype == kFloat64) return gemm_backward<double>(in, out, res, 1.0);
  return gemm_backward<float>(in, out, res, 1.0f);
}

REGISTER_OP(mx_gemm)
    .setParseAttrs(gemm_parse)
    .setInferType(gemm_infer_type)
    .setInferShape(gemm_infer_shape)
    .setForward(gemm_forward_cpu, "cpu")
    .setBackward(gemm_backward_cpu, "cpu");

/* ----------------------------------------------------------------------- */
/* mx_state_gemm                                                            */
/* ----------------------------------------------------------------------- */

static std::atomic<int> state_gemm_live{0};
static std::atomic<int> state_gemm_last{-1};

/* Test hooks: instances alive, and the counter after the latest forward call. */
extern "C" __attribute__((visibility("default"))) int mx_state_gemm_live_instances() { return state_gemm_live; }
extern "C" __attribute__((visibility("default"))) int mx_state_gemm_last_count() { return state_gemm_last; }

class StateGemm : public CustomStatefulOp {
 public:
  StateGemm(double scale, int count) : scale_(scale), count_(count) { ++state_gemm_live; }
  ~StateGemm() override { --state_gemm_live; }

  MXReturnValue Forward(std::vector<MXTensor>* in, std::vector<MXTensor>* out, const OpResource& res) override {
    state_gemm_last = ++count_;
    if ((*in)[0].dtype == kFloat64) return gemm_forward<double>(in, out, res, scale_);
    return gemm_forward<float>(in, out, res, static_cast<float>(scale_));
  }

  MXReturnValue Backward(std::vector<MXTensor>* in, std::vector<MXTensor>* out, const OpResource& res) override {
    if ((*in)[0].dtype == kFloat64) return gemm_backward<double>(in, out, res, scale_);
    return gemm_backward<float>(in, out, res, static_cast<float>(scale_));
  }

 private:
  double scale_;
  int count_;
};

static MXReturnValue state_gemm_create(const Attrs& attrs, const MXContext& ctx, const Shapes&,
                                       const std::vector<int>, CustomStatefulOp** op) {
  if (ctx.dev_type != "cpu") {
    MX_ERROR_MSG << "mx_state_gemm: runs on the cpu only, not " << ctx.dev_type;
    return MX_FAIL;
  }
  const std::string scale_text = attr_or(attrs, "scale", "1");
  const std::string count_text = attr_or(attrs, "test_kw", "0");
  char* end = nullptr;
  const double scale = std::strtod(scale_text.c_str(), &end);
  if (scale_text.empty() || *end != '\0') {
    MX_ERROR_MSG << "mx_state_gemm: scale=`" << scale_text << "` is not a number";
    return MX_FAIL;
  }
  const long count = std::strtol(count_text.c_str(), &end, 10);
  if (count_text.empty() || *end != '\0') {
    MX_ERROR_MSG << "mx_state_gemm: test_kw=`" << count_text << "` is not an integer";
    return MX_FAIL;
  }
  *op = CustomStatefulOp::create<StateGemm>(scale, static_cast<int>(count));
  return MX_SUCCESS;
}

REGISTER_OP(mx_state_gemm)
    .setParseAttrs(gemm_parse)
    .setInferType(gemm_infer_type)
    .setInferShape(gemm_infer_shape)
    .setCreateOpState(state_gemm_create, "cpu");

/* ----------------------------------------------------------------------- */
/* Small operators: one input, one output of its shape                      */
/* ----------------------------------------------------------------------- */

static MXReturnValue one_to_one(const Attrs&, int* num_in, int* num_out) {
  *num_in = 1;
  *num_out = 1;
  return MX_SUCCESS;
}

static MXReturnValue same_shape(const Attrs&, Shapes* in, Shapes* out) {
  (*out)[0] = (*in)[0];
  return MX_SUCCESS;
}

static MXReturnValue float32_only(const Attrs&, std::vector<int>* in, std::vector<int>* out) {
  for (size_t i = 0; i < in->size(); ++i) {
    if ((*in)[i] != kFloat32) {
      MX_ERROR_MSG << "input " << i << " must be float32, got " << dtype_name((*in)[i]);
      return MX_FAIL;
    }
  }
  for (int& t : *out) t = kFloat32;
  return MX_SUCCESS;
}

static MXReturnValue same_type(const Attrs&, std::vector<int>* in, std::vector<int>* out) {
  (*out)[0] = (*in)[0];
  return MX_SUCCESS;
}

/* mx_noise: out = x + u, u ~ U[0, 1) from MXNet's per-device CPU generators */
static MXReturnValue noise_forward(const Attrs&, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                                   const OpResource& res) {
  mx_cpu_rand_t* states = res.get_cpu_rand_states();
  if (states == nullptr) {
    MX_ERROR_MSG << "mx_noise: no CPU random states";
    return MX_FAIL;
  }
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  const float* x = (*in)[0].data<float>();
  float* y = (*out)[0].data<float>();
  for (int64_t i = 0; i < (*in)[0].size(); ++i) {
    mx_cpu_rand_t& gen = (i % 2 == 0) ? states[0] : states[MX_NUM_CPU_RANDOM_STATES - 1];
    y[i] = x[i] + uniform(gen);
  }
  return MX_SUCCESS;
}

REGISTER_OP(mx_noise)
    .setParseAttrs(one_to_one)
    .setInferType(float32_only)
    .setInferShape(same_shape)
    .setForward(noise_forward, "cpu");

/* mx_throw: a C++ exception out of the forward */
static MXReturnValue throw_forward(const Attrs&, std::vector<MXTensor>*, std::vector<MXTensor>*, const OpResource&) {
  throw std::runtime_error("mx_throw: boom");
}

REGISTER_OP(mx_throw)
    .setParseAttrs(one_to_one)
    .setInferType(same_type)
    .setInferShape(same_shape)
    .setForward(throw_forward, "cpu");

/* mx_fail: fails in the callback named by `stage` (parse_attrs, infer_shape,
 * infer_type, forward or backward; default forward), logging a message unless
 * silent=1. Where it does not fail it is the identity (gradient: identity). */
static MXReturnValue fail_here(const Attrs& attrs, const char* stage, const char* message) {
  if (attr_or(attrs, "stage", "forward") != stage) return MX_SUCCESS;
  if (attr_or(attrs, "silent", "0") != "1") MX_ERROR_MSG << message;
  return MX_FAIL;
}

static MXReturnValue fail_parse(const Attrs& attrs, int* num_in, int* num_out) {
  *num_in = 1;
  *num_out = 1;
  return fail_here(attrs, "parse_attrs", "mx_fail: bad attributes");
}

static MXReturnValue fail_shape(const Attrs& attrs, Shapes* in, Shapes* out) {
  (*out)[0] = (*in)[0];
  return fail_here(attrs, "infer_shape", "mx_fail: bad shape");
}

static MXReturnValue fail_type(const Attrs& attrs, std::vector<int>* in, std::vector<int>* out) {
  (*out)[0] = (*in)[0];
  return fail_here(attrs, "infer_type", "mx_fail: bad dtype");
}

static int64_t dtype_bytes(int t) {
  switch (t) {
    case kFloat64: case kInt64: return 8;
    case kFloat32: case kInt32: return 4;
    case kFloat16: return 2;
    default: return 1;
  }
}

static void copy_bytes(MXTensor& from, MXTensor& to) {
  std::memcpy(to.data_ptr, from.data_ptr, static_cast<size_t>(from.size() * dtype_bytes(from.dtype)));
}

static MXReturnValue fail_forward(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                                  const OpResource&) {
  if (!fail_here(attrs, "forward", "mx_fail: bad input")) return MX_FAIL;
  copy_bytes((*in)[0], (*out)[0]);
  return MX_SUCCESS;
}

static MXReturnValue fail_backward(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                                   const OpResource&) {
  if (!fail_here(attrs, "backward", "mx_fail: bad gradient")) return MX_FAIL;
  copy_bytes((*in)[0], (*out)[0]);  // inputs: dy, x, y
  return MX_SUCCESS;
}

REGISTER_OP(mx_fail)
    .setParseAttrs(fail_parse)
    .setInferShape(fail_shape)
    .setInferType(fail_type)
    .setForward(fail_forward, "cpu")
    .setBackward(fail_backward, "cpu");

/* mx_accumulate: in1 += in0 in place (a mutated input); out = in0 */
static MXReturnValue accumulate_parse(const Attrs&, int* num_in, int* num_out) {
  *num_in = 2;
  *num_out = 1;
  return MX_SUCCESS;
}

static MXReturnValue accumulate_shape(const Attrs&, Shapes* in, Shapes* out) {
  if ((*in)[0] != (*in)[1]) {
    MX_ERROR_MSG << "mx_accumulate: both inputs must have one shape";
    return MX_FAIL;
  }
  (*out)[0] = (*in)[0];
  return MX_SUCCESS;
}

static MXReturnValue accumulate_mutates(const Attrs&, std::vector<int>* indices) {
  indices->push_back(1);
  return MX_SUCCESS;
}

static MXReturnValue accumulate_forward(const Attrs&, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                                        const OpResource&) {
  const float* x = (*in)[0].data<float>();
  float* acc = (*in)[1].data<float>();
  float* y = (*out)[0].data<float>();
  for (int64_t i = 0; i < (*in)[0].size(); ++i) {
    acc[i] += x[i];
    y[i] = x[i];
  }
  return MX_SUCCESS;
}

REGISTER_OP(mx_accumulate)
    .setParseAttrs(accumulate_parse)
    .setInferType(float32_only)
    .setInferShape(accumulate_shape)
    .setMutateInputs(accumulate_mutates)
    .setForward(accumulate_forward, "cpu");

/* mx_probe: out (float32, 8 values) = [
 *   0: the input is on dev_type "cpu",        1: its dev_id,
 *   2: the input's dtype code,                3: the input's ndim,
 *   4: two workspaces of 100 bytes non-null and disjoint,
 *   5: both 64-byte aligned,                  6: get_cuda_stream() is NULL,
 *   7: the input's DLTensor agrees with the MXTensor (data, ndim, shape) ] */
static MXReturnValue probe_shape(const Attrs&, Shapes*, Shapes* out) {
  (*out)[0] = {8};
  return MX_SUCCESS;
}

static MXReturnValue probe_type(const Attrs&, std::vector<int>*, std::vector<int>* out) {
  (*out)[0] = kFloat32;
  return MX_SUCCESS;
}

static MXReturnValue probe_forward(const Attrs&, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                                   const OpResource& res) {
  MXTensor& x = (*in)[0];
  float* o = (*out)[0].data<float>();
  unsigned char* w1 = static_cast<unsigned char*>(res.alloc_cpu(100));
  unsigned char* w2 = static_cast<unsigned char*>(res.alloc_cpu(100));
  bool disjoint = w1 != nullptr && w2 != nullptr;
  if (disjoint) {
    for (int i = 0; i < 100; ++i) w1[i] = 0x11;
    for (int i = 0; i < 100; ++i) w2[i] = 0x22;
    for (int i = 0; i < 100; ++i) disjoint = disjoint && w1[i] == 0x11 && w2[i] == 0x22;
  }
  const bool aligned =
      reinterpret_cast<uintptr_t>(w1) % 64 == 0 && reinterpret_cast<uintptr_t>(w2) % 64 == 0;
  bool dl = x.dltensor.data == x.data_ptr && x.dltensor.ndim == static_cast<int>(x.shape.size());
  for (size_t i = 0; dl && i < x.shape.size(); ++i) dl = x.dltensor.shape[i] == x.shape[i];
  o[0] = x.ctx.dev_type == "cpu";
  o[1] = static_cast<float>(x.ctx.dev_id);
  o[2] = static_cast<float>(x.dtype);
  o[3] = static_cast<float>(x.shape.size());
  o[4] = disjoint;
  o[5] = aligned;
  o[6] = res.get_cuda_stream() == nullptr;
  o[7] = dl;
  return MX_SUCCESS;
}

REGISTER_OP(mx_probe)
    .setParseAttrs(one_to_one)
    .setInferType(probe_type)
    .setInferShape(probe_shape)
    .setForward(probe_forward, "cpu");

/* ----------------------------------------------------------------------- */
/* Partitioner mx_part                                                      */
/* ----------------------------------------------------------------------- */

/* The operators a subgraph may hold: option `ops` (comma-separated), default mx_gemm and relu. */
static std::set<std::string> wanted_ops(const Attrs& options) {
  std::set<std::string> ops;
  const std::string list = attr_or(options, "ops", "mx_gemm,relu");
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    if (comma > start) ops.insert(list.substr(start, comma - start));
    start = comma + 1;
  }
  return ops;
}

/* Each wanted node: any subgraph (-1); with explicit=1 the subgraph whose id
 * is its node id. Other nodes stay unsupported (-2, as preset). */
static MXReturnValue part_supported(const Graph* graph, std::vector<int>* ids, const Attrs& options) {
  if (attr_or(options, "fail", "0") == "1") {
    MX_ERROR_MSG << "mx_part: asked to fail";
    return MX_FAIL;
  }
  const std::set<std::string> ops = wanted_ops(options);
  const bool explicit_ids = attr_or(options, "explicit", "0") == "1";
  for (size_t i = 0; i < graph->size(); ++i) {
    if (ops.count(graph->getNode(i)->op)) (*ids)[i] = explicit_ids ? static_cast<int>(i) : -1;
  }
  return MX_SUCCESS;
}

/* Accepts (unless reject=1), giving the subgraph node its operator count. */
static MXReturnValue part_review(const Graph* subgraph, int id, bool* accept, const Attrs& options,
                                 Attrs* attrs) {
  if (attr_or(options, "reject", "0") == "1") {
    *accept = false;
    return MX_SUCCESS;
  }
  int ops = 0;
  for (size_t i = 0; i < subgraph->size(); ++i) ops += subgraph->getNode(i)->op != "null";
  *accept = true;
  (*attrs)["mx_num_ops"] = std::to_string(ops);
  (*attrs)["mx_reviewed"] = "mx_part/" + std::to_string(id);
  return MX_SUCCESS;
}

/* Grows from mx_gemm nodes through neighbouring mx_gemm and relu nodes. */
class GemmChain : public CustomOpSelector {
 public:
  explicit GemmChain(const Graph* graph) : graph_(graph) {}
  bool Select(int id) override { return op(id) == "mx_gemm"; }
  bool SelectInput(int, int input_id) override { return chains(input_id); }
  bool SelectOutput(int, int output_id) override { return chains(output_id); }

 private:
  const std::string& op(int id) const { return graph_->getNode(id)->op; }
  bool chains(int id) const { return op(id) == "mx_gemm" || op(id) == "relu"; }
  const Graph* graph_;
};

static MXReturnValue part_selector(const Graph* graph, CustomOpSelector** selector, const Attrs&) {
  *selector = new GemmChain(graph);
  return MX_SUCCESS;
}

REGISTER_PARTITIONER(mx_part)
    .addStrategy("by_op", "_mx_subgraph_op")
    .setSupportedOps("by_op", part_supported)
    .setReviewSubgraph("by_op", part_review)
    .addStrategy("grow", "_mx_subgraph_op")
    .setCreateSelector("grow", part_selector)
    .setReviewSubgraph("grow", part_review);

/* ----------------------------------------------------------------------- */
/* Graph pass mx_tag_pass                                                   */
/* ----------------------------------------------------------------------- */

/* Marks every operator node with mx_tag=<option tag, default "seen">, renames
 * operator `from` to `to` when both options are given; fail=1 fails. */
static MXReturnValue tag_pass(Graph* graph, const Attrs& options) {
  if (attr_or(options, "fail", "0") == "1") {
    MX_ERROR_MSG << "mx_tag_pass: asked to fail";
    return MX_FAIL;
  }
  const std::string tag = attr_or(options, "tag", "seen");
  const std::string from = attr_or(options, "from", "");
  const std::string to = attr_or(options, "to", "");
  for (size_t i = 0; i < graph->size(); ++i) {
    Node* node = graph->getNode(i);
    if (node->op == "null") continue;
    node->attrs["mx_tag"] = tag;
    if (!from.empty() && !to.empty() && node->op == from) node->op = to;
  }
  return MX_SUCCESS;
}

REGISTER_PASS(mx_tag_pass).setBody(tag_pass);

/* ----------------------------------------------------------------------- */

MXReturnValue initialize(int version) {
  if (version >= 10700) return MX_SUCCESS;
  MX_ERROR_MSG << "mx_ops needs MXNet 1.7 or later (version 10700), got " << version;
  return MX_FAIL;
}
