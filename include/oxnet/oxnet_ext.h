/*
 * oxnet_ext.h -- the C ABI between oxnet and operator libraries loaded at run time.
 *
 * A library is a shared object (.so / .dylib / .dll) that exports one function,
 * `oxnet_ext_entry`. The host (oxnet) calls it with its own table and receives the
 * library's table: the ABI version, the struct sizes the library was compiled with,
 * an `initialize` hook, and the descriptors of its operators, partitioners and
 * graph passes. The host refuses a library whose version or sizes differ from its own.
 *
 * Conventions (every callback):
 *   - returns OXNET_EXT_OK (0) on success, anything else on failure;
 *   - on failure, reports its message through the `oxnet_ext_error` it received
 *     (the host copies the text; there is no global error list);
 *   - never lets a C++ exception, a Rust panic or a longjmp cross the boundary;
 *   - memory belongs to the side that allocated it: the host frees what it
 *     allocates (workspace, tensors, arrays it passes), the library frees what it
 *     allocates (its tables, its state objects, through their `destroy`).
 *   - `user_data` is the pointer the library put in the descriptor, passed back as is.
 *
 * Tensors cross as DLPack `DLTensor`s (the struct definitions below follow the
 * DLPack 0.8 / 1.x layout and are skipped when dlpack.h was included first).
 * Data types in inference callbacks use the OXNET_EXT_DTYPE_* codes (MXNet's numbering).
 *
 * This header is plain C99 and also compiles as C++. The Rust mirror is the
 * `oxnet-abi` crate; the C++ SDK (lib_api.h) is built on top of this header.
 */
#ifndef OXNET_EXT_H_
#define OXNET_EXT_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------- */
/* Version and limits                                                         */
/* ------------------------------------------------------------------------- */

/** The ABI version this header describes. Host and library must agree exactly. */
#define OXNET_EXT_ABI_VERSION 1

/** The most dimensions a shape may have in shape inference. */
#define OXNET_EXT_MAX_NDIM 32

/** Number of device slots in an operator descriptor's kernel arrays. */
#define OXNET_EXT_NUM_DEVICE_SLOTS 2
/** Slot of CPU kernels. */
#define OXNET_EXT_SLOT_CPU 0
/** Slot of GPU kernels: they get device pointers and the device's CUDA stream. */
#define OXNET_EXT_SLOT_GPU 1

/** Status: success. */
#define OXNET_EXT_OK 0
/** Status: failure (the message went through the call's oxnet_ext_error). */
#define OXNET_EXT_FAIL 1

/** Output requests, one per output of every kernel call. */
#define OXNET_EXT_REQ_NULL 0    /* skip this output */
#define OXNET_EXT_REQ_WRITE 1   /* overwrite the buffer */
#define OXNET_EXT_REQ_INPLACE 2 /* overwrite; the buffer may alias an input */
#define OXNET_EXT_REQ_ADD 3     /* add the result to what the buffer holds */

/** Data type codes (MXNet's numbering). -1 means "not known yet". */
#define OXNET_EXT_DTYPE_UNKNOWN (-1)
#define OXNET_EXT_DTYPE_FLOAT32 0
#define OXNET_EXT_DTYPE_FLOAT64 1
#define OXNET_EXT_DTYPE_FLOAT16 2
#define OXNET_EXT_DTYPE_UINT8 3
#define OXNET_EXT_DTYPE_INT32 4
#define OXNET_EXT_DTYPE_INT8 5
#define OXNET_EXT_DTYPE_INT64 6
#define OXNET_EXT_DTYPE_BOOL 7
#define OXNET_EXT_DTYPE_BFLOAT16 12

/* ------------------------------------------------------------------------- */
/* DLPack (written for oxnet; same layout as dlpack.h 0.8 / 1.x)              */
/* ------------------------------------------------------------------------- */
#ifndef DLPACK_DLPACK_H_
#define OXNET_EXT_DEFINES_DLPACK 1

/** Where a tensor lives. */
typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16
} DLDeviceType;

