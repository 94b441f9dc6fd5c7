//! Collectives on [`NDArray`]s: sum (or average) in place, broadcast,
//! all-gather, and a cheap check that every rank describes the same call.
//!
//! Arrays of any dtype, layout or device take part. A contiguous host array
//! whose dtype MPI sums goes to the [`Communicator`] as its own memory when
//! it is larger than the fusion threshold or travels alone; smaller ones of
//! one element type are packed into one buffer per threshold's worth and
//! sent as one message (a message costs microseconds whatever its size),
//! and the others (strided, GPU, float16/bfloat16 summed in float32) travel
//! through host copies. `OXNET_FUSION_THRESHOLD` sets the threshold in bytes (64
//! MiB by default; 0 sends each array alone).

use super::{Buffer, Communicator, ElemType};
use oxnet_core::{DType, Device, Error, NDArray, Result};
use std::cell::RefCell;

/// The fusion threshold when `OXNET_FUSION_THRESHOLD` is not set.
pub const DEFAULT_FUSION_THRESHOLD: usize = 64 << 20;

/// The fusion threshold in bytes (`OXNET_FUSION_THRESHOLD`, else
/// [`DEFAULT_FUSION_THRESHOLD`]); an error names a value that is not a
/// byte count.
pub fn fusion_threshold() -> Result<usize> {
    match std::env::var("OXNET_FUSION_THRESHOLD") {
        Err(_) => Ok(DEFAULT_FUSION_THRESHOLD),
        Ok(text) => text.trim().parse().map_err(|_| {
            Error::Invalid(format!(
                "OXNET_FUSION_THRESHOLD is `{text}`; it must be a number of bytes (0 or more)"
            ))
        }),
    }
}

/// How [`allreduce`] combines the ranks' values: each rank's values times
/// `prescale` are summed, the sum divided by the number of ranks when
/// `average`, then multiplied by `postscale` (Horovod's arguments).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reduction {
    /// Divide the sum by the number of ranks.
    pub average: bool,
    /// Factor applied to this rank's values before the sum.
    pub prescale: f64,
    /// Factor applied to the result.
    pub postscale: f64,
}

impl Default for Reduction {
    /// A plain sum.
    fn default() -> Reduction {
        Reduction { average: false, prescale: 1.0, postscale: 1.0 }
    }
}

impl Reduction {
    /// The average over the ranks.
    pub fn average() -> Reduction {
        Reduction { average: true, ..Reduction::default() }
    }
}

/// Sums each of `arrays` elementwise over every rank, in place.
pub fn allreduce_sum(comm: &dyn Communicator, arrays: &[NDArray]) -> Result<()> {
    allreduce(comm, arrays, Reduction::default())
}

/// Combines each of `arrays` over every rank as `how` says, in place.
/// Every rank passes arrays of the same shapes and dtypes in the same order
/// (use [`agree`] where that may not hold). Integer arrays truncate toward
/// zero when scaled; booleans are an error.
pub fn allreduce(comm: &dyn Communicator, arrays: &[NDArray], how: Reduction) -> Result<()> {
    let after = how.postscale / if how.average { comm.size() as f64 } else { 1.0 };
    let mut groups: Vec<(ElemType, Vec<&NDArray>)> = Vec::new();
    for (i, a) in arrays.iter().enumerate() {
        a.check_has_values()?;
        a.check_writable().map_err(|e| Error::Invalid(format!("allreduce: array {i}: {e}")))?;
        let elem = ElemType::summing(a.dtype()).ok_or_else(|| {
            Error::DType(format!("allreduce: array {i} is {}, which cannot be summed", a.dtype()))
        })?;
        match groups.iter_mut().find(|(e, _)| *e == elem) {
            Some((_, list)) => list.push(a),
            None => groups.push((elem, vec![a])),
        }
    }
    if comm.size() == 1 && how.prescale == 1.0 && after == 1.0 {
        return Ok(());
    }
    let threshold = fusion_threshold()?;
    for (elem, group) in groups {
        let mut pack: Vec<&NDArray> = Vec::new();
        let mut pack_bytes = 0;
        for a in group {
            let bytes = a.size() * elem.size();
            if is_direct(a, elem.dtype()) && bytes > threshold {
                reduce_direct(comm, a, elem, how.prescale, after)?;
                continue;
            }
            if !pack.is_empty() && pack_bytes + bytes > threshold {
                reduce_packed(comm, &pack, elem, how.prescale, after)?;
                pack.clear();
                pack_bytes = 0;
            }
            pack.push(a);
            pack_bytes += bytes;
        }
        if !pack.is_empty() {
            reduce_packed(comm, &pack, elem, how.prescale, after)?;
        }
    }
    Ok(())
}

