//! MXNet's binary NDArray-list format: what `mx.nd.save`,
//! `Block.save_parameters` and `HybridBlock.export` (`-0000.params`) write.
//!
//! Every number is little-endian. A file is
//!
//! | field | type |
//! |---|---|
//! | list magic `0x112` | u64 |
//! | reserved (0) | u64 |
//! | number of arrays | u64 |
//! | the array records | see below |
//! | number of names (0, or the number of arrays) | u64 |
//! | each name: its length in bytes, then its bytes | u64 + bytes |
//!
//! An array record (version 2, or version 3 for numpy shape semantics) is
//!
//! | field | type |
//! |---|---|
//! | magic `0xF993FAC9` (V2) or `0xF993FACA` (V3) | u32 |
//! | storage type: 0 dense, 1 row_sparse, 2 csr | i32 |
//! | (sparse only: the storage shape) | shape |
//! | shape: `ndim`, then `ndim` extents | i32 + i64 each |
//! | context: device type (1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared), device id | i32 + i32 |
//! | dtype flag (MXNet's type code: 0 float32, 1 float64, 2 float16, 3 uint8, 4 int32, 5 int8, 6 int64, 7 bool, 12 bfloat16) | i32 |
//! | (sparse only: per auxiliary array its dtype flag and shape) | |
//! | the elements, row-major | bytes |
//! | (sparse only: the auxiliary arrays' elements) | bytes |
//!
//! In a V2 record `ndim == 0` marks an "empty" MXNet NDArray (no shape, and
//! nothing follows the shape); a V3 record marks that with `ndim == -1` (or
//! an extent of -1), and `ndim == 0` is a 0-d array. MXNet reads V3 records
//! only under `np_shape(True)`.
//!
//! Older records are read too: version 1 (magic `0xF993FAC8`, then the
//! shape as above, context, dtype flag and data: no storage type) and the
//! records before it, which start directly with a u32 `ndim` followed by
//! u32 extents.
//!
//! # What oxnet writes and reads
//!
//! - It writes V2 records, unless some array is 0-d or has a zero extent:
//!   then every record of the file is V3 (a 0-d array in a V2 record is one
//!   that MXNet itself cannot read back), and MXNet loads the file under
//!   `mx.util.np_shape(True)`. The context is always `cpu(0)`.
//! - It reads dense records of every version. A GPU context loads onto the
//!   CPU (as MXNet does on a machine without GPUs). Sparse records, empty
//!   (shape-less) arrays and dtypes oxnet lacks (int16, uint16, uint32,
//!   uint64) are errors that say so. Bool bytes other than 0 read as 1.
//! - Names must be valid UTF-8 and unique. Bytes after the names are
//!   ignored, as MXNet ignores them.

use super::{array_from_bytes, checked_numel, HostBytes, ParamList};
use oxnet_core::{DType, Error, NDArray, Result};
use std::collections::HashSet;
use std::io::Write;

/// The magic number that starts an NDArray-list file (a u64).
pub const LIST_MAGIC: u64 = 0x112;
/// The magic of a version-1 array record (int64 extents, no storage type).
pub const V1_MAGIC: u32 = 0xF993_FAC8;
/// The magic of a version-2 array record (with a storage type).
pub const V2_MAGIC: u32 = 0xF993_FAC9;
/// The magic of a version-3 array record (numpy shape semantics).
pub const V3_MAGIC: u32 = 0xF993_FACA;

/// MXNet's device type code for the CPU.
const DEV_CPU: i32 = 1;
/// The most axes a pre-V1 record may claim before oxnet calls its first
/// word an unknown magic rather than an `ndim`.
const MAX_LEGACY_NDIM: u32 = 32;

/// Writes `list` in MXNet's format. Checks everything first (unique names,
/// arrays with values on the host), so an error leaves `w` untouched.
pub fn write<W: Write + ?Sized>(w: &mut W, list: &ParamList) -> Result<()> {
    list.check_unique_names()?;
    let arrays = list.arrays();
    for (i, a) in arrays.iter().enumerate() {
        a.check_has_values().map_err(|e| in_array(i, list, e))?;
        a.device().ensure_available().map_err(|e| in_array(i, list, e))?;
    }
    let magic = record_magic(&arrays);
    let io = |e: std::io::Error| Error::Invalid(e.to_string());

    w.write_all(&LIST_MAGIC.to_le_bytes()).map_err(io)?;
    w.write_all(&0u64.to_le_bytes()).map_err(io)?;
    w.write_all(&(arrays.len() as u64).to_le_bytes()).map_err(io)?;
    for (i, a) in arrays.iter().enumerate() {
        write_record(w, a, magic).map_err(|e| in_array(i, list, e))?;
    }
    let names = list.names().unwrap_or_default();
    w.write_all(&(names.len() as u64).to_le_bytes()).map_err(io)?;
    for name in names {
        w.write_all(&(name.len() as u64).to_le_bytes()).map_err(io)?;
        w.write_all(name.as_bytes()).map_err(io)?;
    }
    Ok(())
}

