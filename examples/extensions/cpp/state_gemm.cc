/*
 * state_gemm.cc -- a stateful 2-D matrix product operator for oxnet, written
 * in the style of the reference system's extension examples (seed 004).
 *
 * Each operator instance is a MyStatefulGemm: it starts its forward counter at
 * the `test_kw` attribute (default 0) and adds one per forward call. The
 * counter is visible to tests through two C functions this library exports.
 *
 * Build:  g++ -std=c++17 -shared -fPIC -O2 -I ../../../include state_gemm.cc -o libstate_gemm.so
 */
#include <atomic>
#include <iostream>
#include <string>

#include "gemm_impl.h"

static std::atomic<int> live_instances{0};
static std::atomic<int> last_count{-1};

/* Number of MyStatefulGemm instances alive (test hook). */
extern "C" __attribute__((visibility("default"))) int state_gemm_live_instances() { return live_instances.load(); }
/* The counter after the latest forward call of any instance (test hook). */
extern "C" __attribute__((visibility("default"))) int state_gemm_last_count() { return last_count.load(); }

class MyStatefulGemm : public CustomStatefulOp {
 public:
  explicit MyStatefulGemm(int count, const std::unordered_map<std::string, std::string>& attrs)
      : count(count), attrs_(attrs) {
    ++live_instances;
  }

  MXReturnValue Forward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                        const OpResource& op_res) override {
    last_count = ++count;
    if ((*inputs)[0].ctx.dev_type != "cpu") {
      MX_ERROR_MSG << "state_gemm: Forward is not implemented for " << (*inputs)[0].ctx.dev_type;
      return MX_FAIL;
    }
    return forward(attrs_, inputs, outputs, op_res);
  }

  MXReturnValue Backward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                         const OpResource& op_res) override {
    return backward(attrs_, inputs, outputs, op_res);
  }

  ~MyStatefulGemm() override { --live_instances; }

 private:
  int count;
  const std::unordered_map<std::string, std::string> attrs_;
};

static MXReturnValue createOpState(const std::unordered_map<std::string, std::string>& attrs,
                                   const MXContext& ctx, const std::vector<std::vector<unsigned int>>& in_shapes,
                                   const std::vector<int> in_types, CustomStatefulOp** op_inst) {
  (void)ctx;
  (void)in_shapes;
  (void)in_types;
  // reads the keyword argument; a malformed value is the caller's error
  int count = 0;
  auto kw = attrs.find("test_kw");
  if (kw != attrs.end()) {
    try {
      size_t used = 0;
      count = std::stoi(kw->second, &used);
      if (used != kw->second.size()) throw std::invalid_argument("trailing characters");
    } catch (const std::exception&) {
      MX_ERROR_MSG << "state_gemm: test_kw=`" << kw->second << "` is not an integer";
      return MX_FAIL;
    }
  }
  // creating the stateful operator instance
  *op_inst = CustomStatefulOp::create<MyStatefulGemm>(count, attrs);
  return MX_SUCCESS;
}

static MXReturnValue mutateInputs(const std::unordered_map<std::string, std::string>& attrs,
                                  std::vector<int>* input_indices) {
  (void)attrs;
  (void)input_indices;  // input_indices->push_back(1) would mark input 1 as mutated
  return MX_SUCCESS;
}

REGISTER_OP(state_gemm)
    .setParseAttrs(parseAttrs)
    .setInferType(inferType)
    .setInferShape(inferShape)
    .setMutateInputs(mutateInputs)
    .setCreateOpState(createOpState, "cpu")
    .setHandlesAddTo();  // the kernels add into kAddTo outputs themselves (gemm_impl.h)