/// Sums one contiguous host array of element type `elem` in its own memory.
fn reduce_direct(
    comm: &dyn Communicator,
    a: &NDArray,
    elem: ElemType,
    before: f64,
    after: f64,
) -> Result<()> {
    let mut buffer = typed_slice(a, elem)?;
    buffer.scale(before);
    comm.allreduce_sum(buffer)?;
    typed_slice(a, elem)?.scale(after);
    Ok(())
}

/// True when `a` can be handed to the communicator as its own memory.
fn is_direct(a: &NDArray, dtype: DType) -> bool {
    a.device().is_host() && a.is_contiguous() && a.dtype() == dtype
}

/// A contiguous host array of element type `elem` as a [`Buffer`].
fn typed_slice(a: &NDArray, elem: ElemType) -> Result<Buffer<'_>> {
    Ok(match elem {
        ElemType::F32 => Buffer::F32(a.as_mut_slice()?),
        ElemType::F64 => Buffer::F64(a.as_mut_slice()?),
        ElemType::I32 => Buffer::I32(a.as_mut_slice()?),
        ElemType::I64 => Buffer::I64(a.as_mut_slice()?),
        ElemType::U8 => Buffer::U8(a.as_mut_slice()?),
        ElemType::I8 => Buffer::I8(a.as_mut_slice()?),
    })
}

thread_local! {
    /// The fusion buffer, kept between calls (MPI moves memory it has seen
    /// before faster): an array's storage, aligned for every element type
    /// and allocated as oxnet-core allocates arrays.
    static FUSION: RefCell<Option<NDArray>> = const { RefCell::new(None) };
}

/// Copies `arrays` (of element type `elem` once converted) into the fusion
/// buffer, sums it over the ranks and copies the results back.
fn reduce_packed(
    comm: &dyn Communicator,
    arrays: &[&NDArray],
    elem: ElemType,
    before: f64,
    after: f64,
) -> Result<()> {
    if let [only] = arrays {
        if is_direct(only, elem.dtype()) {
            // a message of its own: no copies
            return reduce_direct(comm, only, elem, before, after);
        }
    }
    let total: usize = arrays.iter().map(|a| a.size()).sum();
    FUSION.with(|cell| {
        let mut fusion = cell.borrow_mut();
        let need = total * elem.size();
        if fusion.as_ref().is_none_or(|f| f.size() < need) {
            *fusion = Some(NDArray::empty(&[need], DType::U8, Device::Cpu)?);
        }
        let storage = fusion.as_ref().expect("made above");
        let bytes: &mut [u8] = &mut storage.as_mut_slice::<u8>()?[..need];
        let mut at = 0;
        for a in arrays {
            let n = a.size() * elem.size();
            copy_in(a, elem.dtype(), &mut bytes[at..at + n])?;
            at += n;
        }
        let mut buffer = buffer_of(bytes, elem);
        buffer.scale(before);
        comm.allreduce_sum(buffer)?;
        let mut buffer = buffer_of(bytes, elem);
        buffer.scale(after);
        let mut at = 0;
        for a in arrays {
            let n = a.size() * elem.size();
            copy_out(&bytes[at..at + n], a, elem.dtype())?;
            at += n;
        }
        Ok(())
    })
}

