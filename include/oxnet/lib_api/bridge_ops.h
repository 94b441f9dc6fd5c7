/*
 * Part of oxnet/lib_api.h (included by it; do not include directly): the
 * bridge from registered operators to the C ABI.
 */
#ifndef OXNET_LIB_API_H_
#error "include oxnet/lib_api.h, not this part of it"
#endif
#ifndef OXNET_LIB_API_BRIDGE_OPS_H_
#define OXNET_LIB_API_BRIDGE_OPS_H_

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

}  // namespace detail
}  // namespace ext
}  // namespace oxnet

#pragma GCC visibility pop

#endif  // OXNET_LIB_API_BRIDGE_OPS_H_
