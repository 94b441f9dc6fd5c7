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
/** Number of GPU generator states (reserved: no GPU backend yet). */
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

  /** GPU workspace (NULL: oxnet has no GPU backend yet). */
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

  /** GPU generator states (NULL: no GPU backend yet). */
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


/* ------------------------------------------------------------------------- */
/* Graphs, partitioners and graph passes                                      */
/* ------------------------------------------------------------------------- */
/* Graphs cross the ABI as NNVM graph JSON (see docs/extensions.md, "Graphs
 * across the ABI"); the classes below read and write it. */

/** Kinds of JSON values (the reference's names). Numbers are integers; a
 *  number with a fraction or exponent, `true`, `false` and `null` are kept as
 *  NUM with their text in `str`. */
enum JsonType { ERR, STR, NUM, LIST, MAP };

/** A JSON value: a string, a number, a list or a map. */
struct JsonVal {
  /** An invalid value (ERR). */
  JsonVal() : type(ERR), num(-1) {}
  /** An empty value of type `t`. */
  explicit JsonVal(JsonType t) : type(t), num(-1) {}
  /** A string. */
  explicit JsonVal(std::string s) : type(STR), num(-1), str(std::move(s)) {}
  /** A number. */
  explicit JsonVal(int n) : type(NUM), num(n) {}
  /** A value of type `t` with number `n` and text `s`. */
  JsonVal(JsonType t, int n, std::string s) : type(t), num(n), str(std::move(s)) {}

  /** An order on values (by type, then content), so that they can key a map. */
  bool operator<(const JsonVal& o) const {
    if (type != o.type) return type < o.type;
    switch (type) {
      case STR: return str < o.str;
      case NUM: return num != o.num ? num < o.num : str < o.str;
      case LIST: return list < o.list;
      case MAP: return map < o.map;
      default: return false;
    }
  }

  /** The value as compact JSON text. */
  std::string dump() const {
    std::string out;
    dump_into(out);
    return out;
  }