/// Aligned bytes as a [`Buffer`] of `elem`.
fn buffer_of(bytes: &mut [u8], elem: ElemType) -> Buffer<'_> {
    match elem {
        ElemType::F32 => Buffer::F32(bytemuck::cast_slice_mut(bytes)),
        ElemType::F64 => Buffer::F64(bytemuck::cast_slice_mut(bytes)),
        ElemType::I32 => Buffer::I32(bytemuck::cast_slice_mut(bytes)),
        ElemType::I64 => Buffer::I64(bytemuck::cast_slice_mut(bytes)),
        ElemType::U8 => Buffer::U8(bytes),
        ElemType::I8 => Buffer::I8(bytemuck::cast_slice_mut(bytes)),
    }
}

/// Writes `a`'s elements, as `dtype`, in row-major order into `out`.
fn copy_in(a: &NDArray, dtype: DType, out: &mut [u8]) -> Result<()> {
    if is_direct(a, dtype) {
        // SAFETY: `a` is contiguous host memory of exactly `out.len()` bytes.
        unsafe { std::ptr::copy_nonoverlapping(a.raw_ptr() as *const u8, out.as_mut_ptr(), out.len()) };
        return Ok(());
    }
    let host = NDArray::empty(a.shape(), dtype, Device::Cpu)?;
    host.assign_from(a)?;
    // SAFETY: `host` is fresh contiguous memory of `out.len()` bytes.
    unsafe { std::ptr::copy_nonoverlapping(host.raw_ptr() as *const u8, out.as_mut_ptr(), out.len()) };
    Ok(())
}

/// Writes the row-major elements in `bytes` (of `dtype`) into `a`,
/// converting to its dtype, layout and device.
fn copy_out(bytes: &[u8], a: &NDArray, dtype: DType) -> Result<()> {
    if is_direct(a, dtype) {
        // SAFETY: `a` is contiguous, writable (checked by the caller) host
        // memory of `bytes.len()` bytes, not the fusion buffer.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), a.raw_ptr(), bytes.len()) };
        return Ok(());
    }
    let host = NDArray::empty(a.shape(), dtype, Device::Cpu)?;
    // SAFETY: `host` is fresh contiguous memory of `bytes.len()` bytes.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), host.raw_ptr(), bytes.len()) };
    a.assign_from(&host)
}

/// Replaces each of `arrays` on every rank by rank `root`'s values. Every
/// rank passes arrays of the same shapes and dtypes in the same order.
pub fn broadcast(comm: &dyn Communicator, arrays: &[NDArray], root: usize) -> Result<()> {
    for (i, a) in arrays.iter().enumerate() {
        a.check_has_values()?;
        a.check_writable().map_err(|e| Error::Invalid(format!("broadcast: array {i}: {e}")))?;
    }
    if comm.size() == 1 {
        return comm.broadcast_bytes(&mut [], root);
    }
    let threshold = fusion_threshold()?;
    let mut pack: Vec<&NDArray> = Vec::new();
    let mut pack_bytes = 0;
    let flush = |pack: &mut Vec<&NDArray>| -> Result<()> {
        if let [only] = pack.as_slice() {
            if is_direct(only, only.dtype()) {
                broadcast_direct(comm, only, root)?;
                pack.clear();
                return Ok(());
            }
        }
        let mut bytes = Vec::with_capacity(pack.iter().map(|a| a.size() * a.dtype().size()).sum());
        for a in pack.iter() {
            let start = bytes.len();
            bytes.resize(start + a.size() * a.dtype().size(), 0);
            copy_in(a, a.dtype(), &mut bytes[start..])?;
        }
        comm.broadcast_bytes(&mut bytes, root)?;
        let mut at = 0;
        for a in pack.iter() {
            let n = a.size() * a.dtype().size();
            copy_out(&bytes[at..at + n], a, a.dtype())?;
            at += n;
        }
        pack.clear();
        Ok(())
    };
    for a in arrays {
        let bytes = a.size() * a.dtype().size();
        if is_direct(a, a.dtype()) && bytes > threshold {
            broadcast_direct(comm, a, root)?;
            continue;
        }
        if !pack.is_empty() && pack_bytes + bytes > threshold {
            flush(&mut pack)?;
            pack_bytes = 0;
        }
        pack.push(a);
        pack_bytes += bytes;
    }
    if !pack.is_empty() {
        flush(&mut pack)?;
    }
    Ok(())
}

