/*
 * lib_api.h -- the C++ SDK for oxnet operator libraries (C++17, header-only).
 *
 * It offers the API of the reference system's extension header (MXNet 1.x
 * lib_api.h, seed 004): MXTensor, OpResource, CustomStatefulOp, CustomOp with
 * its setters, REGISTER_OP and an `initialize(int version)` hook, with the
 * same function signatures, so an operator source written for the reference
 * compiles against this header with only its #include line changed. The names
 * live in `oxnet::ext`; `mxnet::ext` is an alias of it, so
 * `using namespace mxnet::ext;` works as with the reference.
 *
 * Underneath, the header implements oxnet's C ABI (oxnet_ext.h): it defines
 * the entry point `oxnet_ext_entry`, which hands oxnet one descriptor per
 * registered operator, and converts between the ABI's DLTensors, shapes and
 * attributes and this API's types. Differences from the reference:
 *   - every output tensor carries its request (`MXTensor::req`: kNullOp,
 *     kWriteTo, kWriteInplace, kAddTo). Kernels written for the reference
 *     always overwrite their outputs; for them the header turns each kAddTo
 *     into a write to scratch memory and adds the result into the output
 *     afterwards, so grad_req='add' accumulates. An operator registered with
 *     setHandlesAddTo() sees kAddTo itself and must honour it by adding
 *     to what the buffer holds, and must leave kNullOp outputs alone;
 *   - errors belong to the call that failed: text written to MX_ERROR_MSG
 *     during a callback, or the message of a C++ exception that escapes it,
 *     becomes that call's error in oxnet (there is no global list). No
 *     exception ever crosses into oxnet;
 *   - `initialize` is optional; it receives MX_LIBRARY_COMPAT_VERSION
 *     (10901: the MXNet release whose library API this header reproduces),
 *     so reference checks such as `version >= 10700` pass unchanged; oxnet's
 *     own version is `oxnet::ext::oxnet_version()`;
 *   - inferType is optional (by default every output takes the dtype of the
 *     first input whose dtype is known);
 *   - tensors are dense (no sparse storage);
 *   - partitioners and graph passes (REGISTER_PARTITIONER, REGISTER_PASS,
 *     Graph, CustomOpSelector, PassResource) read and write graphs as NNVM
 *     JSON; supportedOps starts every id at -2 (not supported) as the
 *     reference does, and the header turns -1 ("any subgraph") into one fresh
 *     subgraph id, as the ABI knows only ids >= 0; oxnet passes no parameter
 *     tensors to them (Node::tensor is NULL unless a pass allocates one);
 *     selector exceptions are logged (their ABI calls carry no error sink).
 *
 * This file holds the operator API; it includes its other parts from
 * lib_api/: json.h (JSON values), graph.h (Graph, partitioners and passes), bridge_ops.h and
 * bridge_graph.h (the translation to the C ABI). Include only this file.
 *
 * Build a library with:  g++ -std=c++17 -shared -fPIC -O2 -I <oxnet>/include my_op.cc -o libmy_op.so
 * (GCC or Clang on ELF or Mach-O platforms.)
 */
#ifndef OXNET_LIB_API_H_
#define OXNET_LIB_API_H_

#if !defined(__cplusplus) || __cplusplus < 201703L
#error "oxnet/lib_api.h needs C++17 (compile with -std=c++17); C authors use oxnet_ext.h"
#endif

#include "oxnet_ext.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <algorithm>
#include <exception>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#if defined(__NVCC__) || defined(__CUDACC__)
#include <cuda_runtime.h>
#include <curand_kernel.h>
#endif

/** Version of this SDK's API (the ABI version it speaks). */
#define OXNET_LIB_API_VERSION OXNET_EXT_ABI_VERSION

/** Number of CPU generators `OpResource::get_cpu_rand_states` hands out: at
 *  least 64 and at least one per hardware thread (the reference has 1024; oxnet
 *  reseeds them on every call that asks for them, so it hands out fewer). Define
 *  it (to a number) before including this header to change it. */