  /** Parses a whole JSON text; throws std::runtime_error naming the offset of a mistake. */
  static JsonVal parse(const std::string& json) {
    unsigned int idx = 0;
    JsonVal v = parse(json, &idx);
    skip_space(json, &idx);
    if (idx != json.size()) fail_at(json, idx, "unexpected text after the value");
    return v;
  }
  /** Parses the string starting at `*idx` (at its opening quote). */
  static JsonVal parse_string(const std::string& json, unsigned int* idx) {
    JsonVal v(STR);
    ++*idx;  // opening quote
    for (;;) {
      if (*idx >= json.size()) fail_at(json, *idx, "unterminated string");
      char c = json[(*idx)++];
      if (c == '"') return v;
      if (static_cast<unsigned char>(c) < 0x20) fail_at(json, *idx - 1, "control character in a string");
      if (c != '\\') {
        v.str += c;
        continue;
      }
      if (*idx >= json.size()) fail_at(json, *idx, "unterminated string");
      char e = json[(*idx)++];
      switch (e) {
        case '"': v.str += '"'; break;
        case '\\': v.str += '\\'; break;
        case '/': v.str += '/'; break;
        case 'b': v.str += '\b'; break;
        case 'f': v.str += '\f'; break;
        case 'n': v.str += '\n'; break;
        case 'r': v.str += '\r'; break;
        case 't': v.str += '\t'; break;
        case 'u': {
          uint32_t cp = hex4(json, idx);
          if (cp >= 0xd800 && cp < 0xdc00 && *idx + 1 < json.size() && json[*idx] == '\\' && json[*idx + 1] == 'u') {
            *idx += 2;
            uint32_t lo = hex4(json, idx);
            if (lo < 0xdc00 || lo >= 0xe000) fail_at(json, *idx, "unpaired UTF-16 surrogate");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          put_utf8(v.str, cp);
          break;
        }
        default: fail_at(json, *idx - 1, "unknown escape in a string");
      }
    }
  }
  /** Parses the number (or true/false/null) starting at `*idx`. */
  static JsonVal parse_num(const std::string& json, unsigned int* idx) {
    unsigned int start = *idx;
    for (const char* word : {"true", "false", "null"}) {
      if (json.compare(start, strlen(word), word) == 0) {
        *idx += static_cast<unsigned int>(strlen(word));
        return JsonVal(NUM, word[0] == 't' ? 1 : 0, word);
      }
    }
    if (*idx < json.size() && json[*idx] == '-') ++*idx;
    bool integral = true, digits = false;
    while (*idx < json.size()) {
      char c = json[*idx];
      if (c >= '0' && c <= '9') {
        digits = true;
      } else if (c == '.' || c == 'e' || c == 'E' || ((c == '+' || c == '-') && integral == false)) {
        integral = false;
      } else {
        break;
      }
      ++*idx;
    }
    if (!digits) fail_at(json, start, "expected a value");
    std::string text = json.substr(start, *idx - start);
    errno = 0;
    char* end = nullptr;
    long long n = strtoll(text.c_str(), &end, 10);
    if (integral && errno == 0 && end && *end == '\0' && n >= std::numeric_limits<int>::min() &&
        n <= std::numeric_limits<int>::max()) {
      return JsonVal(static_cast<int>(n));
    }
    return JsonVal(NUM, static_cast<int>(strtod(text.c_str(), nullptr)), text);
  }
  /** Parses the list starting at `*idx` (at its '['). */
  static JsonVal parse_list(const std::string& json, unsigned int* idx) {
    JsonVal v(LIST);
    ++*idx;
    skip_space(json, idx);
    if (*idx < json.size() && json[*idx] == ']') {
      ++*idx;
      return v;
    }
    for (;;) {
      v.list.push_back(parse(json, idx));
      skip_space(json, idx);
      if (*idx >= json.size()) fail_at(json, *idx, "unterminated list");
      char c = json[(*idx)++];
      if (c == ']') return v;
      if (c != ',') fail_at(json, *idx - 1, "expected ',' or ']' in a list");
    }
  }
  /** Parses the map starting at `*idx` (at its '{'). */
  static JsonVal parse_map(const std::string& json, unsigned int* idx) {
    JsonVal v(MAP);
    ++*idx;
    skip_space(json, idx);
    if (*idx < json.size() && json[*idx] == '}') {
      ++*idx;
      return v;
    }
    for (;;) {
      skip_space(json, idx);
      if (*idx >= json.size() || json[*idx] != '"') fail_at(json, *idx, "expected a string key in a map");
      JsonVal key = parse_string(json, idx);
      skip_space(json, idx);
      if (*idx >= json.size() || json[*idx] != ':') fail_at(json, *idx, "expected ':' after a map key");
      ++*idx;
      v.map[key] = parse(json, idx);
      skip_space(json, idx);
      if (*idx >= json.size()) fail_at(json, *idx, "unterminated map");
      char c = json[(*idx)++];
      if (c == '}') return v;
      if (c != ',') fail_at(json, *idx - 1, "expected ',' or '}' in a map");
    }
  }
  /** Parses the value starting at `*idx` (after optional spaces). */
  static JsonVal parse(const std::string& json, unsigned int* idx) {
    struct Depth {  // nesting limit: malformed input never overflows the stack
      int& d;
      explicit Depth(int& x) : d(x) { ++d; }
      ~Depth() { --d; }
    };
    thread_local int depth = 0;
    Depth guard(depth);
    if (depth > 256) fail_at(json, *idx, "values nested more than 256 deep");
    skip_space(json, idx);
    if (*idx >= json.size()) fail_at(json, *idx, "expected a value, found the end of the text");
    switch (json[*idx]) {
      case '"': return parse_string(json, idx);
      case '[': return parse_list(json, idx);
      case '{': return parse_map(json, idx);
      default: return parse_num(json, idx);
    }
  }

  /** A readable rendering (for debugging): the JSON text. */
  std::string toString() const { return dump(); }

  /** The kind of value. */
  JsonType type;
  /** The number (NUM). */
  int num;
  /** The text (STR; for NUM, the literal when it is not a plain int). */
  std::string str;
  /** The elements (LIST). */
  std::vector<JsonVal> list;
  /** The entries (MAP; keys are STR values). */
  std::map<JsonVal, JsonVal> map;

 private:
  static void skip_space(const std::string& json, unsigned int* idx) {
    while (*idx < json.size() && (json[*idx] == ' ' || json[*idx] == '\t' || json[*idx] == '\n' || json[*idx] == '\r')) {
      ++*idx;
    }
  }
  [[noreturn]] static void fail_at(const std::string& json, unsigned int idx, const char* what) {
    (void)json;
    throw std::runtime_error("malformed JSON at offset " + std::to_string(idx) + ": " + what);
  }
  static uint32_t hex4(const std::string& json, unsigned int* idx) {
    if (*idx + 4 > json.size()) fail_at(json, *idx, "short \\u escape");
    uint32_t cp = 0;
    for (int i = 0; i < 4; ++i) {
      char h = json[(*idx)++];
      cp <<= 4;
      if (h >= '0' && h <= '9') cp |= static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') cp |= static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') cp |= static_cast<uint32_t>(h - 'A' + 10);
      else fail_at(json, *idx - 1, "bad hex digit in a \\u escape");
    }
    return cp;
  }
  static void put_utf8(std::string& s, uint32_t cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xc0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xe0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      s += static_cast<char>(0xf0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }
  static void quote(std::string& out, const std::string& s) {
    out += '"';
    for (char c : s) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
            out += buf;
          } else {
            out += c;
          }
      }
    }
    out += '"';
  }
  void dump_into(std::string& out) const {
    switch (type) {
      case STR: quote(out, str); break;
      case NUM: out += str.empty() ? std::to_string(num) : str; break;
      case LIST:
        out += '[';
        for (size_t i = 0; i < list.size(); ++i) {
          if (i) out += ", ";
          list[i].dump_into(out);
        }
        out += ']';
        break;
      case MAP: {
        out += '{';
        bool first = true;
        for (const auto& kv : map) {
          if (!first) out += ", ";
          first = false;
          quote(out, kv.first.type == STR ? kv.first.str : kv.first.dump());
          out += ": ";
          kv.second.dump_into(out);
        }
        out += '}';
        break;
      }
      default: out += "null"; break;
    }
  }
};

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

