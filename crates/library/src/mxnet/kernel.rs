//! The arguments of MXNet's `_opCallFCompute` / `_opCallFStatefulCompute`,
//! built from the DLTensors, requests and resource of an oxnet kernel call.
//!
//! MXNet never passed output requests: its kernels always overwrite. So an
//! output with request `add` (or `null`) is computed into scratch memory
//! from the call's workspace, and `add` outputs get the scratch added in
//! afterwards ([`KernelArgs::finish`]).

use super::rng;
use super::symbols::{SparseMalloc, XpuMalloc};
use oxnet_abi as abi;
use smallvec::SmallVec;
use std::ffi::{c_char, c_int, c_void};

/// `"cpu"` and `"gpu"`, MXNet's device names.
const CPU: &[u8] = b"cpu\0";
const GPU: &[u8] = b"gpu\0";

/// MXNet's name of a DLPack device, and its kernel slot.
pub(crate) fn device_name(device: abi::DLDevice) -> Result<(*const c_char, usize), String> {
    match device.device_type {
        abi::K_DL_CPU => Ok((CPU.as_ptr() as *const c_char, abi::SLOT_CPU)),
        abi::K_DL_CUDA => Ok((GPU.as_ptr() as *const c_char, abi::SLOT_GPU)),
        other => Err(format!("DLPack device type {other} has no MXNet name")),
    }
}

/// Per-tensor arrays, kept inline for the usual few tensors (no allocation
/// on the call path).
type PerTensor<T> = SmallVec<[T; 4]>;

/// The per-tensor arrays of one side (inputs or outputs).
#[derive(Default)]
struct Side {
    shapes: PerTensor<*const i64>,
    dims: PerTensor<c_int>,
    data: PerTensor<*mut c_void>,
    types: PerTensor<c_int>,
    ids: PerTensor<usize>,
    dev_type: PerTensor<*const c_char>,
    dev_id: PerTensor<c_int>,
    /// Dense storage for every tensor, and NULL sparse parts.
    stypes: PerTensor<c_int>,
    nulls: PerTensor<*mut c_void>,
    zero_lens: PerTensor<i64>,
}

/// Names a tensor in messages ("input 1"), formatted only when needed.
#[derive(Clone, Copy)]
struct Named<'a>(&'a str, usize);

impl std::fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.0, self.1)
    }
}

/// Elements and bytes of a compact tensor; `Err` for a strided one.
fn extent(t: &abi::DLTensor, what: Named) -> Result<(usize, usize), String> {
    let n = t.ndim.max(0) as usize;
    // SAFETY: a DLTensor's shape holds `ndim` extents; strides are NULL or as many.
    let shape = if n == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(t.shape, n) } };
    let mut numel = 1usize;
    for &d in shape {
        numel = numel
            .checked_mul(usize::try_from(d).map_err(|_| format!("{what} has extent {d}"))?)
            .ok_or_else(|| format!("{what} is too large"))?;
    }
    if !t.strides.is_null() && n > 0 {
        // SAFETY: as above.
        let strides = unsafe { std::slice::from_raw_parts(t.strides, n) };
        let mut expect = 1i64;
        for (&d, &s) in shape.iter().zip(strides).rev() {
            if d != 1 && s != expect {
                return Err(format!("{what} is not compact (MXNet kernels read compact memory)"));
            }
            expect *= d;
        }
    }
    let bytes = numel * (t.dtype.bits as usize).div_ceil(8) * t.dtype.lanes.max(1) as usize;
    Ok((numel, bytes))
}

impl Side {
    fn new(tensors: &[abi::DLTensor], what: &str) -> Result<Side, String> {
        let mut s = Side::default();
        for (i, t) in tensors.iter().enumerate() {
            let name = Named(what, i);
            extent(t, name)?;
            let code =
                abi::dtype_code_of(t.dtype).ok_or_else(|| format!("{name} has a dtype MXNet cannot name"))?;
            let (dev, _) = device_name(t.device)?;
            s.shapes.push(t.shape);
            s.dims.push(t.ndim);
            // SAFETY: `byte_offset` lies within the tensor's allocation.
            s.data.push(unsafe { (t.data as *mut u8).add(t.byte_offset as usize) } as *mut c_void);
            s.types.push(code);
            s.ids.push(0);
            s.dev_type.push(dev);
            s.dev_id.push(t.device.device_id);
        }
        let n = tensors.len();
        s.stypes = smallvec::smallvec![0; n];
        s.nulls = smallvec::smallvec![std::ptr::null_mut(); n];
        s.zero_lens = smallvec::smallvec![0; n];
        Ok(s)
    }
}