#ifndef MX_NUM_CPU_RANDOM_STATES
#define MX_NUM_CPU_RANDOM_STATES (::oxnet::ext::detail::num_cpu_rand_states())
#endif
/** Number of GPU generator states (kept for source compatibility: oxnet hands out none). */
#define MX_NUM_GPU_RANDOM_STATES 32768

/** Attribute keys the reference reserves (kept for source compatibility). */
#define MX_STR_SUBGRAPH_SYM_JSON "subgraph_sym_json"
#define MX_STR_DTYPE "__ext_dtype__"
#define MX_STR_SHAPE "__ext_shape__"
#define MX_STR_EXTRA_INPUTS "__ext_extra_inputs__"

/* The registry, the per-call error messages and the bridge to the ABI are
 * private to each library (hidden visibility): two libraries built with this
 * header never share a registry. The types authors use (MXTensor,
 * CustomStatefulOp, ...) keep the default visibility, so that classes
 * deriving from them or holding them compile without visibility warnings. */

namespace oxnet {
namespace ext {

/** The MXNet release (major*10000 + minor*100 + patch) whose library API this
 *  header reproduces; `initialize` receives it. */
#define MX_LIBRARY_COMPAT_VERSION 10901

#pragma GCC visibility push(hidden)
namespace detail_version {
inline int& host() {
  static int version = 0;
  return version;
}
}  // namespace detail_version
#pragma GCC visibility pop

/** oxnet's version (major*10000 + minor*100 + patch), known once the host
 *  has started loading the library (0 before). */
inline int oxnet_version() { return detail_version::host(); }

/** Element types, numbered as the reference (and oxnet's ABI) numbers them. */
enum MXDType {
  kFloat32 = 0,
  kFloat64 = 1,
  kFloat16 = 2,
  kUint8 = 3,
  kInt32 = 4,
  kInt8 = 5,
  kInt64 = 6,
  kBool = 7,
  kBfloat16 = 12,
  kUNSET = 100,
};

/** Storage types (oxnet tensors are always kDefaultStorage, dense). */
enum MXStorageType {
  kDefaultStorage = 0,
  kRowSparseStorage = 1,
  kCSRStorage = 2,
};

/** What every user callback returns. */
enum MXReturnValue {
  MX_FAIL = 0,
  MX_SUCCESS = 1,
};

/** How a kernel must store an output (oxnet addition; MXNet's OpReqType names). */
enum MXReqType {
  /** Do not touch the buffer. */
  kNullOp = OXNET_EXT_REQ_NULL,
  /** Overwrite the buffer. */
  kWriteTo = OXNET_EXT_REQ_WRITE,
  /** Overwrite the buffer, which may alias an input. */
  kWriteInplace = OXNET_EXT_REQ_INPLACE,
  /** Add the result to what the buffer holds. */
  kAddTo = OXNET_EXT_REQ_ADD,
};

#pragma GCC visibility push(hidden)
namespace detail {

/** Messages written with MX_ERROR_MSG during the current callback (per thread). */
inline std::vector<std::unique_ptr<std::ostringstream>>& error_messages() {
  thread_local std::vector<std::unique_ptr<std::ostringstream>> messages;
  return messages;
}

/** Starts a new error message of the current callback. */
inline std::ostringstream& new_error_message() {
  auto& messages = error_messages();
  messages.push_back(std::make_unique<std::ostringstream>());
  return *messages.back();
}

/** The current callback's messages, trimmed and joined with "; "; clears them. */
inline std::string take_error_messages() {
  std::string all;
  for (auto& m : error_messages()) {
    std::string s = m->str();
    size_t end = s.find_last_not_of(" \t\r\n");
    size_t begin = s.find_first_not_of(" \t\r\n");
    if (end == std::string::npos) continue;
    if (!all.empty()) all += "; ";
    all += s.substr(begin, end - begin + 1);
  }
  error_messages().clear();
  return all;
}

}  // namespace detail
#pragma GCC visibility pop

/** Writes an error message for the running callback: `MX_ERROR_MSG << "bad shape";`. */
#define MX_ERROR_MSG ::oxnet::ext::detail::new_error_message()

/** Where a tensor lives: "cpu" or "gpu" and the device's ordinal. */
struct MXContext {
  /** An unset context ("error", -1), as the reference's default. */
  MXContext() : dev_type("error"), dev_id(-1) {}
  /** A context of type `dev_type_` ("cpu" or "gpu") and ordinal `dev_id_`. */
  explicit MXContext(std::string dev_type_, int dev_id_) : dev_type(std::move(dev_type_)), dev_id(dev_id_) {}
  /** A context of type `dev_type_` ("cpu" or "gpu") and ordinal `dev_id_`. */
  explicit MXContext(const char* dev_type_, int dev_id_) : dev_type(dev_type_), dev_id(dev_id_) {}
  /** The CPU. */
  static MXContext CPU() { return MXContext("cpu", 0); }
  /** GPU 0. */
  static MXContext GPU() { return MXContext("gpu", 0); }
  /** CPU `dev_id`. */
  static MXContext CPU(int dev_id) { return MXContext("cpu", dev_id); }
  /** GPU `dev_id`. */
  static MXContext GPU(int dev_id) { return MXContext("gpu", dev_id); }

