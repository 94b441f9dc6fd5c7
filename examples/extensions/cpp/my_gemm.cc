/*
 * my_gemm.cc -- a stateless 2-D matrix product operator for oxnet, written in
 * the style of the reference system's extension examples (seed 004): the
 * functions in gemm_impl.h, registered with REGISTER_OP and its setters.
 *
 * Build:  g++ -std=c++17 -shared -fPIC -O2 -I ../../../include my_gemm.cc -o libmy_gemm.so
 * Use:    oxnet_library::load("/abs/path/libmy_gemm.so", true), then call `my_gemm`.
 */
#include <iostream>

#include "gemm_impl.h"

REGISTER_OP(my_gemm)
    .setForward(forward, "cpu")
    .setBackward(backward, "cpu")
    .setParseAttrs(parseAttrs)
    .setInferType(inferType)
    .setInferShape(inferShape)
    .setHandlesAddTo();  // the kernels add into kAddTo outputs themselves (gemm_impl.h)

/* Accepts oxnet 0.1.0 and later (version = major*10000 + minor*100 + patch). */
MXReturnValue initialize(int version) {
  if (version >= 100) return MX_SUCCESS;
  MX_ERROR_MSG << "my_gemm needs oxnet 0.1.0 or later, this is version " << version;
  return MX_FAIL;
}