/** A device: its type and ordinal. */
typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

/** Kinds of element types. */
typedef enum {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6
} DLDataTypeCode;

/** An element type: kind, bits per lane, lanes (1 for scalars). */
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

/** A strided view of memory. oxnet always fills `strides` (in elements). */
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;
#endif /* DLPACK_DLPACK_H_ */

/* ------------------------------------------------------------------------- */
/* Per-call services                                                          */
/* ------------------------------------------------------------------------- */

/** Where a callback reports its failure. Valid only during the call. */
typedef struct oxnet_ext_error {
  /** Host's private pointer; pass it back to `set_message`. */
  void* host_data;
  /** Records `message` (UTF-8, copied by the host). Calling it again appends. */
  void (*set_message)(void* host_data, const char* message);
} oxnet_ext_error;

/** Reports `message` through `err` (convenience; NULL-safe). */
static inline void oxnet_ext_set_error(oxnet_ext_error* err, const char* message) {
  if (err && err->set_message) err->set_message(err->host_data, message);
}

/** Attributes: `count` (key, value) pairs of UTF-8 C strings, valid during the call. */
typedef struct oxnet_ext_attrs {
  const char* const* keys;
  const char* const* values;
  int32_t count;
} oxnet_ext_attrs;

/** A place where a callback hands strings (or key/value pairs) to the host, which copies them. */
typedef struct oxnet_ext_sink {
  void* host_data;
  /** Adds one entry; `key` may be NULL for plain strings. */
  void (*push)(void* host_data, const char* key, const char* value);
} oxnet_ext_sink;

/** A shape in shape inference. `ndim == -1`: unknown; a dimension of -1: unknown. */
typedef struct oxnet_ext_shape {
  int32_t ndim;
  int32_t reserved;
  int64_t dims[OXNET_EXT_MAX_NDIM];
} oxnet_ext_shape;

/** What a kernel receives besides its tensors: requests' context, workspace, randomness. */
typedef struct oxnet_ext_resource {
  /** sizeof(oxnet_ext_resource) as the host compiled it. */
  uint32_t struct_size;
  /** Nonzero in training mode. */
  int32_t is_train;
  /** The device the kernel runs on. */
  DLDevice device;
  /** Host's private pointer; pass it back to the functions below. */
  void* host_data;
  /** `size` bytes of CPU memory, 64-byte aligned, valid until the kernel returns;
   *  each call gives a distinct region; the host frees it. NULL if it cannot. */
  void* (*alloc_cpu)(void* host_data, uint64_t size);
  /** `size` bytes of GPU memory on the call's device, valid until the kernel's work on
   *  `cuda_stream` is done; the host frees it. NULL in a CPU call or if it cannot. */
  void* (*alloc_gpu)(void* host_data, uint64_t size);
  /** A fresh 64-bit seed drawn from oxnet's global generator (reseeding oxnet repeats the draws). */
  uint64_t (*random_seed)(void* host_data);
  /** The CUDA stream of the call (NULL on CPU). */
  void* cuda_stream;
} oxnet_ext_resource;

/* ------------------------------------------------------------------------- */
/* Operators                                                                  */
/* ------------------------------------------------------------------------- */

/** Sets the number of inputs and outputs from the attributes (required). */
typedef int32_t (*oxnet_ext_parse_attrs_fn)(void* user_data, const oxnet_ext_attrs* attrs,
                                             int32_t* num_in, int32_t* num_out,
                                             oxnet_ext_error* err);

/** Fills output dtypes (and may fill unknown input dtypes). Unknown: OXNET_EXT_DTYPE_UNKNOWN. */
typedef int32_t (*oxnet_ext_infer_type_fn)(void* user_data, const oxnet_ext_attrs* attrs,
                                            int32_t* in_types, int32_t num_in,
                                            int32_t* out_types, int32_t num_out,
                                            oxnet_ext_error* err);