  /** "cpu" or "gpu". */
  std::string dev_type;
  /** The device's ordinal. */
  int dev_id;
};

#pragma GCC visibility push(hidden)
namespace detail {

/** The DLPack type of an MXDType (opaque for kUNSET). */
inline DLDataType dl_dtype(MXDType t) {
  DLDataType d;
  d.lanes = 1;
  switch (t) {
    case kFloat32: d.code = kDLFloat; d.bits = 32; break;
    case kFloat64: d.code = kDLFloat; d.bits = 64; break;
    case kFloat16: d.code = kDLFloat; d.bits = 16; break;
    case kUint8: d.code = kDLUInt; d.bits = 8; break;
    case kInt32: d.code = kDLInt; d.bits = 32; break;
    case kInt8: d.code = kDLInt; d.bits = 8; break;
    case kInt64: d.code = kDLInt; d.bits = 64; break;
    case kBool: d.code = kDLBool; d.bits = 8; break;
    case kBfloat16: d.code = kDLBfloat; d.bits = 16; break;
    default: d.code = kDLOpaqueHandle; d.bits = 8; break;
  }
  return d;
}

/** The MXDType of a DLPack type (kUNSET when the reference API has no name for it). */
inline MXDType mx_dtype(DLDataType d) {
  if (d.lanes != 1) return kUNSET;
  switch (d.code) {
    case kDLFloat:
      return d.bits == 32 ? kFloat32 : d.bits == 64 ? kFloat64 : d.bits == 16 ? kFloat16 : kUNSET;
    case kDLInt:
      return d.bits == 32 ? kInt32 : d.bits == 8 ? kInt8 : d.bits == 64 ? kInt64 : kUNSET;
    case kDLUInt: return d.bits == 8 ? kUint8 : kUNSET;
    case kDLBool: return d.bits == 8 ? kBool : kUNSET;
    case kDLBfloat: return d.bits == 16 ? kBfloat16 : kUNSET;
    default: return kUNSET;
  }
}

/** The context of a DLPack device. */
inline MXContext mx_context(DLDevice dev) {
  switch (dev.device_type) {
    case kDLCPU: return MXContext("cpu", dev.device_id);
    case kDLCUDA: return MXContext("gpu", dev.device_id);
    default: return MXContext("unknown", dev.device_id);
  }
}

}  // namespace detail
#pragma GCC visibility pop

/** A dense tensor handed to a kernel: data pointer, shape, dtype, device, request. */
struct MXTensor {
  /** An empty tensor. */
  MXTensor() : data_ptr(nullptr), dtype(kUNSET), verID(0), stype(kDefaultStorage), req(kWriteTo) {
    setDLTensor();
  }
  /** A copy describing the same memory. */
  MXTensor(const MXTensor& oth)
      : data_ptr(oth.data_ptr), shape(oth.shape), dtype(oth.dtype), verID(oth.verID), ctx(oth.ctx),
        stype(oth.stype), req(oth.req) {
    setDLTensor();
  }
  /** Moves the description (the memory is not owned). */
  MXTensor(MXTensor&& oth) noexcept
      : data_ptr(oth.data_ptr), shape(std::move(oth.shape)), dtype(oth.dtype), verID(oth.verID),
        ctx(std::move(oth.ctx)), stype(oth.stype), req(oth.req) {
    setDLTensor();
  }
  /** A tensor over `data_ptr` with `shape`, `dtype`, version `vID` on `mx_ctx`. */
  MXTensor(void* data_ptr_, std::vector<int64_t> shape_, MXDType dtype_, size_t vID, MXContext mx_ctx,
           MXStorageType stype_ = kDefaultStorage)
      : data_ptr(data_ptr_), shape(std::move(shape_)), dtype(dtype_), verID(vID), ctx(std::move(mx_ctx)),
        stype(stype_), req(kWriteTo) {
    setDLTensor();
  }
  /** Copies the description of `oth`. */
  MXTensor& operator=(const MXTensor& oth) {
    if (this != &oth) {
      data_ptr = oth.data_ptr;
      shape = oth.shape;
      dtype = oth.dtype;
      verID = oth.verID;
      ctx = oth.ctx;
      stype = oth.stype;
      req = oth.req;
      setDLTensor();
    }
    return *this;
  }
  /** Moves the description of `oth`. */
  MXTensor& operator=(MXTensor&& oth) noexcept {
    if (this != &oth) {
      data_ptr = oth.data_ptr;
      shape = std::move(oth.shape);
      dtype = oth.dtype;
      verID = oth.verID;
      ctx = std::move(oth.ctx);
      stype = oth.stype;
      req = oth.req;
      setDLTensor();
    }
    return *this;
  }