/* ------------------------------------------------------------------------- */
/* The bridge to the C ABI (nothing below is for library authors)             */
/* ------------------------------------------------------------------------- */

#pragma GCC visibility push(hidden)

namespace oxnet {
namespace ext {
namespace detail {

/** Attributes as the reference hands them to callbacks. */
typedef std::unordered_map<std::string, std::string> AttrMap;

/** Per-thread buffers reused from call to call, so that a call allocates
 *  nothing once warm: the attribute map (rebuilt only when the attributes
 *  change) and the tensor lists (their shape vectors keep their capacity). */
struct Scratch {
  bool busy = false;
  bool attrs_valid = false;
  std::vector<std::string> keys, values;
  AttrMap attrs;
  std::vector<MXTensor> ins, outs;
};

/** Lends this thread's Scratch for one callback (a fresh one if it is in use). */
class ScratchLease {
 public:
  ScratchLease() {
    thread_local Scratch shared;
    if (shared.busy) {
      own_.reset(new Scratch());
      s_ = own_.get();
    } else {
      s_ = &shared;
      s_->busy = true;
    }
  }
  ~ScratchLease() {
    if (!own_) s_->busy = false;
  }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  Scratch& operator*() { return *s_; }
  Scratch* operator->() { return s_; }

 private:
  Scratch* s_;
  std::unique_ptr<Scratch> own_;
};

/** The call's attributes as the reference's map (valid while the lease lives). */
inline const AttrMap& attr_map(Scratch& s, const oxnet_ext_attrs* attrs) {
  const int32_t n = (attrs && attrs->count > 0 && attrs->keys && attrs->values) ? attrs->count : 0;
  bool same = s.attrs_valid && s.keys.size() == static_cast<size_t>(n);
  for (int32_t i = 0; same && i < n; ++i) {
    same = attrs->keys[i] && s.keys[i] == attrs->keys[i] && s.values[i] == (attrs->values[i] ? attrs->values[i] : "");
  }
  if (!same) {
    s.attrs_valid = false;
    s.keys.clear();
    s.values.clear();
    s.attrs.clear();
    for (int32_t i = 0; i < n; ++i) {
      if (!attrs->keys[i]) continue;
      s.keys.emplace_back(attrs->keys[i]);
      s.values.emplace_back(attrs->values[i] ? attrs->values[i] : "");
      s.attrs[s.keys.back()] = s.values.back();
    }
    s.attrs_valid = s.keys.size() == static_cast<size_t>(n);
  }
  return s.attrs;
}

/** Runs one user callback: its result, its MX_ERROR_MSG text or an escaping
 *  exception become the call's status and message. Never throws. */
template <typename F>
int32_t guarded(oxnet_ext_error* err, F&& f) noexcept {
  std::string msg;
  try {
    error_messages().clear();
    MXReturnValue r = f();
    if (r == MX_SUCCESS) {
      error_messages().clear();
      return OXNET_EXT_OK;
    }
    msg = take_error_messages();
    if (msg.empty()) msg = std::string("returned MX_FAIL (and wrote no MX_ERROR_MSG saying why)");
  } catch (const std::bad_alloc&) {
    try {
      msg = take_error_messages();
      if (!msg.empty()) msg += "; ";
      msg += "ran out of memory (std::bad_alloc)";
    } catch (...) {
    }
  } catch (const std::exception& e) {
    try {
      msg = take_error_messages();
      if (!msg.empty()) msg += "; ";
      msg += std::string("threw a C++ exception: ") + e.what();
    } catch (...) {
    }
  } catch (...) {
    try {
      msg = take_error_messages();
      if (!msg.empty()) msg += "; ";
      msg += "threw a C++ exception that is not a std::exception";
    } catch (...) {
    }
  }
  oxnet_ext_set_error(err, msg.empty() ? "failed (no memory for the message)" : msg.c_str());
  return OXNET_EXT_FAIL;
}

/** Raised by the bridge for malformed data from the host. */
inline std::runtime_error bridge_error(const std::string& m) { return std::runtime_error(m); }

/** Fills `out` with MXTensors over `n` DLTensors; `req` (may be NULL) gives each one's request. */
inline std::vector<MXTensor>* tensors(std::vector<MXTensor>& out, const DLTensor* ts, int32_t n, const int32_t* req,
                                      const char* what) {
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  if (n <= 0) return &out;
  if (!ts) throw bridge_error(std::string("oxnet passed no ") + what);
  for (int32_t i = 0; i < n; ++i) {
    const DLTensor& t = ts[i];
    MXTensor& m = out[static_cast<size_t>(i)];
    if (t.ndim < 0 || (t.ndim > 0 && !t.shape)) throw bridge_error(std::string(what) + ": malformed tensor");
    m.shape.assign(t.shape, t.shape + t.ndim);
    if (t.strides) {
      int64_t expected = 1;
      for (int32_t d = t.ndim - 1; d >= 0; --d) {
        if (t.shape[d] != 1 && t.strides[d] != expected) {
          throw bridge_error(std::string(what) + " " + std::to_string(i) +
                             " is not contiguous (the reference API needs compact row-major tensors)");
        }
        expected *= t.shape[d];
      }
    }
    m.data_ptr = static_cast<char*>(t.data) + t.byte_offset;
    m.dtype = mx_dtype(t.dtype);
    m.ctx = mx_context(t.device);
    m.verID = 0;
    m.stype = kDefaultStorage;
    m.req = req ? static_cast<MXReqType>(req[i]) : kWriteTo;
    m.setDLTensor();
  }
  return &out;
}

/** Inference shapes in the reference's form: unknown shape -> {}, unknown dim -> 0. */
inline std::vector<std::vector<unsigned int> > ref_shapes(const oxnet_ext_shape* s, int32_t n) {
  std::vector<std::vector<unsigned int> > out(n > 0 ? static_cast<size_t>(n) : 0);
  for (int32_t i = 0; i < n; ++i) {
    if (s[i].ndim < 0) continue;
    if (s[i].ndim > OXNET_EXT_MAX_NDIM) throw bridge_error("malformed shape from oxnet");
    auto& v = out[static_cast<size_t>(i)];
    for (int32_t d = 0; d < s[i].ndim; ++d) {
      int64_t x = s[i].dims[d];
      if (x > static_cast<int64_t>(std::numeric_limits<unsigned int>::max())) {
        throw bridge_error("dimension " + std::to_string(x) + " does not fit the reference API's unsigned int shapes");
      }
      v.push_back(x < 0 ? 0u : static_cast<unsigned int>(x));
    }
  }
  return out;
}

/** Writes a shape the library gave back into the ABI slot `s`. `was` is the slot's
 *  previous value: for inputs, dims still 0 where they were unknown stay unknown. */
inline void put_shape(const std::vector<unsigned int>& v, oxnet_ext_shape& s, bool is_input, const char* what,
                      size_t index) {
  if (v.size() > OXNET_EXT_MAX_NDIM) {
    throw bridge_error(std::string(what) + " " + std::to_string(index) + " has " + std::to_string(v.size()) +
                       " dimensions; oxnet allows at most " + std::to_string(OXNET_EXT_MAX_NDIM));
  }
  if (v.empty()) {
    // the reference has no 0-d shapes: an empty shape is "unknown"
    if (!is_input) s.ndim = -1;
    return;
  }
  oxnet_ext_shape was = s;
  s.ndim = static_cast<int32_t>(v.size());
  for (size_t d = 0; d < v.size(); ++d) {
    bool unknown_before = was.ndim < 0 || static_cast<int32_t>(d) >= was.ndim || was.dims[d] < 0;
    s.dims[d] = (is_input && v[d] == 0 && unknown_before) ? -1 : static_cast<int64_t>(v[d]);
  }
}

inline CustomOp* op_of(void* user) { return static_cast<CustomOp*>(user); }

inline int32_t parse_attrs(void* user, const oxnet_ext_attrs* attrs, int32_t* num_in, int32_t* num_out,
                           oxnet_ext_error* err) {
  return guarded(err, [&]() {
    CustomOp* op = op_of(user);
    ScratchLease s;
    int ni = -1, no = -1;
    MXReturnValue r = op->parse_attrs(attr_map(*s, attrs), &ni, &no);
    *num_in = ni;
    *num_out = no;
    return r;
  });
}

inline int32_t infer_type(void* user, const oxnet_ext_attrs* attrs, int32_t* in_types, int32_t num_in,
                          int32_t* out_types, int32_t num_out, oxnet_ext_error* err) {
  return guarded(err, [&]() {
    CustomOp* op = op_of(user);
    std::vector<int> it(in_types, in_types + num_in), ot(out_types, out_types + num_out);
    if (op->infer_type) {
      ScratchLease s;
      MXReturnValue r = op->infer_type(attr_map(*s, attrs), &it, &ot);
      if (r != MX_SUCCESS) return r;
      if (it.size() != static_cast<size_t>(num_in) || ot.size() != static_cast<size_t>(num_out)) {
        throw bridge_error("inferType resized its type lists (" + std::to_string(num_in) + " inputs and " +
                           std::to_string(num_out) + " outputs expected)");
      }
    } else {
      // default: every unknown dtype is the first known input dtype
      int known = OXNET_EXT_DTYPE_UNKNOWN;
      for (int t : it) {
        if (t != OXNET_EXT_DTYPE_UNKNOWN) {
          known = t;
          break;
        }
      }
      for (int& t : it) t = t == OXNET_EXT_DTYPE_UNKNOWN ? known : t;
      for (int& t : ot) t = t == OXNET_EXT_DTYPE_UNKNOWN ? known : t;
    }
    for (int32_t i = 0; i < num_in; ++i) in_types[i] = it[i] == kUNSET ? OXNET_EXT_DTYPE_UNKNOWN : it[i];
    for (int32_t i = 0; i < num_out; ++i) out_types[i] = ot[i] == kUNSET ? OXNET_EXT_DTYPE_UNKNOWN : ot[i];
    return MX_SUCCESS;
  });
}

inline int32_t infer_shape(void* user, const oxnet_ext_attrs* attrs, oxnet_ext_shape* in_shapes, int32_t num_in,
                           oxnet_ext_shape* out_shapes, int32_t num_out, oxnet_ext_error* err) {
  return guarded(err, [&]() {
    CustomOp* op = op_of(user);
    auto is = ref_shapes(in_shapes, num_in);
    auto os = ref_shapes(out_shapes, num_out);
    auto before = is;
    ScratchLease s;
    MXReturnValue r = op->infer_shape(attr_map(*s, attrs), &is, &os);
    if (r != MX_SUCCESS) return r;
    if (is.size() != static_cast<size_t>(num_in) || os.size() != static_cast<size_t>(num_out)) {
      throw bridge_error("inferShape resized its shape lists (" + std::to_string(num_in) + " inputs and " +
                         std::to_string(num_out) + " outputs expected)");
    }
    for (size_t i = 0; i < is.size(); ++i) {
      if (is[i] != before[i]) put_shape(is[i], in_shapes[i], true, "input", i);
    }
    for (size_t i = 0; i < os.size(); ++i) put_shape(os[i], out_shapes[i], false, "output", i);
    return MX_SUCCESS;
  });
}

inline int32_t mutate_inputs(void* user, const oxnet_ext_attrs* attrs, int32_t* indices, int32_t capacity,
                             int32_t* count, oxnet_ext_error* err) {
  return guarded(err, [&]() {
    std::vector<int> idx;
    ScratchLease s;
    MXReturnValue r = op_of(user)->mutate_inputs(attr_map(*s, attrs), &idx);
    if (r != MX_SUCCESS) return r;
    if (idx.size() > static_cast<size_t>(capacity)) {
      throw bridge_error("mutateInputs listed " + std::to_string(idx.size()) + " indices for " +
                         std::to_string(capacity) + " inputs");
    }
    for (size_t i = 0; i < idx.size(); ++i) indices[i] = idx[i];
    *count = static_cast<int32_t>(idx.size());
    return MX_SUCCESS;
  });
}

/** IEEE half (binary16) bits to float. */
inline float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1fu) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf / nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);  // normal: rebias 15 -> 127
  } else if (mant == 0) {
    bits = sign;  // zero
  } else {
    int shift = 0;  // subnormal: normalise
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      ++shift;
    }
    bits = sign | (static_cast<uint32_t>(113 - shift) << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/** Float to IEEE half bits, rounding to nearest even. */
inline uint16_t float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u);  // nan / inf
  if (abs >= 0x477ff000u) return sign | 0x7c00u;                                  // overflow -> inf
  if (abs < 0x38800000u) {                                                        // subnormal or zero
    if (abs < 0x33000000u) return sign;
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    int shift = 126 - static_cast<int>(abs >> 23);
    uint32_t half = mant >> (shift - 10 + 1);
    uint32_t rest = mant & ((1u << (shift - 10 + 1)) - 1);
    uint32_t mid = 1u << (shift - 10);
    if (rest > mid || (rest == mid && (half & 1u))) ++half;
    return sign | static_cast<uint16_t>(half);
  }
  uint32_t h = ((abs >> 13) - (112u << 10));
  uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return sign | static_cast<uint16_t>(h);
}

