//! MXNet-style operators presented through oxnet's operator ABI: each
//! descriptor's callbacks are the functions below, whose user data is the
//! operator's [`MxOp`]; they call the library's `_opCall*` functions.
//!
//! Stateless and stateful operators, forward and backward, shape and dtype
//! inference (which may refine input shapes), mutated inputs and subgraph
//! operators all go through the same paths as oxnet's own libraries, so the
//! host's checks, caching and autograd apply unchanged.

use super::kernel::with_tensor_args;
use super::kernel::{device_name, KernelArgs, RawArgs};
use super::library::MxLibrary;
use super::symbols::LibFn;
use super::{pairs, status};
use crate::host::c_str;
use oxnet_abi as abi;
use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::sync::Arc;

/// One registered operator of an MXNet-style library.
pub(crate) struct MxOp {
    lib: Arc<MxLibrary>,
    name: CString,
    is_subgraph_op: bool,
    parse: LibFn,
    infer_type: LibFn,
    infer_shape: LibFn,
    mutate: LibFn,
    /// Kernels and state constructors per device slot (NULL: none).
    forward: [LibFn; abi::NUM_DEVICE_SLOTS],
    backward: [LibFn; abi::NUM_DEVICE_SLOTS],
    create_state: [LibFn; abi::NUM_DEVICE_SLOTS],
}

// SAFETY: the pointers are the library's functions and its static names,
// which MXNet's API requires to be callable from any thread.
unsafe impl Send for MxOp {}
unsafe impl Sync for MxOp {}

/// Reads `count` (context, function) pairs into per-slot functions.
///
/// # Safety
/// The arrays hold `count` entries (or are NULL with `count` 0).
unsafe fn per_slot(
    op: &str,
    what: &str,
    ctx: *const *const c_char,
    fp: *const LibFn,
    count: c_int,
) -> Result<[LibFn; abi::NUM_DEVICE_SLOTS], String> {
    let mut slots = [std::ptr::null(); abi::NUM_DEVICE_SLOTS];
    for i in 0..count.max(0) as usize {
        if ctx.is_null() || fp.is_null() {
            return Err(format!("operator `{op}` declares {count} {what} functions without their table"));
        }
        let slot = match c_str(*ctx.add(i)).as_str() {
            "cpu" => abi::SLOT_CPU,
            "gpu" => abi::SLOT_GPU,
            other => {
                return Err(format!(
                    "operator `{op}` has a {what} function for the unknown context `{other}`"
                ))
            }
        };
        slots[slot] = *fp.add(i);
    }
    Ok(slots)
}

impl MxOp {
    /// Reads registration `idx` of the library.
    pub(crate) fn read(lib: &Arc<MxLibrary>, idx: c_int) -> Result<MxOp, String> {
        let mut name = std::ptr::null();
        let mut is_sg: c_int = 0;
        let (mut f_ctx, mut f_fp, mut f_n) = (std::ptr::null(), std::ptr::null(), 0);
        let (mut b_ctx, mut b_fp, mut b_n) = (std::ptr::null(), std::ptr::null(), 0);
        let (mut c_ctx, mut c_fp, mut c_n) = (std::ptr::null(), std::ptr::null(), 0);
        let (mut parse, mut ty, mut stype, mut shape, mut mutate) =
            (std::ptr::null(), std::ptr::null(), std::ptr::null(), std::ptr::null(), std::ptr::null());
        let get = lib.syms.ops.op_reg_get;
        lib.call_void(|| unsafe {
            get(
                idx,
                &mut name,
                &mut is_sg,
                &mut f_ctx,
                &mut f_fp,
                &mut f_n,
                &mut b_ctx,
                &mut b_fp,
                &mut b_n,
                &mut c_ctx,
                &mut c_fp,
                &mut c_n,
                &mut parse,
                &mut ty,
                &mut stype,
                &mut shape,
                &mut mutate,
            )
        })
        .map_err(|e| format!("reading operator {idx}: {e}"))?;
        // SAFETY: the library returned its registration's name and tables.
        let op_name = unsafe { c_str(name) };
        if op_name.is_empty() {
            return Err(format!("operator {idx} has no name"));
        }
        let (forward, backward, create_state) = unsafe {
            (
                per_slot(&op_name, "forward", f_ctx, f_fp, f_n)?,
                per_slot(&op_name, "backward", b_ctx, b_fp, b_n)?,
                per_slot(&op_name, "createOpState", c_ctx, c_fp, c_n)?,
            )
        };
        let is_subgraph_op = is_sg != 0;
        if !is_subgraph_op {
            for (f, what) in [(parse, "parseAttrs"), (ty, "inferType"), (shape, "inferShape")] {
                if f.is_null() {
                    return Err(format!("operator `{op_name}` has no {what} function"));
                }
            }
        }
        Ok(MxOp {
            lib: lib.clone(),
            name: CString::new(op_name).map_err(|_| format!("operator {idx}'s name has a NUL byte"))?,
            is_subgraph_op,
            parse,
            infer_type: ty,
            infer_shape: shape,
            mutate,
            forward,
            backward,
            create_state,
        })
    }