/// An output computed into scratch memory.
struct Scratch {
    output: usize,
    buffer: *mut u8,
    numel: usize,
    dtype: c_int,
    add: bool,
}

/// Everything one `_opCallFCompute` call receives besides the function and
/// its attributes.
pub(crate) struct KernelArgs {
    ins: Side,
    outs: Side,
    scratch: SmallVec<[Scratch; 1]>,
    res: *const abi::Resource,
    rng: rng::Borrowed,
}

unsafe extern "C" fn cpu_malloc(ctx: *mut c_void, size: c_int) -> *mut c_void {
    let res = &*(ctx as *const abi::Resource);
    match (res.alloc_cpu, u64::try_from(size)) {
        (Some(f), Ok(size)) => f(res.host_data, size),
        _ => std::ptr::null_mut(),
    }
}

unsafe extern "C" fn gpu_malloc(ctx: *mut c_void, size: c_int) -> *mut c_void {
    let res = &*(ctx as *const abi::Resource);
    match (res.alloc_gpu, u64::try_from(size)) {
        (Some(f), Ok(size)) => f(res.host_data, size),
        _ => std::ptr::null_mut(),
    }
}

/// Sparse outputs do not exist in oxnet: the allocation yields NULLs.
unsafe extern "C" fn sparse_malloc(
    _ctx: *mut c_void,
    _index: c_int,
    _indices_len: c_int,
    _indptr_len: c_int,
    data: *mut *mut c_void,
    indices: *mut *mut i64,
    indptr: *mut *mut i64,
) {
    for p in [data, indices as *mut *mut c_void, indptr as *mut *mut c_void] {
        if !p.is_null() {
            *p = std::ptr::null_mut();
        }
    }
}

/// The resource functions as MXNet types them.
pub(crate) const CPU_MALLOC: XpuMalloc = cpu_malloc;
pub(crate) const GPU_MALLOC: XpuMalloc = gpu_malloc;
pub(crate) const SPARSE_MALLOC: SparseMalloc = sparse_malloc;

impl KernelArgs {
    /// The arguments for `inputs` and `outputs` (with one request each).
    ///
    /// # Safety
    /// The pointers are those of a kernel call of the operator ABI, valid
    /// for `n_in`/`n_out` entries and for the duration of the call.
    pub(crate) unsafe fn new(
        inputs: *const abi::DLTensor,
        n_in: i32,
        outputs: *const abi::DLTensor,
        n_out: i32,
        req: *const i32,
        res: *const abi::Resource,
    ) -> Result<KernelArgs, String> {
        let view = |p: *const abi::DLTensor, n: i32| {
            if n <= 0 || p.is_null() {
                &[][..]
            } else {
                std::slice::from_raw_parts(p, n as usize)
            }
        };
        let (ins, outs) = (view(inputs, n_in), view(outputs, n_out));
        let mut args = KernelArgs {
            ins: Side::new(ins, "input")?,
            outs: Side::new(outs, "output")?,
            scratch: SmallVec::new(),
            res,
            rng: rng::Borrowed::take(),
        };
        for (i, t) in outs.iter().enumerate() {
            let r = if req.is_null() { abi::REQ_WRITE } else { *req.add(i) };
            if r == abi::REQ_WRITE || r == abi::REQ_INPLACE {
                continue;
            }
            let (numel, bytes) = extent(t, Named("output", i))?;
            let buffer = cpu_malloc(
                res as *mut c_void,
                c_int::try_from(bytes.max(1))
                    .map_err(|_| format!("output {i} is too large for MXNet's workspace ({bytes} bytes)"))?,
            ) as *mut u8;
            if buffer.is_null() {
                return Err(format!("no scratch memory for output {i} ({bytes} bytes)"));
            }
            args.outs.data[i] = buffer as *mut c_void;
            args.scratch.push(Scratch {
                output: i,
                buffer,
                numel,
                dtype: args.outs.types[i],
                add: r == abi::REQ_ADD,
            });
        }
        Ok(args)
    }