/** bfloat16 bits to float. */
inline float bf16_to_float(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/** Float to bfloat16 bits, rounding to nearest even. */
inline uint16_t float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

/** Adds `n` elements of `src` into `dst`, both of MXNet dtype `dtype`. */
inline void add_into(void* dst, const void* src, int64_t n, MXDType dtype) {
  auto add = [&](auto* d, const auto* s) {
    for (int64_t i = 0; i < n; ++i) d[i] = static_cast<std::remove_reference_t<decltype(d[i])>>(d[i] + s[i]);
  };
  auto add16 = [&](float (*to)(uint16_t), uint16_t (*from)(float)) {
    auto* d = static_cast<uint16_t*>(dst);
    auto* s = static_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < n; ++i) d[i] = from(to(d[i]) + to(s[i]));
  };
  switch (dtype) {
    case kFloat32: add(static_cast<float*>(dst), static_cast<const float*>(src)); break;
    case kFloat64: add(static_cast<double*>(dst), static_cast<const double*>(src)); break;
    case kUint8: add(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src)); break;
    case kInt8: add(static_cast<int8_t*>(dst), static_cast<const int8_t*>(src)); break;
    case kInt32: add(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src)); break;
    case kInt64: add(static_cast<int64_t*>(dst), static_cast<const int64_t*>(src)); break;
    case kBool: {
      auto* d = static_cast<uint8_t*>(dst);
      auto* s = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < n; ++i) d[i] = (d[i] || s[i]) ? 1 : 0;
      break;
    }
    case kFloat16: add16(&half_to_float, &float_to_half); break;
    case kBfloat16: add16(&bf16_to_float, &float_to_bf16); break;
    default: throw bridge_error("cannot accumulate (kAddTo) into an output of unknown dtype");
  }
}