  /** Fills every field (and the DLTensor) at once. */
  void setTensor(void* dptr, MXDType type, const int64_t* dims, int ndims, size_t vID, MXContext mx_ctx,
                 MXStorageType storage_type) {
    data_ptr = dptr;
    dtype = type;
    verID = vID;
    ctx = std::move(mx_ctx);
    stype = storage_type;
    shape.assign(dims, dims + (ndims > 0 ? ndims : 0));
    setDLTensor();
  }

  /** Points `dltensor` at this tensor's data and shape (compact row-major: no strides). */
  void setDLTensor() {
    dltensor.data = data_ptr;
    dltensor.device.device_type = ctx.dev_type == "gpu" ? kDLCUDA : kDLCPU;
    dltensor.device.device_id = ctx.dev_id < 0 ? 0 : ctx.dev_id;
    dltensor.ndim = static_cast<int32_t>(shape.size());
    dltensor.dtype = detail::dl_dtype(dtype);
    dltensor.shape = shape.empty() ? nullptr : shape.data();
    dltensor.strides = nullptr;
    dltensor.byte_offset = 0;
  }

  /** The data as `data_type*` (no check: test `dtype` first). */
  template <typename data_type>
  inline data_type* data() {
    return reinterpret_cast<data_type*>(data_ptr);
  }

  /** The data as `const data_type*`. */
  template <typename data_type>
  inline const data_type* data() const {
    return reinterpret_cast<const data_type*>(data_ptr);
  }

  /** Number of elements (the product of the shape; 1 for a 0-d tensor). */
  int64_t size() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }

  /** Same memory, shape, dtype, version, device and storage. */
  bool isSame(const MXTensor& oth) const {
    return data_ptr == oth.data_ptr && dtype == oth.dtype && verID == oth.verID &&
           ctx.dev_type == oth.ctx.dev_type && ctx.dev_id == oth.ctx.dev_id && shape == oth.shape &&
           stype == oth.stype;
  }

