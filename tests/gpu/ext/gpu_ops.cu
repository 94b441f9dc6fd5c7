/*
 * Operators with CPU and GPU kernels, written against MXNet's extension API
 * as an MXNet user would (seed 004: REGISTER_OP, setForward(f, "gpu"),
 * OpResource::get_cuda_stream, alloc_gpu, stateful operators).
 *
 * tests/python/test_gpu_library.py compiles this one source twice with nvcc:
 *   - against oxnet's SDK:      -I include/oxnet           (oxnet's own ABI)
 *   - against MXNet 1.9.1's:    -I target/mxnet-sdk/include/mxnet plus lib_api.cc
 *                                                          (MXNet's ABI, loaded unchanged)
 * and checks both on a GPU against numpy.
 *
 * Operator names start with GPU_OPS_PREFIX (`ox` unless defined otherwise), so
 * that both builds can be loaded into one process: ox_scaled_relu, ...
 *
 * scaled_relu(x, alpha): y = alpha * max(x, 0); dx = alpha * (x > 0) * dy.
 *   The GPU forward computes into workspace from alloc_gpu and copies it to
 *   the output on the call's stream (so the workspace is exercised).
 * state_scale(x, scale): stateful, y = scale * x, on "cpu" and "gpu";
 *   each instance counts its forward calls and records the device it was
 *   created for (test hooks below).
 * relu(x): y = max(x, 0), one kernel launch (bench/gpu.py times its per-call
 *   cost against the built-in relu).
 * fail(x): its GPU forward fails with a message.
 */
#include <cstdlib>
#include <string>

#include "lib_api.h"

using namespace mxnet::ext;

#ifndef GPU_OPS_PREFIX
#define GPU_OPS_PREFIX ox
#endif
#define GPU_OPS_CAT_(a, b) a##_##b
#define GPU_OPS_CAT(a, b) GPU_OPS_CAT_(a, b)
/* The registered name of operator `name`: GPU_OPS_PREFIX_name. */
#define OP(name) GPU_OPS_CAT(GPU_OPS_PREFIX, name)

typedef std::unordered_map<std::string, std::string> Attrs;
typedef std::vector<std::vector<unsigned int>> Shapes;

/* ---------------------------------------------------------------------- */
/* Shared pieces: one float32 input, one output of its shape               */
/* ---------------------------------------------------------------------- */

static float attr_float(const Attrs& attrs, const char* key, float fallback) {
  auto it = attrs.find(key);
  return it == attrs.end() ? fallback : std::strtof(it->second.c_str(), nullptr);
}

static MXReturnValue one_in_one_out(const Attrs&, int* num_in, int* num_out) {
  *num_in = 1;
  *num_out = 1;
  return MX_SUCCESS;
}

static MXReturnValue float32_only(const Attrs&, std::vector<int>* in, std::vector<int>* out) {
  if ((*in)[0] != kFloat32) {
    MX_ERROR_MSG << "the input must be float32";
    return MX_FAIL;
  }
  (*out)[0] = kFloat32;
  return MX_SUCCESS;
}

static MXReturnValue same_shape(const Attrs&, Shapes* in, Shapes* out) {
  (*out)[0] = (*in)[0];
  return MX_SUCCESS;
}

static int64_t numel(const MXTensor& t) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  return n;
}

static unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + 255) / 256); }

/* ---------------------------------------------------------------------- */
/* scaled_relu                                                        */
/* ---------------------------------------------------------------------- */

__global__ void scaled_relu_kernel(const float* x, float* y, float alpha, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? alpha * x[i] : 0.f;
}

__global__ void scaled_relu_grad_kernel(const float* dy, const float* x, float* dx, float alpha, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) dx[i] = x[i] > 0.f ? alpha * dy[i] : 0.f;
}