/** For kernels that always overwrite (the reference's contract): points each
 *  kAddTo output at scratch memory with kWriteTo, and on `finish` adds the
 *  scratch into the real outputs. */
class AddToEmulation {
 public:
  AddToEmulation(std::vector<MXTensor>& outs, const OpResource& res, bool kernel_handles_add) {
    if (kernel_handles_add) return;
    for (size_t i = 0; i < outs.size(); ++i) {
      MXTensor& t = outs[i];
      if (t.req != kAddTo) continue;
      size_t bytes = static_cast<size_t>(t.size()) * t.dltensor.dtype.bits / 8;
      void* scratch = res.alloc_cpu(bytes > 0 ? bytes : 1);
      pending_.push_back({i, t.data_ptr});
      t.data_ptr = scratch;
      t.req = kWriteTo;
      t.setDLTensor();
    }
  }
  /** Adds the scratch results into the outputs and restores the tensors. */
  void finish(std::vector<MXTensor>& outs) {
    for (const auto& p : pending_) {
      MXTensor& t = outs[p.index];
      add_into(p.real, t.data_ptr, t.size(), t.dtype);
      t.data_ptr = p.real;
      t.req = kAddTo;
      t.setDLTensor();
    }
  }

 private:
  struct Pending {
    size_t index;
    void* real;
  };
  std::vector<Pending> pending_;
};