  /** The first element (dense, compact, row-major). */
  void* data_ptr;
  /** The extent of each dimension. */
  std::vector<int64_t> shape;
  /** The element type. */
  MXDType dtype;
  /** Version number (oxnet passes 0). */
  size_t verID;
  /** The device holding the data. */
  MXContext ctx;
  /** The same tensor as a DLPack DLTensor (compact: `strides` is NULL). */
  DLTensor dltensor;
  /** Always kDefaultStorage in oxnet. */
  MXStorageType stype;
  /** For outputs of a kernel: how to store the result (inputs: kWriteTo). */
  MXReqType req;
};

/** Device stream type: cudaStream_t under CUDA compilers, else void*. */
#if defined(__NVCC__) || defined(__CUDACC__)
typedef cudaStream_t mx_stream_t;
typedef curandStatePhilox4_32_10_t mx_gpu_rand_t;
#else
typedef void* mx_stream_t;
typedef void* mx_gpu_rand_t;
#endif
/** The CPU random generator type. */
typedef std::mt19937 mx_cpu_rand_t;

#pragma GCC visibility push(hidden)
namespace detail {
/** max(64, hardware threads): the default MX_NUM_CPU_RANDOM_STATES. */
inline int num_cpu_rand_states() {
  static const int n = static_cast<int>(std::max(64u, std::thread::hardware_concurrency()));
  return n;
}
/** A seed sequence filling a generator's whole state from splitmix64 (much
 *  faster than seeding std::mt19937 from one integer). */
struct SplitMixSeq {
  typedef uint32_t result_type;
  uint64_t state;
  template <typename It>
  void generate(It begin, It end) {
    for (; begin != end; ++begin) {
      uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      *begin = static_cast<uint32_t>((z ^ (z >> 31)) >> 32);
    }
  }
  size_t size() const { return 0; }
  template <typename It>
  void param(It) const {}
};
/** This thread's CPU generators (reseeded by each call that asks for them). */
inline std::vector<mx_cpu_rand_t>& thread_rand_states() {
  thread_local std::vector<mx_cpu_rand_t> states(static_cast<size_t>(MX_NUM_CPU_RANDOM_STATES));
  return states;
}
}  // namespace detail
#pragma GCC visibility pop

/** What a kernel may use besides its tensors: workspace, randomness, the device stream. */
class OpResource {
 public:
  /** Wraps the ABI resource of one kernel call (oxnet does this for you). */
  explicit OpResource(const oxnet_ext_resource* res) : res_(res), rand_states_(nullptr) {}

  /** `size` bytes of CPU memory, 64-byte aligned, valid until the kernel returns
   *  (oxnet frees it); each call gives a distinct region. Throws std::bad_alloc
   *  when oxnet cannot provide it (the call then fails with a message). */
  void* alloc_cpu(size_t size) const {
    void* p = (res_ && res_->alloc_cpu) ? res_->alloc_cpu(res_->host_data, static_cast<uint64_t>(size)) : nullptr;
    if (!p) throw std::bad_alloc();
    return p;
  }

  /** `size` bytes of GPU workspace on the call's device, valid until the work queued on
   *  get_cuda_stream() is done (NULL in a CPU call). */
  void* alloc_gpu(size_t size) const {
    return (res_ && res_->alloc_gpu) ? res_->alloc_gpu(res_->host_data, static_cast<uint64_t>(size)) : nullptr;
  }

  /** The CUDA stream of the call (NULL on the CPU). */
  inline mx_stream_t get_cuda_stream() const {
    return res_ ? reinterpret_cast<mx_stream_t>(res_->cuda_stream) : mx_stream_t();
  }

  /** MX_NUM_CPU_RANDOM_STATES generators, seeded (on the first request in this
   *  call) from one seed drawn from oxnet's global generator: reseeding oxnet
   *  repeats the draws. Use `states[i]` with i < MX_NUM_CPU_RANDOM_STATES, from
   *  the calling thread. Seeding costs about half a microsecond per generator;
   *  a kernel needing one generator can seed its own from `random_seed()`. */
  mx_cpu_rand_t* get_cpu_rand_states() const {
    if (!rand_states_) {
      std::vector<mx_cpu_rand_t>& states = detail::thread_rand_states();
      detail::SplitMixSeq seq{random_seed()};
      for (mx_cpu_rand_t& g : states) g.seed(seq);  // consecutive, disjoint parts of one stream
      rand_states_ = states.data();
    }
    return rand_states_;
  }