    /// Adds each scratch output of an `add` request into its destination.
    ///
    /// # Safety
    /// Called after the kernel succeeded, with the call's tensors still valid.
    pub(crate) unsafe fn finish(self, outputs: *const abi::DLTensor) -> Result<(), String> {
        for s in self.scratch.iter().filter(|s| s.add) {
            let t = &*outputs.add(s.output);
            let dst = (t.data as *mut u8).add(t.byte_offset as usize);
            add_into(s.dtype, dst, s.buffer, s.numel)?;
        }
        Ok(())
    }

    /// The pointers to pass to `_opCallFCompute` or
    /// `_opCallFStatefulCompute` (valid while `self` lives).
    pub(crate) fn raw(&mut self) -> RawArgs {
        let (i, o) = (&self.ins, &self.outs);
        RawArgs {
            in_shapes: i.shapes.as_ptr(),
            in_dims: i.dims.as_ptr(),
            in_data: i.data.as_ptr(),
            in_types: i.types.as_ptr(),
            in_ids: i.ids.as_ptr(),
            in_dev_type: i.dev_type.as_ptr(),
            in_dev_id: i.dev_id.as_ptr(),
            num_in: i.shapes.len() as c_int,
            out_shapes: o.shapes.as_ptr(),
            out_dims: o.dims.as_ptr(),
            out_data: o.data.as_ptr(),
            out_types: o.types.as_ptr(),
            out_ids: o.ids.as_ptr(),
            out_dev_type: o.dev_type.as_ptr(),
            out_dev_id: o.dev_id.as_ptr(),
            num_out: o.shapes.len() as c_int,
            alloc: self.res as *mut c_void,
            in_stypes: i.stypes.as_ptr(),
            out_stypes: o.stypes.as_ptr(),
            in_nulls: i.nulls.as_ptr(),
            out_nulls: o.nulls.as_ptr(),
            in_zero_lens: i.zero_lens.as_ptr(),
            out_zero_lens: o.zero_lens.as_ptr(),
            rng_cpu_states: self.rng.as_ptr(),
            cuda_stream: unsafe { self.res.as_ref() }.map_or(std::ptr::null_mut(), |r| r.cuda_stream),
        }
    }
}

/// Calls `$f` — `_opCallFCompute` or `_opCallFStatefulCompute` — with its
/// leading arguments `$head` followed by the tensors, allocators and random
/// states of the [`RawArgs`] `$a` (the two functions share that tail).
macro_rules! with_tensor_args {
    ($f:expr, $a:expr; $($head:expr),+) => {{
        use $crate::mxnet::kernel::{CPU_MALLOC, GPU_MALLOC, SPARSE_MALLOC};
        let a = $a;
        $f(
            $($head,)+
            a.in_shapes, a.in_dims, a.in_data, a.in_types, a.in_ids, a.in_dev_type, a.in_dev_id, a.num_in,
            a.out_shapes, a.out_dims, a.out_data, a.out_types, a.out_ids, a.out_dev_type, a.out_dev_id, a.num_out,
            CPU_MALLOC, a.alloc, GPU_MALLOC, a.alloc, a.cuda_stream, SPARSE_MALLOC, a.alloc,
            // dense storage: storage types 0, no sparse indices or pointers
            a.in_stypes, a.out_stypes, a.in_nulls, a.out_nulls, a.in_nulls, a.out_nulls,
            a.in_zero_lens, a.out_zero_lens, a.in_zero_lens, a.out_zero_lens,
            a.rng_cpu_states, std::ptr::null_mut(),
        )
    }};
}
pub(crate) use with_tensor_args;

/// The pointers of [`KernelArgs`], ready to pass (valid while it lives).
#[derive(Clone, Copy)]
pub(crate) struct RawArgs {
    pub in_shapes: *const *const i64,
    pub in_dims: *const c_int,
    pub in_data: *const *mut c_void,
    pub in_types: *const c_int,
    pub in_ids: *const usize,
    pub in_dev_type: *const *const c_char,
    pub in_dev_id: *const c_int,
    pub num_in: c_int,
    pub out_shapes: *const *const i64,
    pub out_dims: *const c_int,
    pub out_data: *const *mut c_void,
    pub out_types: *const c_int,
    pub out_ids: *const usize,
    pub out_dev_type: *const *const c_char,
    pub out_dev_id: *const c_int,
    pub num_out: c_int,
    /// The ABI resource, passed as the context of the allocators.
    pub alloc: *mut c_void,
    pub in_stypes: *const c_int,
    pub out_stypes: *const c_int,
    pub in_nulls: *const *mut c_void,
    pub out_nulls: *const *mut c_void,
    pub in_zero_lens: *const i64,
    pub out_zero_lens: *const i64,
    pub rng_cpu_states: *mut c_void,
    pub cuda_stream: *mut c_void,
}