/** A stateful instance and whether its kernels honour kAddTo themselves. */
struct StateBox {
  CustomStatefulOp* op;
  bool handles_add_to;
};

template <int Slot, bool Backward>
int32_t kernel(void* user, const oxnet_ext_attrs* attrs, const DLTensor* inputs, int32_t num_in,
               const DLTensor* outputs, int32_t num_out, const int32_t* req, const oxnet_ext_resource* res,
               oxnet_ext_error* err) {
  return guarded(err, [&]() {
    CustomOp* op = op_of(user);
    fcomp_t f = Backward ? op->backward_fn[Slot] : op->forward_fn[Slot];
    ScratchLease s;
    std::vector<MXTensor>* ins = tensors(s->ins, inputs, num_in, nullptr, "input");
    std::vector<MXTensor>* outs = tensors(s->outs, outputs, num_out, req, "output");
    OpResource r(res);
    AddToEmulation add_to(*outs, r, op->handles_add_to);
    MXReturnValue ret = f(attr_map(*s, attrs), ins, outs, r);
    if (ret == MX_SUCCESS) add_to.finish(*outs);
    return ret;
  });
}

template <bool Backward>
int32_t state_kernel(void* state, const DLTensor* inputs, int32_t num_in, const DLTensor* outputs,
                     int32_t num_out, const int32_t* req, const oxnet_ext_resource* res, oxnet_ext_error* err) {
  return guarded(err, [&]() {
    StateBox* box = static_cast<StateBox*>(state);
    ScratchLease s;
    std::vector<MXTensor>* ins = tensors(s->ins, inputs, num_in, nullptr, "input");
    std::vector<MXTensor>* outs = tensors(s->outs, outputs, num_out, req, "output");
    OpResource r(res);
    AddToEmulation add_to(*outs, r, box->handles_add_to);
    MXReturnValue ret = Backward ? box->op->Backward(ins, outs, r) : box->op->Forward(ins, outs, r);
    if (ret == MX_SUCCESS) add_to.finish(*outs);
    return ret;
  });
}

inline void destroy_state(void* state) {
  StateBox* box = static_cast<StateBox*>(state);
  delete box->op;
  delete box;
}

template <int Slot>
int32_t create_state(void* user, const oxnet_ext_attrs* attrs, DLDevice device, const oxnet_ext_shape* in_shapes,
                     const int32_t* in_types, int32_t num_in, oxnet_ext_state* out, oxnet_ext_error* err) {
  return guarded(err, [&]() {
    CustomOp* op = op_of(user);
    std::vector<int> types(in_types, in_types + (num_in > 0 ? num_in : 0));
    CustomStatefulOp* inst = nullptr;
    ScratchLease s;
    MXReturnValue r =
        op->create_op_fn[Slot](attr_map(*s, attrs), mx_context(device), ref_shapes(in_shapes, num_in), types, &inst);
    if (r != MX_SUCCESS) {
      delete inst;
      return r;
    }
    if (!inst) throw bridge_error("createOpState returned MX_SUCCESS without creating a CustomStatefulOp");
    out->state = new StateBox{inst, op->handles_add_to};
    out->forward = &state_kernel<false>;
    out->backward = &state_kernel<true>;
    out->destroy = &destroy_state;
    return MX_SUCCESS;
  });
}

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
