//! Compiles the C++ support of MXNet-style libraries (`src/mxnet/cxx.cc`):
//! their exported functions let C++ exceptions escape, and only a C++ frame
//! can stop them; their random states are C++ `std::mt19937` engines.

fn main() {
    println!("cargo:rerun-if-changed=src/mxnet/cxx.cc");
    cc::Build::new().cpp(true).std("c++11").file("src/mxnet/cxx.cc").compile("oxnet_mxnet_cxx");
}
