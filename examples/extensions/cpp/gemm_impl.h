/*
 * gemm_impl.h -- the functions of a 2-D matrix product operator, C = A * B,
 * written against the reference extension API (shared by my_gemm.cc and
 * state_gemm.cc, which register them as a stateless and a stateful operator).
 *
 * Inputs: A (n x k) and B (k x m), both float32 or both float64. Output: C (n x m).
 */
#ifndef OXNET_EXAMPLE_GEMM_IMPL_H_
#define OXNET_EXAMPLE_GEMM_IMPL_H_

#include <string>
#include <unordered_map>
#include <vector>

#include "oxnet/lib_api.h"

using namespace mxnet::ext;

/* The name of a dtype code, for error messages. */
static const char* dtype_name(int t) {
  switch (t) {
    case kFloat32: return "float32";
    case kFloat64: return "float64";
    case kFloat16: return "float16";
    case kUint8: return "uint8";
    case kInt32: return "int32";
    case kInt8: return "int8";
    case kInt64: return "int64";
    case kBool: return "bool";
    case kBfloat16: return "bfloat16";
    default: return "an unknown dtype";
  }
}

/* C (n x m) += A (n x k) * B (k x m), all row-major. */
template <typename T>
static void gemm_acc(const T* A, const T* B, T* C, int64_t n, int64_t k, int64_t m) {
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t kk = 0; kk < k; ++kk) {
      const T a = A[i * k + kk];
      for (int64_t j = 0; j < m; ++j) C[i * m + j] += a * B[kk * m + j];
    }
  }
}

/* At (cols x rows) = transpose of A (rows x cols). */
template <typename T>
static void transpose(const T* A, T* At, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) At[j * rows + i] = A[i * cols + j];
  }
}

/* Prepares an output for accumulation according to its request: false when
 * the output must be left alone (kNullOp); zeroes it unless it is kAddTo. */
template <typename T>
static bool begin_output(MXTensor& out) {
  if (out.req == kNullOp) return false;
  if (out.req != kAddTo) {
    T* p = out.data<T>();
    for (int64_t i = 0; i < out.size(); ++i) p[i] = T(0);
  }
  return true;
}

template <typename T>
static void forward_typed(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs) {
  MXTensor& A = (*inputs)[0];
  MXTensor& B = (*inputs)[1];
  MXTensor& C = (*outputs)[0];
  const int64_t n = A.shape[0], k = A.shape[1], m = B.shape[1];
  if (begin_output<T>(C)) gemm_acc(A.data<T>(), B.data<T>(), C.data<T>(), n, k, m);
}

/*
 * Executes C = A * B
 * inputs[0] = A; inputs[1] = B; outputs[0] = C
 */
static MXReturnValue forward(const std::unordered_map<std::string, std::string>& attrs,
                             std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                             const OpResource& res) {
  (void)attrs;
  (void)res;
  if (inputs->size() != 2 || outputs->size() != 1) {
    MX_ERROR_MSG << "my_gemm expects 2 inputs and 1 output";
    return MX_FAIL;
  }
  switch ((*inputs)[0].dtype) {
    case kFloat32: forward_typed<float>(inputs, outputs); return MX_SUCCESS;
    case kFloat64: forward_typed<double>(inputs, outputs); return MX_SUCCESS;
    default:
      MX_ERROR_MSG << "my_gemm supports float32 and float64, got " << dtype_name((*inputs)[0].dtype);
      return MX_FAIL;
  }
}

template <typename T>
static void backward_typed(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs, const OpResource& res) {
  const T* dC = (*inputs)[0].data<T>();
  const T* A = (*inputs)[1].data<T>();
  const T* B = (*inputs)[2].data<T>();
  MXTensor& dA = (*outputs)[0];
  MXTensor& dB = (*outputs)[1];
  const int64_t n = (*inputs)[1].shape[0], k = (*inputs)[1].shape[1], m = (*inputs)[2].shape[1];
  // temporary workspace for both transposes, from oxnet (freed after the call)
  T* At = static_cast<T*>(res.alloc_cpu((k * n + m * k) * sizeof(T)));
  T* Bt = At + k * n;
  transpose(A, At, n, k);
  transpose(B, Bt, k, m);
  if (begin_output<T>(dA)) gemm_acc(dC, Bt, dA.data<T>(), n, m, k);  // dA = dC * B^T
  if (begin_output<T>(dB)) gemm_acc(At, dC, dB.data<T>(), k, n, m);  // dB = A^T * dC
}