static MXReturnValue relu_forward_cpu(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                                      const OpResource&) {
  const float alpha = attr_float(attrs, "alpha", 1.f);
  const float* x = (*in)[0].data<float>();
  float* y = (*out)[0].data<float>();
  for (int64_t i = 0, n = numel((*in)[0]); i < n; ++i) y[i] = x[i] > 0.f ? alpha * x[i] : 0.f;
  return MX_SUCCESS;
}

static MXReturnValue relu_backward_cpu(const Attrs& attrs, std::vector<MXTensor>* in,
                                       std::vector<MXTensor>* out, const OpResource&) {
  const float alpha = attr_float(attrs, "alpha", 1.f);
  const float* dy = (*in)[0].data<float>();
  const float* x = (*in)[1].data<float>();
  float* dx = (*out)[0].data<float>();
  for (int64_t i = 0, n = numel((*in)[1]); i < n; ++i) dx[i] = x[i] > 0.f ? alpha * dy[i] : 0.f;
  return MX_SUCCESS;
}

static MXReturnValue relu_forward_gpu(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                                      const OpResource& res) {
  if ((*in)[0].ctx.dev_type != "gpu" || (*out)[0].ctx.dev_type != "gpu") {
    MX_ERROR_MSG << "scaled_relu: the GPU kernel got tensors on " << (*in)[0].ctx.dev_type;
    return MX_FAIL;
  }
  const int64_t n = numel((*in)[0]);
  if (n == 0) return MX_SUCCESS;
  mx_stream_t stream = res.get_cuda_stream();
  float* scratch = static_cast<float*>(res.alloc_gpu(static_cast<int>(n * sizeof(float))));
  if (scratch == nullptr) {
    MX_ERROR_MSG << "scaled_relu: alloc_gpu gave no workspace";
    return MX_FAIL;
  }
  scaled_relu_kernel<<<blocks_for(n), 256, 0, stream>>>((*in)[0].data<float>(), scratch,
                                                        attr_float(attrs, "alpha", 1.f), n);
  cudaMemcpyAsync((*out)[0].data<float>(), scratch, n * sizeof(float), cudaMemcpyDeviceToDevice, stream);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    MX_ERROR_MSG << "scaled_relu: " << cudaGetErrorString(e);
    return MX_FAIL;
  }
  return MX_SUCCESS;
}

static MXReturnValue relu_backward_gpu(const Attrs& attrs, std::vector<MXTensor>* in,
                                       std::vector<MXTensor>* out, const OpResource& res) {
  const int64_t n = numel((*in)[1]);
  if (n == 0) return MX_SUCCESS;
  scaled_relu_grad_kernel<<<blocks_for(n), 256, 0, res.get_cuda_stream()>>>(
      (*in)[0].data<float>(), (*in)[1].data<float>(), (*out)[0].data<float>(), attr_float(attrs, "alpha", 1.f), n);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    MX_ERROR_MSG << "scaled_relu backward: " << cudaGetErrorString(e);
    return MX_FAIL;
  }
  return MX_SUCCESS;
}

REGISTER_OP(OP(scaled_relu))
    .setParseAttrs(one_in_one_out)
    .setInferType(float32_only)
    .setInferShape(same_shape)
    .setForward(relu_forward_cpu, "cpu")
    .setForward(relu_forward_gpu, "gpu")
    .setBackward(relu_backward_cpu, "cpu")
    .setBackward(relu_backward_gpu, "gpu");

/* ---------------------------------------------------------------------- */
/* relu                                                                   */
/* ---------------------------------------------------------------------- */

static MXReturnValue plain_relu_cpu(const Attrs&, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                                    const OpResource& res) {
  return relu_forward_cpu(Attrs(), in, out, res);
}

static MXReturnValue plain_relu_gpu(const Attrs&, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                                    const OpResource& res) {
  const int64_t n = numel((*in)[0]);
  if (n > 0)
    scaled_relu_kernel<<<blocks_for(n), 256, 0, res.get_cuda_stream()>>>((*in)[0].data<float>(),
                                                                          (*out)[0].data<float>(), 1.f, n);
  return MX_SUCCESS;
}

