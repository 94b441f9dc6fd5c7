/*
 * A gemm operator and a stateful gemm written exactly as for MXNet 1.9's
 * library API (seed 004): it includes "lib_api.h" and uses nothing that
 * MXNet's header lacks. Built with `-I include/oxnet` it uses oxnet's
 * header; built with `-I <mxnet>/include/mxnet` it is an MXNet library
 * source. The oxnet test suite compiles it both ways (the second only
 * when the mxnet wheel is installed).
 *
 *   g++ -std=c++17 -shared -fPIC -O2 -I include/oxnet \
 *       examples/extensions/cpp/reference_style/gemm_lib.cc -o libgemm_lib.so
 */
#include <cstring>
#include <iostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib_api.h"

using namespace mxnet::ext;

// C[n,m] = A[n,k] * B[k,m]
static void gemm(const float* A, const float* B, float* C, unsigned n, unsigned k, unsigned m) {
  for (unsigned i = 0; i < n; i++) {
    for (unsigned j = 0; j < m; j++) {
      float sum = 0;
      for (unsigned l = 0; l < k; l++) sum += A[i * k + l] * B[l * m + j];
      C[i * m + j] = sum;
    }
  }
}

// At[k,n] = A[n,k]^T
static void transpose(const float* A, float* At, unsigned n, unsigned k) {
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = 0; j < k; j++) At[j * n + i] = A[i * k + j];
}

MXReturnValue forward(const std::unordered_map<std::string, std::string>& attrs,
                      std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                      const OpResource& res) {
  float* A = inputs->at(0).data<float>();
  float* B = inputs->at(1).data<float>();
  float* C = outputs->at(0).data<float>();
  unsigned n = inputs->at(0).shape[0];
  unsigned k = inputs->at(0).shape[1];
  unsigned m = inputs->at(1).shape[1];
  gemm(A, B, C, n, k, m);
  return MX_SUCCESS;
}

// inputs: dC, A, B (out_grads, then inputs); outputs: dA, dB
MXReturnValue backward(const std::unordered_map<std::string, std::string>& attrs,
                       std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                       const OpResource& res) {
  float* dC = inputs->at(0).data<float>();
  float* A = inputs->at(1).data<float>();
  float* B = inputs->at(2).data<float>();
  float* dA = outputs->at(0).data<float>();
  float* dB = outputs->at(1).data<float>();
  unsigned n = inputs->at(1).shape[0];
  unsigned k = inputs->at(1).shape[1];
  unsigned m = inputs->at(2).shape[1];
  // scratch space for the transposes, from the engine
  float* At = static_cast<float*>(res.alloc_cpu(n * k * sizeof(float)));
  float* Bt = static_cast<float*>(res.alloc_cpu(k * m * sizeof(float)));
  transpose(A, At, n, k);
  transpose(B, Bt, k, m);
  gemm(dC, Bt, dA, n, m, k);
  gemm(At, dC, dB, k, n, m);
  return MX_SUCCESS;
}

MXReturnValue parseAttrs(const std::unordered_map<std::string, std::string>& attrs,
                         int* num_in, int* num_out) {
  *num_in = 2;
  *num_out = 1;
  return MX_SUCCESS;
}

MXReturnValue inferType(const std::unordered_map<std::string, std::string>& attrs,
                        std::vector<int>* intypes, std::vector<int>* outtypes) {
  for (unsigned i = 0; i < intypes->size(); i++) {
    if (intypes->at(i) != kFloat32) {
      MX_ERROR_MSG << "gemm: input " << i << " must be float32, got type code " << intypes->at(i);
      return MX_FAIL;
    }
  }
  outtypes->at(0) = intypes->at(0);
  return MX_SUCCESS;
}