/// The record version for these arrays: V3 when one is 0-d or has a zero
/// extent (V2 cannot hold them), else V2.
fn record_magic(arrays: &[&NDArray]) -> u32 {
    if arrays.iter().any(|a| a.ndim() == 0 || a.shape().contains(&0)) {
        V3_MAGIC
    } else {
        V2_MAGIC
    }
}

/// Writes one array record (`magic`: V2 or V3), context `cpu(0)`.
fn write_record<W: Write + ?Sized>(w: &mut W, a: &NDArray, magic: u32) -> Result<()> {
    let host = HostBytes::new(a)?;
    let mut head = Vec::with_capacity(32 + 8 * a.ndim());
    head.extend_from_slice(&magic.to_le_bytes());
    head.extend_from_slice(&0i32.to_le_bytes()); // dense storage
    head.extend_from_slice(&(a.ndim() as i32).to_le_bytes());
    for &d in a.shape() {
        head.extend_from_slice(&(d as i64).to_le_bytes());
    }
    head.extend_from_slice(&DEV_CPU.to_le_bytes());
    head.extend_from_slice(&0i32.to_le_bytes());
    head.extend_from_slice(&(a.dtype() as i32).to_le_bytes());
    let io = |e: std::io::Error| Error::Invalid(e.to_string());
    w.write_all(&head).map_err(io)?;
    w.write_all(&host.bytes()).map_err(io)
}

/// One array as a single record (what MXNet's `NDArray.__getstate__` holds:
/// `MXNDArraySaveRawBytes`).
pub fn array_to_record(a: &NDArray) -> Result<Vec<u8>> {
    a.check_has_values()?;
    a.device().ensure_available()?;
    let mut out = Vec::new();
    write_record(&mut out, a, record_magic(&[a]))?;
    Ok(out)
}

/// The array of a single record, of any version oxnet reads (MXNet's
/// `MXNDArrayLoadFromRawBytes`); a GPU context loads onto the CPU.
pub fn array_from_record(bytes: &[u8]) -> Result<NDArray> {
    let mut r = Reader { bytes, pos: 0 };
    read_array(&mut r).map_err(|msg| Error::Invalid(format!("NDArray record: {msg}")))
}

/// Names array `i` (and its name) in an error from writing it.
fn in_array(i: usize, list: &ParamList, e: Error) -> Error {
    match list.names() {
        Some(names) => Error::Invalid(format!("array {i} (`{}`): {e}", names[i])),
        None => Error::Invalid(format!("array {i}: {e}")),
    }
}

/// Parses a whole file. Errors are messages without the file's name.
pub(crate) fn parse(bytes: &[u8]) -> std::result::Result<ParamList, String> {
    let mut r = Reader { bytes, pos: 0 };
    let magic = r.u64("the list magic")?;
    if magic != LIST_MAGIC {
        return Err(format!(
            "bad magic {magic:#x} at byte 0 (an MXNet NDArray list starts with {LIST_MAGIC:#x})"
        ));
    }
    r.u64("the reserved word")?;
    let count = r.u64("the number of arrays")?;
    // The smallest record oxnet accepts (a pre-V1 one of one axis) has 20 bytes.
    if count > (r.left() / 20) as u64 {
        return Err(format!(
            "truncated or corrupt: the file claims {count} arrays, but only {} bytes follow byte {}",
            r.left(),
            r.pos
        ));
    }
    let mut arrays = Vec::new();
    for i in 0..count as usize {
        let start = r.pos;
        let a = read_array(&mut r).map_err(|msg| format!("array {i} (record at byte {start}): {msg}"))?;
        arrays.push(a);
    }
    let n_names = r.u64("the number of names")?;
    if n_names == 0 {
        return Ok(ParamList::Unnamed(arrays));
    }
    if n_names != count {
        return Err(format!(
            "{n_names} names for {count} arrays at byte {} (a list has no names or one per array)",
            r.pos - 8
        ));
    }
    let mut seen = HashSet::with_capacity(arrays.len());
    let mut named = Vec::with_capacity(arrays.len());
    for (i, a) in arrays.into_iter().enumerate() {
        let start = r.pos;
        let len = r.u64("a name's length").map_err(|m| format!("name {i}: {m}"))?;
        if len > r.left() as u64 {
            return Err(format!(
                "name {i} at byte {start}: its length {len} exceeds the {} bytes left (truncated or corrupt)",
                r.left()
            ));
        }
        let raw = r.take(len as usize, "a name")?;
        let name = std::str::from_utf8(raw)
            .map_err(|e| format!("name {i} at byte {}: invalid UTF-8 ({e})", start + 8))?
            .to_string();
        if !seen.insert(name.clone()) {
            return Err(format!("duplicate name `{name}` (name {i}, at byte {start})"));
        }
        named.push((name, a));
    }
    Ok(ParamList::Named(named))
}

