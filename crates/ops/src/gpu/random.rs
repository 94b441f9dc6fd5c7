//! Random numbers on the GPU from a counter-based generator, Philox4x32-10
//! (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11):
//! element `i` of a launch is a pure function of the launch's 64-bit key and
//! the counter `i`, so every thread draws independently and a launch is
//! reproducible. Each launch takes its key from oxnet's global generator,
//! so `mx.random.seed` makes GPU draws reproducible too (they differ from the
//! CPU's draws, as MXNet's did).
//!
//! Kernels: `_random_uniform`, `_random_normal` (and their `_like` forms)
//! and `Dropout`'s mask, for float32 and float64; other dtypes and `add`
//! requests run on the host.

use super::source::BINARY;
use super::{add_flag, address, launch_binary, ordinal};
use oxnet_core::gpu::index::{c_type, cast_fn};
use oxnet_core::gpu::{self, KernelArgs, PRELUDE};
use oxnet_core::shape::{normalize_axis, Shape};
use oxnet_core::{DType, Error, NDArray, OpContext, Req, Result};
use rand::RngCore;

/// The Philox4x32-10 multipliers and key increments (Random123's constants).
const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// Philox4x32-10 of counter `c` under key `k`, on the host: the reference
/// the CUDA version ([`PHILOX`]) follows word for word.
pub fn philox4x32_10(mut c: [u32; 4], mut k: [u32; 2]) -> [u32; 4] {
    for round in 0..10 {
        if round > 0 {
            k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        }
        let p0 = u64::from(M0) * u64::from(c[0]);
        let p1 = u64::from(M1) * u64::from(c[2]);
        c = [(p1 >> 32) as u32 ^ c[1] ^ k[0], p1 as u32, (p0 >> 32) as u32 ^ c[3] ^ k[1], p0 as u32];
    }
    c
}

/// CUDA C++ of Philox4x32-10 and of the draws built on it: `ox_philox`,
/// `ox_uniform01` (in [0, 1), 24 random bits for float, 53 for double)
/// and `ox_gauss` (Box–Muller, the cosine branch).
pub const PHILOX: &str = r#"
__device__ __forceinline__ uint4 ox_philox(uint4 c, uint2 k) {
    #pragma unroll
    for (int r = 0; r < 10; ++r) {
        if (r) { k.x += 0x9E3779B9u; k.y += 0xBB67AE85u; }
        const unsigned hi0 = __umulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
        const unsigned hi1 = __umulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
        c = make_uint4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    }
    return c;
}
__device__ __forceinline__ uint4 ox_draw(unsigned long long seed, long long i) {
    return ox_philox(make_uint4((unsigned)i, (unsigned)((unsigned long long)i >> 32), 0u, 0u),
                     make_uint2((unsigned)seed, (unsigned)(seed >> 32)));
}
__device__ __forceinline__ float ox_u01(float, unsigned a, unsigned) { return (float)(a >> 8) * 5.9604644775390625e-8f; }
__device__ __forceinline__ double ox_u01(double, unsigned a, unsigned b) {
    return (double)(((unsigned long long)(a >> 6) << 27) | (b >> 5)) * 1.1102230246251565e-16;
}
template <typename C> __device__ __forceinline__ C ox_gauss(uint4 r) {
    const C u1 = (C)1 - ox_u01((C)0, r.x, r.y);  // in (0, 1]
    const C u2 = ox_u01((C)0, r.z, r.w);
    return sqrt((C)-2 * log(u1)) * cospi((C)2 * u2);
}
"#;

/// CUDA C++ of Dropout's per-element factor (both Dropout kernels use it):
/// `1/keep` where element `i` is kept, 0 where it is dropped, NaN
/// everywhere for `keep` 0 (as MXNet).
const DROPOUT_MASK: &str = r#"
template <typename C> __device__ __forceinline__ C ox_keep_scale(C keep) {
    return keep > (C)0 ? (C)1 / keep : (C)__longlong_as_double(0x7ff8000000000000ULL);
}
template <typename C> __device__ __forceinline__ C ox_mask(unsigned long long seed, long long i, C keep, C scale) {
    if (!(keep > (C)0)) return scale;
    const uint4 r = ox_draw(seed, i);
    return ox_u01((C)0, r.x, r.y) < keep ? scale : (C)0;
}
"#;

/// The float dtypes with random kernels.
const FLOATS: [DType; 2] = [DType::F32, DType::F64];

fn head(dtype: DType) -> Result<String> {
    Ok(format!(
        "{PRELUDE}{PHILOX}\ntypedef {t} T; typedef {t} C;\n{cast}",
        t = c_type(dtype)?,
        cast = cast_fn(dtype)?
    ))
}