    /// The operator ABI descriptor whose callbacks call this operator.
    /// `self` must stay in place while the descriptor is used.
    pub(crate) fn descriptor(&self) -> abi::Op {
        let given = |f: LibFn, k: abi::KernelFn| if f.is_null() { None } else { Some(k) };
        let state = |f: LibFn| if f.is_null() { None } else { Some(create_state as abi::CreateStateFn) };
        let (fwd, bwd): (abi::KernelFn, abi::KernelFn) = (kernel::<false>, kernel::<true>);
        abi::Op {
            struct_size: std::mem::size_of::<abi::Op>() as u32,
            is_subgraph_op: self.is_subgraph_op as i32,
            name: self.name.as_ptr(),
            user_data: self as *const MxOp as *mut c_void,
            parse_attrs: Some(parse_attrs),
            infer_type: Some(infer_type),
            infer_shape: Some(infer_shape),
            mutate_inputs: if self.mutate.is_null() { None } else { Some(mutate_inputs) },
            forward: [given(self.forward[0], fwd), given(self.forward[1], fwd)],
            backward: [given(self.backward[0], bwd), given(self.backward[1], bwd)],
            create_state: [state(self.create_state[0]), state(self.create_state[1])],
        }
    }
}

/// The operator behind a callback's user data.
unsafe fn op_of<'a>(user: *mut c_void) -> &'a MxOp {
    &*(user as *const MxOp)
}

/// A subgraph operator without `parseAttrs`: as in MXNet, its inputs and
/// outputs are those of the subgraph in its `subgraph_sym_json` attribute.
unsafe fn subgraph_arity(attrs: *const abi::Attrs) -> Result<(c_int, c_int), String> {
    let (keys, values, n) = pairs(attrs);
    let json = (0..n.max(0) as usize)
        .find(|&i| c_str(*keys.add(i)) == "subgraph_sym_json")
        .map(|i| c_str(*values.add(i)))
        .ok_or("a subgraph operator without parseAttrs needs the attribute `subgraph_sym_json`")?;
    let graph: serde_json::Value =
        serde_json::from_str(&json).map_err(|e| format!("subgraph_sym_json is not JSON: {e}"))?;
    let count = |key: &str| {
        graph
            .get(key)
            .and_then(|v| v.as_array())
            .map(|a| a.len() as c_int)
            .ok_or(format!("subgraph_sym_json has no `{key}` list"))
    };
    Ok((count("arg_nodes")?, count("heads")?))
}