/** Fills output shapes (and may fill unknown input shapes). */
typedef int32_t (*oxnet_ext_infer_shape_fn)(void* user_data, const oxnet_ext_attrs* attrs,
                                             oxnet_ext_shape* in_shapes, int32_t num_in,
                                             oxnet_ext_shape* out_shapes, int32_t num_out,
                                             oxnet_ext_error* err);

/** Writes the indices of the inputs the kernels modify into `indices` (room for
 *  `capacity` = num_in entries) and their number into `*count`. */
typedef int32_t (*oxnet_ext_mutate_inputs_fn)(void* user_data, const oxnet_ext_attrs* attrs,
                                               int32_t* indices, int32_t capacity,
                                               int32_t* count, oxnet_ext_error* err);

/** A stateless kernel. Forward: inputs are the operator's inputs, outputs its outputs.
 *  Backward: inputs are out_grads, then the forward inputs, then the forward outputs;
 *  outputs are one gradient per forward input. `req[i]` tells how to store outputs[i]. */
typedef int32_t (*oxnet_ext_kernel_fn)(void* user_data, const oxnet_ext_attrs* attrs,
                                        const DLTensor* inputs, int32_t num_in,
                                        const DLTensor* outputs, int32_t num_out,
                                        const int32_t* req, const oxnet_ext_resource* res,
                                        oxnet_ext_error* err);

/** A stateful kernel: like oxnet_ext_kernel_fn, receiving the state object. */
typedef int32_t (*oxnet_ext_state_kernel_fn)(void* state, const DLTensor* inputs, int32_t num_in,
                                              const DLTensor* outputs, int32_t num_out,
                                              const int32_t* req, const oxnet_ext_resource* res,
                                              oxnet_ext_error* err);

/** A per-instance state object, filled by create_state. The host calls `destroy`
 *  exactly once, when the operator instance dies. */
typedef struct oxnet_ext_state {
  void* state;
  oxnet_ext_state_kernel_fn forward;  /* required */
  oxnet_ext_state_kernel_fn backward; /* may be NULL: no gradient */
  void (*destroy)(void* state);       /* may be NULL */
} oxnet_ext_state;

/** Creates the state of one operator instance on `device` from the attributes and
 *  the input shapes and dtypes; fills `*out` (zeroed by the host). */
typedef int32_t (*oxnet_ext_create_state_fn)(void* user_data, const oxnet_ext_attrs* attrs,
                                              DLDevice device, const oxnet_ext_shape* in_shapes,
                                              const int32_t* in_types, int32_t num_in,
                                              oxnet_ext_state* out, oxnet_ext_error* err);

/** An operator. Kernel arrays are indexed by OXNET_EXT_SLOT_CPU / OXNET_EXT_SLOT_GPU.
 *  An operator has a stateless forward or a create_state for the CPU slot. */
typedef struct oxnet_ext_op {
  /** sizeof(oxnet_ext_op) as the library compiled it. */
  uint32_t struct_size;
  /** Nonzero for a subgraph operator (runs a subgraph given in its attributes). */
  int32_t is_subgraph_op;
  /** The name it is registered under (unique). */
  const char* name;
  /** Passed back to every callback of this operator. */
  void* user_data;
  oxnet_ext_parse_attrs_fn parse_attrs;     /* required */
  oxnet_ext_infer_type_fn infer_type;       /* required */
  oxnet_ext_infer_shape_fn infer_shape;     /* required */
  oxnet_ext_mutate_inputs_fn mutate_inputs; /* may be NULL */
  oxnet_ext_kernel_fn forward[OXNET_EXT_NUM_DEVICE_SLOTS];
  oxnet_ext_kernel_fn backward[OXNET_EXT_NUM_DEVICE_SLOTS];
  oxnet_ext_create_state_fn create_state[OXNET_EXT_NUM_DEVICE_SLOTS];
} oxnet_ext_op;

/* ------------------------------------------------------------------------- */
/* Partitioners and graph passes (graphs cross as oxnet graph JSON)           */
/* ------------------------------------------------------------------------- */