/// The distributions drawn by [`draw_kernel`].
#[derive(Clone, Copy)]
enum Dist {
    /// Uniform on `[a, b)`.
    Uniform,
    /// Normal with mean `a` and standard deviation `b`.
    Normal,
}

impl Dist {
    fn name(self) -> &'static str {
        match self {
            Dist::Uniform => "uniform",
            Dist::Normal => "normal",
        }
    }
}

fn draw_name(dist: Dist, dtype: DType) -> String {
    format!("ox_random_{}_{dtype}", dist.name())
}

/// Name and source of a sampler: `(n, seed, a, b, out)`.
fn draw_kernel(dist: Dist, dtype: DType) -> Result<(String, String)> {
    let name = draw_name(dist, dtype);
    let value = match dist {
        Dist::Uniform => "a + (b - a) * ox_u01((C)0, r.x, r.y)",
        Dist::Normal => "a + b * ox_gauss<C>(r)",
    };
    let source = format!(
        "{head}extern \"C\" __global__ void {name}(long long n, unsigned long long seed, double a_, double b_, T* __restrict__ o) {{\n\
           const C a = (C)a_, b = (C)b_;\n\
           for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {{\n\
             const uint4 r = ox_draw(seed, i);\n\
             o[i] = ox_to({value});\n\
           }}\n\
         }}\n",
        head = head(dtype)?,
    );
    Ok((name, source))
}

fn mask_name(dtype: DType) -> String {
    format!("ox_dropout_mask_{dtype}")
}

/// Name and source of Dropout's mask: `(n, seed, keep, active, mask)`;
/// kept elements get `1/keep` (NaN for keep 0, as MXNet), dropped ones 0,
/// and every element 1 when the layer is inactive.
fn mask_kernel(dtype: DType) -> Result<(String, String)> {
    let name = mask_name(dtype);
    let head = head(dtype)? + DROPOUT_MASK;
    let source = format!(
        "{head}extern \"C\" __global__ void {name}(long long n, unsigned long long seed, double keep_, int active, T* __restrict__ m) {{\n\
           const C keep = (C)keep_, scale = ox_keep_scale(keep);\n\
           for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {{\n\
             m[i] = active ? ox_to(ox_mask(seed, i, keep, scale)) : (T)1;\n\
           }}\n\
         }}\n",
    );
    Ok((name, source))
}

fn fused_name(dtype: DType) -> String {
    format!("ox_dropout_{dtype}")
}

/// Name and source of Dropout in one pass, for a mask of the data's shape:
/// `(n, seed, keep, active, x, y, mask, add)`; the mask as [`mask_kernel`]'s,
/// `y = x * mask` (`add`: `y += x * mask`).
fn fused_kernel(dtype: DType) -> Result<(String, String)> {
    let name = fused_name(dtype);
    let head = head(dtype)? + DROPOUT_MASK;
    let source = format!(
        "{head}extern \"C\" __global__ void {name}(long long n, unsigned long long seed, double keep_, int active, \
         const T* __restrict__ x, T* __restrict__ y, T* __restrict__ m, int add) {{\n\
           const C keep = (C)keep_, scale = ox_keep_scale(keep);\n\
           for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {{\n\
             const C mv = active ? ox_mask(seed, i, keep, scale) : (C)1;\n\
             m[i] = ox_to(mv);\n\
             const C v = (C)x[i] * mv;\n\
             y[i] = add ? ox_to((C)y[i] + v) : ox_to(v);\n\
           }}\n\
         }}\n",
    );
    Ok((name, source))
}

/// Every kernel of this module, for the NVRTC compile check.
pub fn catalog() -> Result<Vec<(String, String)>> {
    let mut all = Vec::new();
    for dt in FLOATS {
        all.push(draw_kernel(Dist::Uniform, dt)?);
        all.push(draw_kernel(Dist::Normal, dt)?);
        all.push(mask_kernel(dt)?);
        all.push(fused_kernel(dt)?);
    }
    Ok(all)
}

/// A fresh key from oxnet's global generator.
fn seed(ctx: &OpContext) -> u64 {
    ctx.with_rng(|rng| rng.next_u64())
}