unsafe extern "C" fn parse_attrs(
    user: *mut c_void,
    attrs: *const abi::Attrs,
    num_in: *mut i32,
    num_out: *mut i32,
    err: *mut abi::Error,
) -> i32 {
    let op = op_of(user);
    if op.parse.is_null() {
        let r = subgraph_arity(attrs).map(|(i, o)| {
            *num_in = i;
            *num_out = o;
        });
        return status(err, r);
    }
    let (keys, values, n) = pairs(attrs);
    let f = op.lib.syms.ops.parse_attrs;
    status(err, op.lib.call(|| f(op.parse, keys, values, n, num_in, num_out)))
}

/// Why a subgraph operator without an inference function cannot run yet.
fn no_subgraph_inference(what: &str) -> String {
    format!(
        "the subgraph operator has no {what}; MXNet infers through the subgraph, which needs \
         oxnet's graph layer (not there yet)"
    )
}

unsafe extern "C" fn infer_type(
    user: *mut c_void,
    attrs: *const abi::Attrs,
    in_types: *mut i32,
    num_in: i32,
    out_types: *mut i32,
    num_out: i32,
    err: *mut abi::Error,
) -> i32 {
    let op = op_of(user);
    if op.infer_type.is_null() {
        return status(err, Err(no_subgraph_inference("inferType")));
    }
    let (keys, values, n) = pairs(attrs);
    let f = op.lib.syms.ops.infer_type;
    status(err, op.lib.call(|| f(op.infer_type, keys, values, n, in_types, num_in, out_types, num_out)))
}

/// Shapes in MXNet's form for inference and state creation (`unsigned**`
/// with their ndims): unknown shapes and extents are 0.
struct MxShapes {
    _dims: Vec<Vec<c_uint>>,
    ndims: Vec<c_int>,
    ptrs: Vec<*mut c_uint>,
}

impl MxShapes {
    fn new(shapes: &[abi::Shape]) -> Result<MxShapes, String> {
        let mut dims = shapes.iter().map(Self::one).collect::<Result<Vec<_>, _>>()?;
        let ndims = dims.iter().map(|d| d.len() as c_int).collect();
        let ptrs = dims.iter_mut().map(|d| d.as_mut_ptr()).collect();
        Ok(MxShapes { _dims: dims, ndims, ptrs })
    }

    fn one(s: &abi::Shape) -> Result<Vec<c_uint>, String> {
        if s.ndim < 0 {
            return Ok(Vec::new());
        }
        s.dims[..s.ndim as usize]
            .iter()
            .map(|&d| {
                if d < 0 {
                    Ok(0)
                } else {
                    c_uint::try_from(d).map_err(|_| format!("extent {d} exceeds MXNet's 32 bits"))
                }
            })
            .collect()
    }
}

/// Copies an MXNet shape into an ABI shape (`ndim` 0 stays unknown: MXNet's
/// shape functions mark unknown shapes so).
unsafe fn read_shape(dims: *const c_uint, ndim: c_int, into: &mut abi::Shape) -> Result<(), String> {
    if ndim <= 0 || dims.is_null() {
        *into = abi::Shape::UNKNOWN;
        return Ok(());
    }
    let n = ndim as usize;
    if n > abi::MAX_NDIM {
        return Err(format!("a shape of {n} dimensions exceeds oxnet's {}", abi::MAX_NDIM));
    }
    let mut s = abi::Shape::UNKNOWN;
    s.ndim = ndim;
    for (k, d) in s.dims[..n].iter_mut().enumerate() {
        *d = *dims.add(k) as i64;
    }
    *into = s;
    Ok(())
}