/// Broadcasts one contiguous host array in its own memory.
fn broadcast_direct(comm: &dyn Communicator, a: &NDArray, root: usize) -> Result<()> {
    let bytes = a.size() * a.dtype().size();
    // SAFETY: contiguous host memory of `bytes` bytes, checked writable by
    // the caller; no other slice of it is alive.
    let own = unsafe { std::slice::from_raw_parts_mut(a.raw_ptr(), bytes) };
    comm.broadcast_bytes(own, root)
}

/// Every rank's `array` joined along the first axis, in rank order (the
/// first dimensions may differ; the others and the dtype must agree). The
/// result lives on `array`'s device.
pub fn allgather(comm: &dyn Communicator, array: &NDArray) -> Result<NDArray> {
    array.check_has_values()?;
    let shape = array.shape();
    if shape.is_empty() {
        return Err(Error::Shape("allgather needs an array of at least one dimension, not a scalar".into()));
    }
    agree(comm, "allgather", &format!("dtype {} and trailing dimensions {:?}", array.dtype(), &shape[1..]))?;
    let row_bytes = shape[1..].iter().product::<usize>() * array.dtype().size();
    let mut mine = (shape[0] as u64).to_le_bytes().to_vec();
    let start = mine.len();
    mine.resize(start + shape[0] * row_bytes, 0);
    copy_in(array, array.dtype(), &mut mine[start..])?;
    let all = comm.allgather_bytes(&mine)?;
    let mut rows = 0;
    for part in &all {
        let head: [u8; 8] =
            part[..8].try_into().map_err(|_| Error::Invalid("allgather: a short message".into()))?;
        rows += u64::from_le_bytes(head) as usize;
    }
    let mut out_shape = shape.to_vec();
    out_shape[0] = rows;
    let out = NDArray::empty(&out_shape, array.dtype(), Device::Cpu)?;
    let mut at = 0;
    for part in &all {
        let body = &part[8..];
        // SAFETY: the parts' bodies sum to the output's bytes (each rank
        // sent its rows of `row_bytes`, checked equal by `agree`).
        unsafe { std::ptr::copy_nonoverlapping(body.as_ptr(), out.raw_ptr().add(at), body.len()) };
        at += body.len();
    }
    if array.device().is_host() {
        Ok(out)
    } else {
        out.to_device(array.device())
    }
}

/// An error on every rank, naming `what` and the first rank whose
/// `description` differs from rank 0's, unless all ranks pass the same
/// one. Costs one all-gather of 8 bytes when they agree. A description
/// made of items joined by `"; "` is reported by its first differing item.
pub fn agree(comm: &dyn Communicator, what: &str, description: &str) -> Result<()> {
    if comm.size() == 1 {
        return Ok(());
    }
    let digests = comm.allgather_bytes(&fnv1a(description.as_bytes()).to_le_bytes())?;
    if digests.iter().all(|d| *d == digests[0]) {
        return Ok(());
    }
    let all = comm.allgather_bytes(description.as_bytes())?;
    let texts: Vec<String> = all.iter().map(|d| String::from_utf8_lossy(d).into_owned()).collect();
    let rank = texts.iter().position(|t| *t != texts[0]).unwrap_or(0);
    let (mine, theirs): (Vec<&str>, Vec<&str>) =
        (texts[0].split("; ").collect(), texts[rank].split("; ").collect());
    let at = (0..mine.len().max(theirs.len())).find(|&k| mine.get(k) != theirs.get(k)).unwrap_or(0);
    let item = |items: &[&str]| items.get(at).map_or("nothing".to_string(), |s| s.to_string());
    let place = if mine.len() > 1 || theirs.len() > 1 { format!(" (item {at})") } else { String::new() };
    Err(Error::Invalid(format!(
        "{what}: the ranks disagree{place}: rank 0 has {}, rank {rank} has {}",
        item(&mine),
        item(&theirs)
    )))
}

/// The 64-bit FNV-1a hash (stable across processes and builds).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}