/// `_random_uniform` / `_random_normal` and their `_like` forms.
fn draw(dist: Dist, ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let o = &outs[0];
    match ctx.req[0] {
        Req::Null => return Ok(()),
        Req::Add => return gpu::fallback::host_call(ctx, ins, outs),
        _ if !FLOATS.contains(&o.dtype()) || !o.is_contiguous() => {
            return gpu::fallback::host_call(ctx, ins, outs)
        }
        _ => {}
    }
    let (a, b) = match dist {
        Dist::Uniform => (ctx.attrs.float("low")?, ctx.attrs.float("high")?),
        Dist::Normal => (ctx.attrs.float("loc")?, ctx.attrs.float("scale")?),
    };
    let dev = ordinal(ctx)?;
    let mut args = KernelArgs::new();
    args.push(o.size() as i64).push(seed(ctx)).push(a).push(b).push(address(o));
    let src = || draw_kernel(dist, o.dtype()).map(|k| k.1);
    gpu::launch(dev, &draw_name(dist, o.dtype()), src, gpu::grid_for(dev, o.size())?, &mut args)
}

/// `Dropout(data) -> (output, mask)`: the mask drawn on the device, then
/// `output = data * mask` (broadcast along `axes`).
fn dropout(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let (x, y, mask) = (&ins[0], &outs[0], &outs[1]);
    if !FLOATS.contains(&x.dtype()) || ctx.req[1] == Req::Add || !mask.is_contiguous() {
        return gpu::fallback::host_call(ctx, ins, outs);
    }
    let p = ctx.attrs.float("p")?;
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::attr("p", format!("must lie in [0, 1], got {p}")));
    }
    let mut mshape = Shape::from_slice(x.shape());
    for &a in ctx.attrs.ints("axes")? {
        mshape[normalize_axis(a, x.ndim())?] = 1;
    }
    if mask.shape() != mshape.as_slice() {
        return Err(Error::Shape(format!(
            "Dropout: the mask has shape {:?}, expected {:?}",
            mask.shape(),
            mshape
        )));
    }
    let active = p > 0.0 && (ctx.is_train || ctx.attrs.str("mode")? == "always");
    let dev = ordinal(ctx)?;
    let whole = mask.shape() == x.shape() && x.is_contiguous() && y.is_contiguous();
    if let (true, Some(add)) = (whole, add_flag(ctx.req[0])) {
        // one pass: draw, store the mask, scale the data
        let mut args = KernelArgs::new();
        args.push(x.size() as i64).push(seed(ctx)).push(1.0 - p).push(active as i32);
        args.push(address(x)).push(address(y)).push(address(mask)).push(add);
        let src = || fused_kernel(x.dtype()).map(|k| k.1);
        return gpu::launch(dev, &fused_name(x.dtype()), src, gpu::grid_for(dev, x.size())?, &mut args);
    }
    let mut args = KernelArgs::new();
    args.push(mask.size() as i64).push(seed(ctx)).push(1.0 - p).push(active as i32).push(address(mask));
    let src = || mask_kernel(x.dtype()).map(|k| k.1);
    gpu::launch(dev, &mask_name(x.dtype()), src, gpu::grid_for(dev, mask.size())?, &mut args)?;
    let Some(add) = add_flag(ctx.req[0]) else { return Ok(()) };
    let mul = BINARY.iter().find(|e| e.broadcast == "broadcast_mul").expect("broadcast_mul has a GPU kernel");
    launch_binary(mul, dev, x, mask, y, add)
}

/// Gives the samplers and Dropout their GPU kernels.
pub(super) fn register() {
    super::add_kernel("_random_uniform", |c, i, o| draw(Dist::Uniform, c, i, o));
    super::add_kernel("_random_uniform_like", |c, i, o| draw(Dist::Uniform, c, i, o));
    super::add_kernel("_random_normal", |c, i, o| draw(Dist::Normal, c, i, o));
    super::add_kernel("_random_normal_like", |c, i, o| draw(Dist::Normal, c, i, o));
    super::add_kernel("Dropout", dropout);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known-answer vectors of Random123's kat_vectors for philox4x32-10.
    #[test]
    fn philox_matches_the_known_answers() {
        assert_eq!(philox4x32_10([0; 4], [0; 2]), [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]);
        assert_eq!(
            philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
    }

    #[test]
    fn the_cuda_source_uses_the_same_constants() {
        for c in [M0, M1, W0, W1] {
            assert!(PHILOX.contains(&format!("0x{c:X}u")), "{c:#X} missing from the CUDA source");
        }
    }

    #[test]
    fn every_kernel_is_named_after_its_operation_and_dtype() {
        let names: Vec<String> = catalog().unwrap().into_iter().map(|k| k.0).collect();
        assert_eq!(names.len(), 8);
        assert!(names.contains(&"ox_random_normal_float64".to_string()), "{names:?}");
        assert!(names.contains(&"ox_dropout_mask_float32".to_string()), "{names:?}");
    }
}