/** A node selector, grown from a seed node (optional alternative to supported_ops). */
typedef struct oxnet_ext_selector {
  void* selector;
  int32_t (*select)(void* selector, int32_t node_id, int32_t* selected);
  int32_t (*select_input)(void* selector, int32_t node_id, int32_t input_node_id, int32_t* selected);
  int32_t (*select_output)(void* selector, int32_t node_id, int32_t output_node_id,
                           int32_t* selected);
  /** Writes the kept node ids (a subset of candidates) into `keep` (room for
   *  num_candidates) and their number into `*num_keep`. */
  int32_t (*filter)(void* selector, const int32_t* candidates, int32_t num_candidates,
                    int32_t* keep, int32_t* num_keep);
  void (*reset)(void* selector);
  void (*destroy)(void* selector);
} oxnet_ext_selector;

/** Marks supported nodes: `ids[i]` receives -1 (not supported) or a subgraph id (>= 0)
 *  for node i of `graph_json` (room for num_nodes entries, pre-filled with -1). */
typedef int32_t (*oxnet_ext_supported_ops_fn)(void* user_data, const char* graph_json,
                                               int32_t* ids, int32_t num_nodes,
                                               const oxnet_ext_attrs* options,
                                               oxnet_ext_error* err);

/** Creates a selector for `graph_json` into `*out` (zeroed by the host). */
typedef int32_t (*oxnet_ext_create_selector_fn)(void* user_data, const char* graph_json,
                                                 const oxnet_ext_attrs* options,
                                                 oxnet_ext_selector* out, oxnet_ext_error* err);

/** Reviews one subgraph: sets `*accept` (nonzero keeps it) and may push attributes for
 *  the subgraph node through `attrs_out`. */
typedef int32_t (*oxnet_ext_review_subgraph_fn)(void* user_data, const char* subgraph_json,
                                                 int32_t subgraph_id, const oxnet_ext_attrs* options,
                                                 int32_t* accept, oxnet_ext_sink* attrs_out,
                                                 oxnet_ext_error* err);

/** One partitioning strategy of a partitioner. */
typedef struct oxnet_ext_strategy {
  const char* name;
  /** The subgraph operator that replaces each accepted subgraph. */
  const char* subgraph_op_name;
  oxnet_ext_supported_ops_fn supported_ops;     /* this or create_selector */
  oxnet_ext_create_selector_fn create_selector; /* may be NULL */
  oxnet_ext_review_subgraph_fn review_subgraph; /* may be NULL: accept all */
} oxnet_ext_strategy;

/** A partitioner (MXNet's "backend"): named strategies. */
typedef struct oxnet_ext_partitioner {
  uint32_t struct_size;
  int32_t num_strategies;
  const char* name;
  void* user_data;
  const oxnet_ext_strategy* strategies;
} oxnet_ext_partitioner;

/** Services of a graph pass: new parameters for the rewritten graph. */
typedef struct oxnet_ext_pass_resource {
  void* host_data;
  /** Allocates a parameter (is_aux nonzero: an auxiliary state) of the given shape and
   *  dtype code on the CPU; the returned tensor is owned by the host. NULL on failure. */
  DLTensor* (*alloc_param)(void* host_data, const char* name, int32_t is_aux,
                           const int64_t* shape, int32_t ndim, int32_t dtype);
} oxnet_ext_pass_resource;

/** A graph pass: reads `graph_json`, pushes the rewritten graph's JSON through `out`. */
typedef int32_t (*oxnet_ext_graph_pass_fn)(void* user_data, const char* graph_json,
                                            const oxnet_ext_attrs* options, oxnet_ext_sink* out,
                                            const oxnet_ext_pass_resource* res,
                                            oxnet_ext_error* err);

/** A graph pass descriptor. */
typedef struct oxnet_ext_pass {
  uint32_t struct_size;
  int32_t reserved;
  const char* name;
  void* user_data;
  oxnet_ext_graph_pass_fn run;
} oxnet_ext_pass;

