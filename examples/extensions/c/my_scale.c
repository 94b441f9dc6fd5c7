/*
 * my_scale: y = scale * x for float32 tensors, with its gradient, written
 * against the plain C header. Build:
 *   cc -std=c99 -shared -fPIC -I include examples/extensions/c/my_scale.c -o libmy_scale.so
 * Attributes: scale (default 1). It honours the request of each output.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oxnet/oxnet_ext.h"

/* Reads the `scale` attribute; fails with a message when it is malformed. */
static int read_scale(const oxnet_ext_attrs* attrs, float* scale, oxnet_ext_error* err) {
  *scale = 1.0f;
  for (int32_t i = 0; i < attrs->count; i++) {
    if (strcmp(attrs->keys[i], "scale") == 0) {
      char* end = NULL;
      *scale = strtof(attrs->values[i], &end);
      if (end == attrs->values[i] || *end != '\0') {
        char msg[256];
        snprintf(msg, sizeof msg, "my_scale: attribute scale=`%s` is not a number", attrs->values[i]);
        oxnet_ext_set_error(err, msg);
        return OXNET_EXT_FAIL;
      }
    }
  }
  return OXNET_EXT_OK;
}

static int32_t parse_attrs(void* user, const oxnet_ext_attrs* attrs, int32_t* num_in,
                           int32_t* num_out, oxnet_ext_error* err) {
  float scale;
  (void)user;
  *num_in = 1;
  *num_out = 1;
  return read_scale(attrs, &scale, err);
}

static int32_t infer_type(void* user, const oxnet_ext_attrs* attrs, int32_t* in_types,
                          int32_t num_in, int32_t* out_types, int32_t num_out,
                          oxnet_ext_error* err) {
  (void)user; (void)attrs; (void)num_in; (void)num_out;
  if (in_types[0] != OXNET_EXT_DTYPE_FLOAT32) {
    oxnet_ext_set_error(err, "my_scale: the input must be float32");
    return OXNET_EXT_FAIL;
  }
  out_types[0] = OXNET_EXT_DTYPE_FLOAT32;
  return OXNET_EXT_OK;
}

static int32_t infer_shape(void* user, const oxnet_ext_attrs* attrs, oxnet_ext_shape* in_shapes,
                           int32_t num_in, oxnet_ext_shape* out_shapes, int32_t num_out,
                           oxnet_ext_error* err) {
  (void)user; (void)attrs; (void)num_in; (void)num_out;
  if (in_shapes[0].ndim < 0) {
    oxnet_ext_set_error(err, "my_scale: the input shape is unknown");
    return OXNET_EXT_FAIL;
  }
  out_shapes[0] = in_shapes[0];
  return OXNET_EXT_OK;
}

static int64_t numel(const DLTensor* t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->ndim; i++) n *= t->shape[i];
  return n;
}

/* dst = scale * src under `req` (shared by forward and backward). */
static void scale_into(const DLTensor* src, const DLTensor* dst, float scale, int32_t req) {
  const float* x = (const float*)((const char*)src->data + src->byte_offset);
  float* y = (float*)((char*)dst->data + dst->byte_offset);
  int64_t n = numel(src);
  if (req == OXNET_EXT_REQ_NULL) return;
  if (req == OXNET_EXT_REQ_ADD) {
    for (int64_t i = 0; i < n; i++) y[i] += scale * x[i];
  } else {
    for (int64_t i = 0; i < n; i++) y[i] = scale * x[i];
  }
}

static int32_t forward(void* user, const oxnet_ext_attrs* attrs, const DLTensor* inputs,
                       int32_t num_in, const DLTensor* outputs, int32_t num_out,
                       const int32_t* req, const oxnet_ext_resource* res, oxnet_ext_error* err) {
  float scale;
  (void)user; (void)num_in; (void)num_out; (void)res;
  if (read_scale(attrs, &scale, err) != OXNET_EXT_OK) return OXNET_EXT_FAIL;
  scale_into(&inputs[0], &outputs[0], scale, req[0]);
  return OXNET_EXT_OK;
}

/* inputs: out_grad, x, y; outputs: dx. */
static int32_t backward(void* user, const oxnet_ext_attrs* attrs, const DLTensor* inputs,
                        int32_t num_in, const DLTensor* outputs, int32_t num_out,
                        const int32_t* req, const oxnet_ext_resource* res, oxnet_ext_error* err) {
  float scale;
  (void)user; (void)num_in; (void)num_out; (void)res;
  if (read_scale(attrs, &scale, err) != OXNET_EXT_OK) return OXNET_EXT_FAIL;
  scale_into(&inputs[0], &outputs[0], scale, req[0]);
  return OXNET_EXT_OK;
}

static const oxnet_ext_op ops[] = {{
    sizeof(oxnet_ext_op), 0, "my_scale", NULL, parse_attrs, infer_type, infer_shape, NULL,
    {forward, NULL}, {backward, NULL}, {NULL, NULL},
}};

static const oxnet_ext_library library = {
    OXNET_EXT_LIBRARY_HEADER, NULL, ops, NULL, NULL, 1, 0, 0, 0,
};

OXNET_EXT_ENTRY {
  (void)host;
  return &library;
}
