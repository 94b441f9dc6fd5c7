// The C++ side of oxnet's support for MXNet-style extension libraries: a
// frame that catches their C++ exceptions, and the size of std::mt19937 as
// this C++ standard library lays it out (the random states handed to them).
//
// Libraries built against MXNet's lib_api.h export C functions that do not
// catch the exceptions of the author's code. An exception must not reach
// Rust frames that cannot catch it, so every call into such a library runs
// as `body(context)` inside this frame. `body` is a Rust `extern "C-unwind"`
// function: a C++ exception unwinds through it and stops here.

#include <cstddef>
#include <cstring>
#include <exception>
#include <random>
#include <stdexcept>

namespace {

void copy_message(const char* text, char* message, std::size_t capacity) {
  if (message == nullptr || capacity == 0) return;
  std::size_t n = std::strlen(text);
  if (n >= capacity) n = capacity - 1;
  std::memcpy(message, text, n);
  message[n] = '\0';
}

}  // namespace

// Runs body(context). Returns 0 when it returned, 1 when it threw a
// std::exception (its what() is copied into `message`), 2 for any other
// exception.
extern "C" int oxnet_mxnet_guard(void (*body)(void*), void* context, char* message,
                                 std::size_t capacity) {
  try {
    body(context);
    return 0;
  } catch (const std::exception& e) {
    copy_message(e.what(), message, capacity);
    return 1;
  } catch (...) {
    copy_message("an exception that is not a std::exception", message, capacity);
    return 2;
  }
}

// For oxnet-library's own unit tests: throws what `kind` says (1: a
// std::runtime_error, otherwise an int), so the guard is checked without a
// library built against MXNet's header.
extern "C" void oxnet_mxnet_guard_test_throw(int kind) {
  if (kind == 1) throw std::runtime_error("thrown for the guard's test");
  throw 7;
}

// sizeof(std::mt19937) in this C++ standard library: the host hands
// libraries an array of engines and checks that its layout has this size.
extern "C" std::size_t oxnet_mxnet_mt19937_size() { return sizeof(std::mt19937); }

// For oxnet-library's own unit tests: draws one number from an engine laid
// out by the host, as a library would.
extern "C" unsigned oxnet_mxnet_test_draw(void* engine) {
  return static_cast<unsigned>((*static_cast<std::mt19937*>(engine))());
}