/* ------------------------------------------------------------------------- */
/* The two tables and the entry point                                         */
/* ------------------------------------------------------------------------- */

/** What the host hands the library. */
typedef struct oxnet_ext_host {
  /** OXNET_EXT_ABI_VERSION of the host. */
  uint32_t abi_version;
  /** sizeof(oxnet_ext_host) as the host compiled it. */
  uint32_t struct_size;
  /** oxnet's version as major*10000 + minor*100 + patch (what initialize receives). */
  int32_t host_version;
  /** sizeof(oxnet_ext_resource) on the host. */
  uint32_t resource_size;
  /** sizeof(DLTensor) on the host. */
  uint32_t tensor_size;
  /** sizeof(oxnet_ext_shape) on the host. */
  uint32_t shape_size;
  /** Host's private pointer for `log`. */
  void* host_data;
  /** Prints a message from the library (level 0 info, 1 warning). May be NULL. */
  void (*log)(void* host_data, int32_t level, const char* message);
} oxnet_ext_host;

/** What the library hands the host. Lives as long as the library is loaded. */
typedef struct oxnet_ext_library {
  /** OXNET_EXT_ABI_VERSION the library was built with. Must stay the first field. */
  uint32_t abi_version;
  /** sizeof(oxnet_ext_library) as the library compiled it. Must stay the second field. */
  uint32_t struct_size;
  /** sizeof(oxnet_ext_op), sizeof(oxnet_ext_partitioner), sizeof(oxnet_ext_pass),
   *  sizeof(DLTensor), sizeof(oxnet_ext_shape) and sizeof(oxnet_ext_resource) in the library. */
  uint32_t op_size;
  uint32_t partitioner_size;
  uint32_t pass_size;
  uint32_t tensor_size;
  uint32_t shape_size;
  uint32_t resource_size;
  /** Called once after the checks with the host's version; a failure refuses the load.
   *  May be NULL (accepts every host). */
  int32_t (*initialize)(int32_t host_version, oxnet_ext_error* err);
  const oxnet_ext_op* ops;
  const oxnet_ext_partitioner* partitioners;
  const oxnet_ext_pass* passes;
  int32_t num_ops;
  int32_t num_partitioners;
  int32_t num_passes;
  int32_t reserved;
} oxnet_ext_library;

/** Fills the size and version fields of a library table (use in oxnet_ext_entry). */
#define OXNET_EXT_LIBRARY_HEADER                                                        \
  OXNET_EXT_ABI_VERSION, (uint32_t)sizeof(oxnet_ext_library), (uint32_t)sizeof(oxnet_ext_op), \
      (uint32_t)sizeof(oxnet_ext_partitioner), (uint32_t)sizeof(oxnet_ext_pass),           \
      (uint32_t)sizeof(DLTensor), (uint32_t)sizeof(oxnet_ext_shape),                       \
      (uint32_t)sizeof(oxnet_ext_resource)

/** The name of the one exported entry point. */
#define OXNET_EXT_ENTRY_NAME "oxnet_ext_entry"

/** The entry point's type: returns the library's table (never freed by the host),
 *  or NULL to refuse the host. */
typedef const oxnet_ext_library* (*oxnet_ext_entry_fn)(const oxnet_ext_host* host);

#if defined(_WIN32)
#define OXNET_EXT_EXPORT __declspec(dllexport)
#else
#define OXNET_EXT_EXPORT __attribute__((visibility("default")))
#endif

/** The entry point every library defines (see OXNET_EXT_ENTRY). */
OXNET_EXT_EXPORT const oxnet_ext_library* oxnet_ext_entry(const oxnet_ext_host* host);

/** Declare your entry point with this: `OXNET_EXT_ENTRY { ... return &table; }`. */
#define OXNET_EXT_ENTRY \
  OXNET_EXT_EXPORT const oxnet_ext_library* oxnet_ext_entry(const oxnet_ext_host* host)

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OXNET_EXT_H_ */