MXReturnValue inferShape(const std::unordered_map<std::string, std::string>& attrs,
                         std::vector<std::vector<unsigned int>>* inshapes,
                         std::vector<std::vector<unsigned int>>* outshapes) {
  if (inshapes->at(0).size() != 2 || inshapes->at(1).size() != 2) {
    MX_ERROR_MSG << "gemm: both inputs must be matrices";
    return MX_FAIL;
  }
  unsigned n = inshapes->at(0)[0];
  unsigned k = inshapes->at(0)[1];
  unsigned kk = inshapes->at(1)[0];
  unsigned m = inshapes->at(1)[1];
  if (k != kk) {
    MX_ERROR_MSG << "gemm: the inner dimensions differ (" << k << " and " << kk << ")";
    return MX_FAIL;
  }
  outshapes->at(0) = {n, m};
  return MX_SUCCESS;
}

REGISTER_OP(ref_gemm)
.setForward(forward, "cpu")
.setBackward(backward, "cpu")
.setParseAttrs(parseAttrs)
.setInferType(inferType)
.setInferShape(inferShape);

/* ref_copy: y = x for any dtype; its gradient passes the output gradient
 * through. Like every reference kernel it overwrites its outputs. */
static size_t bytes_of(const MXTensor& t) {
  static const size_t sizes[] = {4, 8, 2, 1, 4, 1, 8, 1};  // kFloat32 ... kBool
  size_t elem = t.dtype == 12 /* bfloat16, which this API version does not name */ ? 2 : sizes[t.dtype];
  return t.size() * elem;
}

MXReturnValue copyForward(const std::unordered_map<std::string, std::string>& attrs,
                          std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                          const OpResource& res) {
  memcpy(outputs->at(0).data_ptr, inputs->at(0).data_ptr, bytes_of(inputs->at(0)));
  return MX_SUCCESS;
}

MXReturnValue copyParseAttrs(const std::unordered_map<std::string, std::string>& attrs,
                             int* num_in, int* num_out) {
  *num_in = 1;
  *num_out = 1;
  return MX_SUCCESS;
}

MXReturnValue copyInferType(const std::unordered_map<std::string, std::string>& attrs,
                            std::vector<int>* intypes, std::vector<int>* outtypes) {
  outtypes->at(0) = intypes->at(0);
  return MX_SUCCESS;
}

MXReturnValue copyInferShape(const std::unordered_map<std::string, std::string>& attrs,
                             std::vector<std::vector<unsigned int>>* inshapes,
                             std::vector<std::vector<unsigned int>>* outshapes) {
  outshapes->at(0) = inshapes->at(0);
  return MX_SUCCESS;
}

REGISTER_OP(ref_copy)
.setForward(copyForward, "cpu")
.setBackward(copyForward, "cpu")
.setParseAttrs(copyParseAttrs)
.setInferType(copyInferType)
.setInferShape(copyInferShape);

/* The stateful version: counts its forward calls, starting from `test_kw`. */
class MyStatefulGemm : public CustomStatefulOp {
 public:
  explicit MyStatefulGemm(int count, const std::unordered_map<std::string, std::string>& attrs)
    : count(count), attrs_(attrs) {}

  MXReturnValue Forward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                        const OpResource& op_res) override {
    ++count;
    return forward(attrs_, inputs, outputs, op_res);
  }

  MXReturnValue Backward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                         const OpResource& op_res) override {
    return backward(attrs_, inputs, outputs, op_res);
  }

 private:
  int count;
  const std::unordered_map<std::string, std::string> attrs_;
};

MXReturnValue createOpState(const std::unordered_map<std::string, std::string>& attrs,
                            const MXContext& ctx,
                            const std::vector<std::vector<unsigned int> >& in_shapes,
                            const std::vector<int> in_types,
                            CustomStatefulOp** op_inst) {
  int count = 0;
  if (attrs.count("test_kw") > 0) count = std::stoi(attrs.at("test_kw"));
  *op_inst = new MyStatefulGemm(count, attrs);
  return MX_SUCCESS;
}

REGISTER_OP(ref_state_gemm)
.setParseAttrs(parseAttrs)
.setInferType(inferType)
.setInferShape(inferShape)
.setCreateOpState(createOpState, "cpu");

MXReturnValue initialize(int version) {
  if (version >= 10700) {
    return MX_SUCCESS;
  } else {
    MX_ERROR_MSG << "MXNet version " << version << " not supported";
    return MX_FAIL;
  }
}