  /** GPU generator states (NULL: oxnet hands out none yet; draw seeds with the CPU states). */
  inline mx_gpu_rand_t* get_gpu_rand_states() const { return nullptr; }

  /** A fresh 64-bit seed from oxnet's global generator (oxnet addition). */
  uint64_t random_seed() const {
    if (!res_ || !res_->random_seed) throw std::runtime_error("this oxnet offers no random seeds");
    return res_->random_seed(res_->host_data);
  }

  /** True in training mode (oxnet addition). */
  bool is_train() const { return res_ && res_->is_train != 0; }

  /** The ABI resource (oxnet addition). */
  const oxnet_ext_resource* raw() const { return res_; }

 private:
  const oxnet_ext_resource* res_;
  mutable mx_cpu_rand_t* rand_states_;
};

/** A stateful operator instance: derive from it, override Forward (and
 *  Backward), and create one in your createOpState function. oxnet deletes it
 *  when the operator instance dies. */
class CustomStatefulOp {
 public:
  /** A fresh instance. */
  CustomStatefulOp() : ignore_warn(false), created(false) {}
  /** Virtual: oxnet deletes instances through this class. */
  virtual ~CustomStatefulOp() = default;

  /** Creates an `A` from `args` (the reference's recommended way; `new A(...)` works too). */
  template <class A, typename... Ts>
  static CustomStatefulOp* create(Ts&&... args) {
    CustomStatefulOp* op = new A(std::forward<Ts>(args)...);
    op->created = true;
    return op;
  }

  /** Whether `create` made this instance. */
  bool wasCreated() { return created; }

  /** Computes the outputs from the inputs (see fcomp_t). */
  virtual MXReturnValue Forward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                                const OpResource& op_res) = 0;

  /** Computes input gradients: inputs are the output gradients, then the
   *  forward inputs, then the forward outputs; outputs are one gradient per
   *  forward input. By default the operator has no gradient. */
  virtual MXReturnValue Backward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                                 const OpResource& op_res) {
    (void)inputs;
    (void)outputs;
    (void)op_res;
    MX_ERROR_MSG << "this stateful operator does not support backward (override CustomStatefulOp::Backward)";
    return MX_FAIL;
  }

  /** Kept for source compatibility. */
  bool ignore_warn;

 private:
  bool created;
};

/** A kernel: forward (inputs -> outputs) or backward (output gradients,
 *  inputs, outputs -> one gradient per input). */
typedef MXReturnValue (*fcomp_t)(const std::unordered_map<std::string, std::string>& attributes,
                                 std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                                 const OpResource& res);
/** Sets the number of inputs and outputs from the attributes. */
typedef MXReturnValue (*parseAttrs_t)(const std::unordered_map<std::string, std::string>& attributes,
                                      int* num_inputs, int* num_outputs);
/** Fills the output dtypes (MXDType codes; -1 is unknown) and may fill unknown input dtypes. */
typedef MXReturnValue (*inferType_t)(const std::unordered_map<std::string, std::string>& attributes,
                                     std::vector<int>* in_types, std::vector<int>* out_types);
/** Storage type inference (kept for source compatibility; oxnet is dense only and never calls it). */
typedef MXReturnValue (*inferSType_t)(const std::unordered_map<std::string, std::string>& attributes,
                                      std::vector<int>* in_storage_types, std::vector<int>* out_storage_types);
/** Fills the output shapes and may refine input shapes (an empty shape or a 0
 *  dimension of an input means "unknown"). */
typedef MXReturnValue (*inferShape_t)(const std::unordered_map<std::string, std::string>& attributes,
                                      std::vector<std::vector<unsigned int> >* in_shapes,
                                      std::vector<std::vector<unsigned int> >* out_shapes);