/*
 * Executes dA = dC * B^T; dB = A^T * dC
 * gradient inputs:  inputs[0] = dC
 * original inputs:  inputs[1] = A; inputs[2] = B
 * original outputs: inputs[3] = C
 * gradient outputs: outputs[0] = dA; outputs[1] = dB
 */
static MXReturnValue backward(const std::unordered_map<std::string, std::string>& attrs,
                              std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                              const OpResource& res) {
  (void)attrs;
  if (inputs->size() != 4 || outputs->size() != 2) {
    MX_ERROR_MSG << "my_gemm backward expects 4 inputs and 2 outputs";
    return MX_FAIL;
  }
  switch ((*inputs)[0].dtype) {
    case kFloat32: backward_typed<float>(inputs, outputs, res); return MX_SUCCESS;
    case kFloat64: backward_typed<double>(inputs, outputs, res); return MX_SUCCESS;
    default:
      MX_ERROR_MSG << "my_gemm supports float32 and float64, got " << dtype_name((*inputs)[0].dtype);
      return MX_FAIL;
  }
}

static MXReturnValue parseAttrs(const std::unordered_map<std::string, std::string>& attrs, int* num_in,
                                int* num_out) {
  (void)attrs;
  *num_in = 2;
  *num_out = 1;
  return MX_SUCCESS;
}

static MXReturnValue inferType(const std::unordered_map<std::string, std::string>& attrs,
                               std::vector<int>* intypes, std::vector<int>* outtypes) {
  (void)attrs;
  // validate inputs
  if (intypes->size() != 2) {
    MX_ERROR_MSG << "expected 2 inputs, got " << intypes->size();
    return MX_FAIL;
  }
  for (unsigned i = 0; i < intypes->size(); i++) {
    int t = (*intypes)[i];
    if (t != kFloat32 && t != kFloat64) {
      MX_ERROR_MSG << "expected input " << i << " to be float32 or float64, got " << dtype_name(t);
      return MX_FAIL;
    }
  }
  if ((*intypes)[0] != (*intypes)[1]) {
    MX_ERROR_MSG << "expected both inputs to have the same dtype, got " << dtype_name((*intypes)[0]) << " and "
                 << dtype_name((*intypes)[1]);
    return MX_FAIL;
  }
  (*outtypes)[0] = (*intypes)[0];
  return MX_SUCCESS;
}

static MXReturnValue inferShape(const std::unordered_map<std::string, std::string>& attrs,
                                std::vector<std::vector<unsigned int>>* inshapes,
                                std::vector<std::vector<unsigned int>>* outshapes) {
  (void)attrs;
  // validate inputs
  if (inshapes->size() != 2) {
    MX_ERROR_MSG << "expected 2 inputs, got " << inshapes->size();
    return MX_FAIL;
  }
  if ((*inshapes)[0].size() != 2 || (*inshapes)[1].size() != 2) {
    MX_ERROR_MSG << "expected 2-D matrices for both inputs, got " << (*inshapes)[0].size() << "-D and "
                 << (*inshapes)[1].size() << "-D";
    return MX_FAIL;
  }
  unsigned n = (*inshapes)[0][0];
  unsigned k = (*inshapes)[0][1];
  unsigned kk = (*inshapes)[1][0];
  unsigned m = (*inshapes)[1][1];
  if (k != kk) {
    MX_ERROR_MSG << "expected axis 1 of the first input (" << k << ") to equal axis 0 of the second (" << kk << ")";
    return MX_FAIL;
  }
  (*outshapes)[0] = {n, m};
  return MX_SUCCESS;
}

#endif  // OXNET_EXAMPLE_GEMM_IMPL_H_