REGISTER_OP(OP(relu))
    .setParseAttrs(one_in_one_out)
    .setInferType(float32_only)
    .setInferShape(same_shape)
    .setForward(plain_relu_cpu, "cpu")
    .setForward(plain_relu_gpu, "gpu");

/* ---------------------------------------------------------------------- */
/* state_scale                                                        */
/* ---------------------------------------------------------------------- */

static int state_forward_calls = 0;
static int state_last_device = -1; /* 0: cpu, 1: gpu */

/* Test hooks: forward calls of all instances, and the device of the latest instance. */
extern "C" __attribute__((visibility("default"))) int gpu_state_forward_calls() { return state_forward_calls; }
extern "C" __attribute__((visibility("default"))) int gpu_state_last_device() { return state_last_device; }

__global__ void scale_kernel(const float* x, float* y, float scale, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = scale * x[i];
}

class StateScale : public CustomStatefulOp {
 public:
  StateScale(float scale, bool gpu) : scale_(scale), gpu_(gpu) {}

  MXReturnValue Forward(std::vector<MXTensor>* in, std::vector<MXTensor>* out, const OpResource& res) override {
    ++state_forward_calls;
    return scale((*in)[0], (*out)[0], res);
  }

  MXReturnValue Backward(std::vector<MXTensor>* in, std::vector<MXTensor>* out, const OpResource& res) override {
    return scale((*in)[0], (*out)[0], res);
  }

 private:
  MXReturnValue scale(MXTensor& x, MXTensor& y, const OpResource& res) {
    const int64_t n = numel(x);
    if (gpu_ != (x.ctx.dev_type == "gpu")) {
      MX_ERROR_MSG << "state_scale: an instance made for " << (gpu_ ? "gpu" : "cpu") << " got tensors on "
                   << x.ctx.dev_type;
      return MX_FAIL;
    }
    if (gpu_) {
      if (n > 0) scale_kernel<<<blocks_for(n), 256, 0, res.get_cuda_stream()>>>(x.data<float>(), y.data<float>(),
                                                                                  scale_, n);
      return cudaGetLastError() == cudaSuccess ? MX_SUCCESS : MX_FAIL;
    }
    for (int64_t i = 0; i < n; ++i) y.data<float>()[i] = scale_ * x.data<float>()[i];
    return MX_SUCCESS;
  }

  float scale_;
  bool gpu_;
};

static MXReturnValue state_create(const Attrs& attrs, const MXContext& ctx, const Shapes&, const std::vector<int>,
                                  CustomStatefulOp** op) {
  state_last_device = ctx.dev_type == "gpu" ? 1 : 0;
  *op = CustomStatefulOp::create<StateScale>(attr_float(attrs, "scale", 1.f), ctx.dev_type == "gpu");
  return MX_SUCCESS;
}

REGISTER_OP(OP(state_scale))
    .setParseAttrs(one_in_one_out)
    .setInferType(float32_only)
    .setInferShape(same_shape)
    .setCreateOpState(state_create, "cpu")
    .setCreateOpState(state_create, "gpu");

/* ---------------------------------------------------------------------- */
/* fail                                                               */
/* ---------------------------------------------------------------------- */

static MXReturnValue fail_forward_gpu(const Attrs&, std::vector<MXTensor>*, std::vector<MXTensor>*,
                                      const OpResource&) {
  MX_ERROR_MSG << "fail: refused on purpose";
  return MX_FAIL;
}

REGISTER_OP(OP(fail))
    .setParseAttrs(one_in_one_out)
    .setInferType(float32_only)
    .setInferShape(same_shape)
    .setForward(fail_forward_gpu, "gpu");

MXReturnValue initialize(int version) {
  if (version >= 10700) return MX_SUCCESS;
  MX_ERROR_MSG << "gpu_ops needs MXNet 1.7 or later, got " << version;
  return MX_FAIL;
}