/** Lists the inputs the kernels write to (auxiliary states). */
typedef MXReturnValue (*mutateInputs_t)(const std::unordered_map<std::string, std::string>& attributes,
                                        std::vector<int>* input_indices);
/** Creates the state of one operator instance. */
typedef MXReturnValue (*createOpState_t)(const std::unordered_map<std::string, std::string>& attributes,
                                         const MXContext& ctx,
                                         const std::vector<std::vector<unsigned int> >& in_shapes,
                                         const std::vector<int> in_types, CustomStatefulOp**);

/** One operator's registration: built by REGISTER_OP(name) and its setters. */
class CustomOp {
 public:
  /** An operator named `op_name` with nothing set. */
  explicit CustomOp(const char* op_name)
      : name(op_name), parse_attrs(nullptr), infer_type(nullptr), infer_storage_type(nullptr),
        infer_shape(nullptr), mutate_inputs(nullptr), isSGop(false), forward_fn{}, backward_fn{},
        create_op_fn{} {}

  /** Sets the forward kernel for `ctx` ("cpu" or "gpu"). */
  CustomOp& setForward(fcomp_t fcomp, const char* ctx) {
    set_slot(forward_fn, fcomp, ctx, "setForward");
    return *this;
  }
  /** Sets the backward kernel for `ctx` ("cpu" or "gpu"). */
  CustomOp& setBackward(fcomp_t fgrad, const char* ctx) {
    set_slot(backward_fn, fgrad, ctx, "setBackward");
    return *this;
  }
  /** Sets the attribute parser (required). */
  CustomOp& setParseAttrs(parseAttrs_t func) {
    parse_attrs = func;
    return *this;
  }
  /** Sets dtype inference. */
  CustomOp& setInferType(inferType_t func) {
    infer_type = func;
    return *this;
  }
  /** Sets storage type inference (stored, unused: oxnet is dense only). */
  CustomOp& setInferSType(inferSType_t func) {
    infer_storage_type = func;
    return *this;
  }
  /** Sets shape inference (required). */
  CustomOp& setInferShape(inferShape_t func) {
    infer_shape = func;
    return *this;
  }
  /** Sets the mutated-inputs declaration. */
  CustomOp& setMutateInputs(mutateInputs_t func) {
    mutate_inputs = func;
    return *this;
  }
  /** Makes the operator stateful on `ctx` ("cpu" or "gpu"). */
  CustomOp& setCreateOpState(createOpState_t func, const char* ctx) {
    set_slot(create_op_fn, func, ctx, "setCreateOpState");
    return *this;
  }
  /** Marks the operator as a subgraph operator. */
  CustomOp& setIsSubgraphOp() {
    isSGop = true;
    return *this;
  }
  /** Declares that this operator's kernels honour MXTensor::req == kAddTo
   *  themselves (adding into the output). Without it, as in the reference,
   *  kernels always see kWriteTo/kWriteInplace/kNullOp: the header hands a
   *  kernel scratch memory for each kAddTo output and adds it in afterwards. */
  CustomOp& setHandlesAddTo(bool handles = true) {
    handles_add_to = handles;
    return *this;
  }
  /** Kept for source compatibility (nothing to do). */
  void mapToVector() {}

  /** The operator's name. */
  const char* name;
  /** The callbacks set so far. */
  parseAttrs_t parse_attrs;
  inferType_t infer_type;
  inferSType_t infer_storage_type;
  inferShape_t infer_shape;
  mutateInputs_t mutate_inputs;
  /** Whether it is a subgraph operator. */
  bool isSGop;
  /** Whether its kernels honour kAddTo themselves (see setHandlesAddTo). */
  bool handles_add_to = false;
  /** Kernels and state constructors by ABI device slot (OXNET_EXT_SLOT_CPU / _GPU). */
  fcomp_t forward_fn[OXNET_EXT_NUM_DEVICE_SLOTS];
  fcomp_t backward_fn[OXNET_EXT_NUM_DEVICE_SLOTS];
  createOpState_t create_op_fn[OXNET_EXT_NUM_DEVICE_SLOTS];
  /** Mistakes found by the setters; the library's load fails with them. */
  std::string registration_error;

