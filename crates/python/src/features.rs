//! What this build of oxnet and this CPU offer, under MXNet 1.x's feature
//! names (`mx.runtime.Features`).

use pyo3::prelude::*;

/// `(name, enabled)` for every feature MXNet 1.9.1 lists, in its order,
/// then oxnet's own (`CPU_AVX512F`, `CPU_FMA`). CPU features are detected
/// at run time, as oxnet's kernels pick their SIMD paths; what oxnet does
/// not build (CUDA, BLAS libraries, OpenMP, oneDNN, ...) is off.
#[pyfunction]
pub fn runtime_features() -> Vec<(&'static str, bool)> {
    let cpu = cpu_features();
    vec![
        ("CUDA", cfg!(feature = "cuda")),
        ("CUDNN", false),
        ("NCCL", false),
        ("CUDA_RTC", false),
        ("TENSORRT", false),
        ("CPU_SSE", cpu.sse),
        ("CPU_SSE2", cpu.sse2),
        ("CPU_SSE3", cpu.sse3),
        ("CPU_SSE4_1", cpu.sse4_1),
        ("CPU_SSE4_2", cpu.sse4_2),
        ("CPU_SSE4A", cpu.sse4a),
        ("CPU_AVX", cpu.avx),
        ("CPU_AVX2", cpu.avx2),
        ("OPENMP", false),
        ("SSE", cpu.sse),
        ("F16C", cpu.f16c),
        ("JEMALLOC", false),
        ("BLAS_OPEN", false),
        ("BLAS_ATLAS", false),
        ("BLAS_MKL", false),
        ("BLAS_APPLE", false),
        ("LAPACK", false),
        ("MKLDNN", false),
        ("OPENCV", false),
        ("CAFFE", false),
        ("PROFILER", true),
        ("DIST_KVSTORE", false),
        ("CXX14", false),
        ("INT64_TENSOR_SIZE", true),
        ("SIGNAL_HANDLER", false),
        ("DEBUG", cfg!(debug_assertions)),
        ("TVM_OP", false),
        ("CPU_AVX512F", cpu.avx512f),
        ("CPU_FMA", cpu.fma),
    ]
}

#[derive(Default)]
struct Cpu {
    sse: bool,
    sse2: bool,
    sse3: bool,
    sse4_1: bool,
    sse4_2: bool,
    sse4a: bool,
    avx: bool,
    avx2: bool,
    f16c: bool,
    fma: bool,
    avx512f: bool,
}

#[cfg(target_arch = "x86_64")]
fn cpu_features() -> Cpu {
    Cpu {
        sse: is_x86_feature_detected!("sse"),
        sse2: is_x86_feature_detected!("sse2"),
        sse3: is_x86_feature_detected!("sse3"),
        sse4_1: is_x86_feature_detected!("sse4.1"),
        sse4_2: is_x86_feature_detected!("sse4.2"),
        sse4a: is_x86_feature_detected!("sse4a"),
        avx: is_x86_feature_detected!("avx"),
        avx2: is_x86_feature_detected!("avx2"),
        f16c: is_x86_feature_detected!("f16c"),
        fma: is_x86_feature_detected!("fma"),
        avx512f: is_x86_feature_detected!("avx512f"),
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn cpu_features() -> Cpu {
    Cpu::default()
}