/// Reads one array record.
fn read_array(r: &mut Reader<'_>) -> std::result::Result<NDArray, String> {
    let magic = r.u32("the record's magic")?;
    let shape = match magic {
        V2_MAGIC | V3_MAGIC => {
            let stype = r.i32("the storage type")?;
            match stype {
                0 => {}
                1 | 2 => {
                    let kind = if stype == 1 { "row_sparse" } else { "csr" };
                    return Err(format!(
                        "{kind} storage is not supported (oxnet reads dense arrays; \
                         save it after `.tostype('default')`)"
                    ));
                }
                other => return Err(format!("unknown storage type {other}")),
            }
            read_shape(r, magic == V3_MAGIC)?
        }
        V1_MAGIC => read_shape(r, false)?,
        ndim if ndim <= MAX_LEGACY_NDIM => {
            // A record older than version 1: the magic word is its ndim.
            if ndim == 0 {
                return Err(empty_array_error());
            }
            let mut shape = Vec::with_capacity(ndim as usize);
            for _ in 0..ndim {
                shape.push(r.u32("a pre-V1 extent")? as usize);
            }
            shape
        }
        other => {
            return Err(format!(
                "unknown record magic {other:#x} (expected {V2_MAGIC:#x} or {V3_MAGIC:#x}, \
                 {V1_MAGIC:#x} for version 1, or a small ndim for an older record)"
            ))
        }
    };
    let dev_type = r.i32("the device type")?;
    let _dev_id = r.i32("the device id")?;
    match dev_type {
        1 | 3 | 5 => {}
        // oxnet has no GPU backend: a GPU array loads onto the CPU, as MXNet
        // does on a machine without GPUs.
        2 => {}
        other => {
            return Err(format!("unknown device type {other} (1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared)"))
        }
    }
    let flag = r.i32("the dtype flag")?;
    let dtype = dtype_of_flag(flag)?;
    let numel = checked_numel(&shape)?;
    let n =
        numel.checked_mul(dtype.size()).ok_or_else(|| format!("shape {shape:?} of {dtype} is too large"))?;
    if n > r.left() {
        return Err(format!(
            "truncated at byte {}: the data of shape {shape:?} and dtype {dtype} needs {n} bytes, {} are left",
            r.pos,
            r.left()
        ));
    }
    let data = r.take(n, "the data")?;
    array_from_bytes(&shape, dtype, data).map_err(|e| e.to_string())
}

/// Reads a shape: i32 `ndim`, then i64 extents.
fn read_shape(r: &mut Reader<'_>, np_shape: bool) -> std::result::Result<Vec<usize>, String> {
    let at = r.pos;
    let ndim = r.i32("the shape's ndim")?;
    if ndim == -1 && np_shape {
        return Err(empty_array_error());
    }
    if ndim < 0 {
        return Err(format!("invalid ndim {ndim} at byte {at}"));
    }
    if ndim == 0 && !np_shape {
        return Err(empty_array_error());
    }
    let ndim = ndim as usize;
    if ndim * 8 > r.left() {
        return Err(format!(
            "truncated at byte {}: a shape of {ndim} axes needs {} bytes, {} are left",
            r.pos,
            ndim * 8,
            r.left()
        ));
    }
    let mut shape = Vec::with_capacity(ndim);
    for _ in 0..ndim {
        let at = r.pos;
        let d = r.i64("an extent")?;
        if d == -1 && np_shape {
            return Err(empty_array_error());
        }
        if d < 0 {
            return Err(format!("invalid extent {d} at byte {at}"));
        }
        shape.push(usize::try_from(d).map_err(|_| format!("extent {d} at byte {at} is too large"))?);
    }
    Ok(shape)
}

fn empty_array_error() -> String {
    "the record holds an empty MXNet NDArray (no known shape, no data), which oxnet cannot represent \
     (MXNet 1.x also writes a 0-d array this way without np_shape and then cannot read it back)"
        .to_string()
}

/// The dtype of an MXNet type flag.
fn dtype_of_flag(flag: i32) -> std::result::Result<DType, String> {
    DType::from_code(flag).map_err(|_| match flag {
        8 => "dtype flag 8 (int16) is not supported by oxnet".to_string(),
        9 => "dtype flag 9 (uint16) is not supported by oxnet".to_string(),
        10 => "dtype flag 10 (uint32) is not supported by oxnet".to_string(),
        11 => "dtype flag 11 (uint64) is not supported by oxnet".to_string(),
        other => format!("unknown dtype flag {other}"),
    })
}

/// A cursor over the file's bytes whose reads fail, never panic, past the end.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn left(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn take(&mut self, n: usize, what: &str) -> std::result::Result<&'a [u8], String> {
        if n > self.left() {
            return Err(format!(
                "truncated at byte {}: {what} needs {n} bytes, {} are left",
                self.pos,
                self.left()
            ));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &str) -> std::result::Result<[u8; N], String> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    fn u32(&mut self, what: &str) -> std::result::Result<u32, String> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn i32(&mut self, what: &str) -> std::result::Result<i32, String> {
        Ok(i32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> std::result::Result<u64, String> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn i64(&mut self, what: &str) -> std::result::Result<i64, String> {
        Ok(i64::from_le_bytes(self.array(what)?))
    }
}