/// `dst[i] += src[i]` for `n` elements of MXNet dtype `code`.
///
/// # Safety
/// Both point to `n` elements of that dtype; `src` is 64-byte aligned and
/// `dst` aligned for the dtype.
unsafe fn add_into(code: c_int, dst: *mut u8, src: *const u8, n: usize) -> Result<(), String> {
    unsafe fn each<T: Copy>(dst: *mut u8, src: *const u8, n: usize, add: impl Fn(T, T) -> T) {
        let d = std::slice::from_raw_parts_mut(dst as *mut T, n);
        let s = std::slice::from_raw_parts(src as *const T, n);
        for (a, &b) in d.iter_mut().zip(s) {
            *a = add(*a, b);
        }
    }
    match code {
        abi::DTYPE_FLOAT32 => each::<f32>(dst, src, n, |a, b| a + b),
        abi::DTYPE_FLOAT64 => each::<f64>(dst, src, n, |a, b| a + b),
        abi::DTYPE_FLOAT16 => {
            each::<half::f16>(dst, src, n, |a, b| half::f16::from_f32(a.to_f32() + b.to_f32()))
        }
        abi::DTYPE_BFLOAT16 => {
            each::<half::bf16>(dst, src, n, |a, b| half::bf16::from_f32(a.to_f32() + b.to_f32()))
        }
        abi::DTYPE_UINT8 => each::<u8>(dst, src, n, u8::wrapping_add),
        abi::DTYPE_INT8 => each::<i8>(dst, src, n, i8::wrapping_add),
        abi::DTYPE_INT32 => each::<i32>(dst, src, n, i32::wrapping_add),
        abi::DTYPE_INT64 => each::<i64>(dst, src, n, i64::wrapping_add),
        abi::DTYPE_BOOL => each::<u8>(dst, src, n, |a, b| a | b),
        other => return Err(format!("cannot accumulate dtype code {other}")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accumulation_adds_in_the_dtype() {
        let mut f = [1.5f32, -2.0];
        let g = [0.25f32, 2.0];
        unsafe { add_into(abi::DTYPE_FLOAT32, f.as_mut_ptr() as *mut u8, g.as_ptr() as *const u8, 2) }
            .unwrap();
        assert_eq!(f, [1.75, 0.0]);
        let mut h = [half::f16::from_f32(1.0)];
        let k = [half::f16::from_f32(0.5)];
        unsafe { add_into(abi::DTYPE_FLOAT16, h.as_mut_ptr() as *mut u8, k.as_ptr() as *const u8, 1) }
            .unwrap();
        assert_eq!(h[0].to_f32(), 1.5);
        let mut u = [250u8];
        unsafe { add_into(abi::DTYPE_UINT8, u.as_mut_ptr(), [10u8].as_ptr(), 1) }.unwrap();
        assert_eq!(u, [4]);
        let mut q = [i64::MAX - 1];
        let r = [3i64];
        unsafe { add_into(abi::DTYPE_INT64, q.as_mut_ptr() as *mut u8, r.as_ptr() as *const u8, 1) }.unwrap();
        assert_eq!(q, [i64::MIN + 1]);
    }

    #[test]
    fn strided_tensors_are_refused() {
        let mut shape = [2i64, 3];
        let mut strides = [1i64, 2];
        let t = abi::DLTensor {
            data: std::ptr::null_mut(),
            device: abi::DLDevice::CPU,
            ndim: 2,
            dtype: abi::dl_dtype_of(abi::DTYPE_FLOAT32).unwrap(),
            shape: shape.as_mut_ptr(),
            strides: strides.as_mut_ptr(),
            byte_offset: 0,
        };
        assert!(extent(&t, Named("input", 0)).unwrap_err().contains("input 0 is not compact"));
        strides = [3, 1];
        let t = abi::DLTensor { strides: strides.as_mut_ptr(), ..t };
        assert_eq!(extent(&t, Named("input", 0)), Ok((6, 24)));
    }
}