unsafe extern "C" fn infer_shape(
    user: *mut c_void,
    attrs: *const abi::Attrs,
    in_shapes: *mut abi::Shape,
    num_in: i32,
    out_shapes: *mut abi::Shape,
    num_out: i32,
    err: *mut abi::Error,
) -> i32 {
    let op = op_of(user);
    if op.infer_shape.is_null() {
        return status(err, Err(no_subgraph_inference("inferShape")));
    }
    let ins = std::slice::from_raw_parts_mut(in_shapes, num_in.max(0) as usize);
    let outs = std::slice::from_raw_parts_mut(out_shapes, num_out.max(0) as usize);
    let r = (|| {
        let mut given = MxShapes::new(ins)?;
        let (mut mod_in, mut mod_dims, mut out, mut out_dims) =
            (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
        let (keys, values, n) = pairs(attrs);
        let f = op.lib.syms.ops.infer_shape;
        let lib = &op.lib;
        lib.call(|| {
            f(
                op.infer_shape,
                keys,
                values,
                n,
                given.ptrs.as_mut_ptr(),
                given.ndims.as_mut_ptr(),
                num_in,
                &mut mod_in,
                &mut mod_dims,
                &mut out,
                &mut out_dims,
                num_out,
            )
        })?;
        // Read everything, then free everything the library allocated.
        let mut result = Ok(());
        if mod_in.is_null() || mod_dims.is_null() || out.is_null() || out_dims.is_null() {
            result = Err("inferShape succeeded but returned no shapes".to_string());
        } else {
            for (i, s) in ins.iter_mut().enumerate() {
                let (p, d) = (*mod_in.add(i), *mod_dims.add(i));
                if d > 0 && result.is_ok() {
                    result = read_shape(p, d, s).map_err(|e| format!("input {i}: {e}"));
                }
                lib.free(p);
            }
            for (i, s) in outs.iter_mut().enumerate() {
                let (p, d) = (*out.add(i), *out_dims.add(i));
                if result.is_ok() {
                    result = read_shape(p, d, s).map_err(|e| format!("output {i}: {e}"));
                }
                lib.free(p);
            }
        }
        for p in [mod_in as *mut c_void, mod_dims as *mut c_void, out as *mut c_void, out_dims as *mut c_void]
        {
            lib.free(p);
        }
        result
    })();
    status(err, r)
}

unsafe extern "C" fn mutate_inputs(
    user: *mut c_void,
    attrs: *const abi::Attrs,
    indices: *mut i32,
    capacity: i32,
    count: *mut i32,
    err: *mut abi::Error,
) -> i32 {
    let op = op_of(user);
    let (keys, values, n) = pairs(attrs);
    let f = op.lib.syms.ops.mutate_inputs;
    let mut got: *mut c_int = std::ptr::null_mut();
    let mut size: c_int = 0;
    let r = op.lib.call(|| f(op.mutate, keys, values, n, &mut got, &mut size)).and_then(|()| {
        let r = if size < 0 || size > capacity || (size > 0 && got.is_null()) {
            Err(format!("mutateInputs gave {size} indices for {capacity} inputs"))
        } else {
            std::ptr::copy_nonoverlapping(got, indices, size as usize);
            *count = size;
            Ok(())
        };
        op.lib.free(got);
        r
    });
    status(err, r)
}

/// Runs one kernel call: MXNet's arguments built from the ABI call's, the
/// library function called through `call`, `add` outputs accumulated.
#[allow(clippy::too_many_arguments)]
unsafe fn compute(
    lib: &MxLibrary,
    inputs: *const abi::DLTensor,
    num_in: i32,
    outputs: *const abi::DLTensor,
    num_out: i32,
    req: *const i32,
    res: *const abi::Resource,
    call: impl FnOnce(RawArgs) -> c_int,
) -> Result<(), String> {
    let mut args = KernelArgs::new(inputs, num_in, outputs, num_out, req, res)?;
    let a = args.raw();
    lib.call(|| call(a))?;
    args.finish(outputs)
}

/// The forward (`BACKWARD` false) or backward kernel of a stateless operator.
unsafe extern "C" fn kernel<const BACKWARD: bool>(
    user: *mut c_void,
    attrs: *const abi::Attrs,
    inputs: *const abi::DLTensor,
    num_in: i32,
    outputs: *const abi::DLTensor,
    num_out: i32,
    req: *const i32,
    res: *const abi::Resource,
    err: *mut abi::Error,
) -> i32 {
    let op = op_of(user);
    let r = (|| {
        let device = res.as_ref().map_or(abi::DLDevice::CPU, |r| r.device);
        let (_, slot) = device_name(device)?;
        let f = if BACKWARD { op.backward[slot] } else { op.forward[slot] };
        if f.is_null() {
            return Err(format!(
                "no {} function for this device",
                if BACKWARD { "backward" } else { "forward" }
            ));
        }
        let (keys, values, n) = pairs(attrs);
        let fcompute = op.lib.syms.ops.fcompute;
        compute(
            &op.lib,
            inputs,
            num_in,
            outputs,
            num_out,
            req,
            res,
            |a| with_tensor_args!(fcompute, a; f, keys, values, n),
        )
    })();
    status(err, r)
}

/// The state of one stateful operator instance: the library's
/// `CustomStatefulOp*`.
struct MxState {
    lib: Arc<MxLibrary>,
    raw: *mut c_void,
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn create_state(
    user: *mut c_void,
    attrs: *const abi::Attrs,
    device: abi::DLDevice,
    in_shapes: *const abi::Shape,
    in_types: *const i32,
    num_in: i32,
    out: *mut abi::State,
    err: *mut abi::Error,
) -> i32 {
    let op = op_of(user);
    let r = (|| {
        let (dev, slot) = device_name(device)?;
        let f = op.create_state[slot];
        if f.is_null() {
            return Err("no createOpState function for this device".to_string());
        }
        let shapes =
            if num_in <= 0 { &[][..] } else { std::slice::from_raw_parts(in_shapes, num_in as usize) };
        let mut given = MxShapes::new(shapes)?;
        let (keys, values, n) = pairs(attrs);
        let call = op.lib.syms.ops.create_op_state;
        let mut raw: *mut c_void = std::ptr::null_mut();
        op.lib.call(|| {
            call(
                f,
                keys,
                values,
                n,
                dev,
                device.device_id,
                given.ptrs.as_mut_ptr(),
                given.ndims.as_mut_ptr(),
                num_in,
                in_types,
                &mut raw,
            )
        })?;
        if raw.is_null() {
            return Err("createOpState succeeded but created no state".to_string());
        }
        let state = Box::new(MxState { lib: op.lib.clone(), raw });
        *out = abi::State {
            state: Box::into_raw(state) as *mut c_void,
            forward: Some(state_kernel::<true>),
            backward: Some(state_kernel::<false>),
            destroy: Some(state_destroy),
        };
        Ok(())
    })();
    status(err, r)
}

/// The forward (`FORWARD` true) or backward kernel of a stateful instance.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn state_kernel<const FORWARD: bool>(
    state: *mut c_void,
    inputs: *const abi::DLTensor,
    num_in: i32,
    outputs: *const abi::DLTensor,
    num_out: i32,
    req: *const i32,
    res: *const abi::Resource,
    err: *mut abi::Error,
) -> i32 {
    let st = &*(state as *const MxState);
    let stateful_compute = st.lib.syms.ops.stateful_compute;
    let r = compute(
        &st.lib,
        inputs,
        num_in,
        outputs,
        num_out,
        req,
        res,
        |a| with_tensor_args!(stateful_compute, a; FORWARD as c_int, st.raw),
    );
    status(err, r)
}

unsafe extern "C" fn state_destroy(state: *mut c_void) {
    let st = Box::from_raw(state as *mut MxState);
    let destroy = st.lib.syms.ops.destroy_op_state;
    let raw = st.raw;
    if let Err(e) = st.lib.call_void(|| destroy(raw)) {
        eprintln!("oxnet: warning: the destructor of an MXNet-style operator state failed: {e}");
    }
}