 private:
  template <typename F>
  void set_slot(F* slots, F f, const char* ctx, const char* setter) {
    std::string c = ctx ? ctx : "";
    int slot = c == "cpu" ? OXNET_EXT_SLOT_CPU : c == "gpu" ? OXNET_EXT_SLOT_GPU : -1;
    std::string problem;
    if (slot < 0) {
      problem = std::string(setter) + "(..., \"" + c + "\"): unknown context (use \"cpu\" or \"gpu\")";
    } else if (!f) {
      problem = std::string(setter) + "(NULL, \"" + c + "\"): no function given";
    } else if (slots[slot]) {
      problem = std::string(setter) + " was called twice for \"" + c + "\"";
    } else {
      slots[slot] = f;
      return;
    }
    if (!registration_error.empty()) registration_error += "; ";
    registration_error += problem;
  }
};

#pragma GCC visibility push(hidden)
/** The library's registry of T (operators); one per library. */
template <class T>
class Registry {
 public:
  /** The registry. */
  static Registry* get() {
    static Registry inst;
    return &inst;
  }
  /** Registers a new entry named `name` and returns it (for chained setters). */
  T& add(const char* name) {
    entries.push_back(new T(name));
    return *entries.back();
  }
  /** Number of entries. */
  int size() { return static_cast<int>(entries.size()); }
  /** Entry `idx`. */
  T& get(int idx) { return *entries.at(idx); }

 private:
  Registry() {}
  std::vector<T*> entries;
};
#pragma GCC visibility pop

/** Helpers for REGISTER_OP. */
#define MX_STR_CONCAT_(__a, __b) __a##__b
#define MX_STR_CONCAT(__a, __b) MX_STR_CONCAT_(__a, __b)
#define MX_STRINGIFY(x) #x
#define MX_TOSTRING(x) MX_STRINGIFY(x)
#define MX_REGISTER_NAME_(Name) OxnetCustomOp_##Name
#define MX_REGISTER_DEF_(Name) static ::oxnet::ext::CustomOp MX_REGISTER_NAME_(Name)

/** Registers an operator: `REGISTER_OP(my_op).setParseAttrs(...).setForward(f, "cpu");`. */
#define REGISTER_OP(Name)                              \
  MX_STR_CONCAT(MX_REGISTER_DEF_(Name), __COUNTER__) = \
      ::oxnet::ext::Registry<::oxnet::ext::CustomOp>::get()->add(MX_TOSTRING(Name))

}  // namespace ext
}  // namespace oxnet

#include "lib_api/json.h"
#include "lib_api/graph.h"

/** The reference's namespace: `using namespace mxnet::ext;` works unchanged. */
namespace mxnet {
namespace ext = ::oxnet::ext;
}

/** The library's optional version check. Define it as
 *  `MXReturnValue initialize(int version) { ... }`: it receives
 *  MX_LIBRARY_COMPAT_VERSION (the MXNet version whose API this header
 *  offers, as MXNet passed its own version), and may read
 *  `oxnet::ext::oxnet_version()`; returning MX_FAIL (with MX_ERROR_MSG saying
 *  why) refuses the load. A library that does not define it accepts every
 *  oxnet. */
extern "C" {
__attribute__((weak, visibility("hidden"))) ::oxnet::ext::MXReturnValue initialize(int version);
}

#include "lib_api/bridge_ops.h"
#include "lib_api/bridge_graph.h"

/** The entry point oxnet looks up (emitted once per library even when several
 *  source files include this header). */
extern "C" inline __attribute__((used)) OXNET_EXT_EXPORT const oxnet_ext_library* oxnet_ext_entry(
    const oxnet_ext_host* host) {
  // The host compares its ABI version and struct sizes with the table's and
  // refuses a mismatch with a message naming both, so answer every host.
  ::oxnet::ext::detail::host_table() = host;  // for selectors' log messages
  return ::oxnet::ext::detail::library_table();
}

#endif  // OXNET_LIB_API_H_
