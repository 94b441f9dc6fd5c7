//! Parameter files: MXNet's binary `.params` format (what `mx.nd.save`,
//! `Block.save_parameters` and `HybridBlock.export` write) and safetensors.
//!
//! A file holds a [`ParamList`]: arrays with names (a `.params` file of a
//! Gluon block, keys such as `0.weight` or `arg:dense0_weight`) or without
//! (`mx.nd.save(fname, [a, b])`).
//!
//! - [`save`] / [`to_bytes`] write MXNet's format ([`mxnet_format`]), which
//!   MXNet 1.x reads back with `mx.nd.load`;
//! - [`save_safetensors`] / [`safetensors_to_bytes`] write safetensors
//!   ([`mod@safetensors`]);
//! - [`load`] / [`from_bytes`] read either, recognising the format from the
//!   content ([`detect_format`]); [`load_safetensors`] insists on safetensors.
//!
//! Files are written atomically: into a temporary file beside the target,
//! renamed over it once complete, so a crash never leaves half a file under
//! the real name. Readers never panic and never trust a size field: every
//! count and length is checked against the bytes left before anything is
//! allocated, and errors name the file and what is wrong with it.
//!
//! ```
//! use oxnet_core::NDArray;
//! use oxnet_nn::io::{self, ParamList};
//!
//! let w = NDArray::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
//! let list = ParamList::Named(vec![("weight".to_string(), w)]);
//! let bytes = io::to_bytes(&list).unwrap();
//! let back = io::from_bytes(&bytes).unwrap();
//! assert_eq!(back.get("weight").unwrap().to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
//! ```

pub mod mxnet_format;
pub mod safetensors;

use oxnet_core::{DType, Device, Error, NDArray, Result};
use std::borrow::Cow;
use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The content of a parameter file: a list of arrays, named or not.
///
/// MXNet's format stores the names after the arrays, all or none; a file
/// with no arrays at all reads back as an empty `Unnamed` list, as in MXNet.
#[derive(Clone)]
pub enum ParamList {
    /// Arrays with their names, in the file's order. Names are unique.
    Named(Vec<(String, NDArray)>),
    /// Arrays without names, in the file's order.
    Unnamed(Vec<NDArray>),
}

impl ParamList {
    /// The number of arrays.
    pub fn len(&self) -> usize {
        match self {
            ParamList::Named(v) => v.len(),
            ParamList::Unnamed(v) => v.len(),
        }
    }

    /// True when the list holds no array.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The arrays, in order.
    pub fn arrays(&self) -> Vec<&NDArray> {
        match self {
            ParamList::Named(v) => v.iter().map(|(_, a)| a).collect(),
            ParamList::Unnamed(v) => v.iter().collect(),
        }
    }

    /// The names, in order, or `None` for an unnamed list.
    pub fn names(&self) -> Option<Vec<&str>> {
        match self {
            ParamList::Named(v) => Some(v.iter().map(|(n, _)| n.as_str()).collect()),
            ParamList::Unnamed(_) => None,
        }
    }

    /// The array named `name` (always `None` for an unnamed list).
    pub fn get(&self, name: &str) -> Option<&NDArray> {
        match self {
            ParamList::Named(v) => v.iter().find(|(n, _)| n == name).map(|(_, a)| a),
            ParamList::Unnamed(_) => None,
        }
    }

    /// Errors when a named list repeats a name.
    pub fn check_unique_names(&self) -> Result<()> {
        if let ParamList::Named(v) = self {
            let mut seen = HashSet::with_capacity(v.len());
            for (name, _) in v {
                if !seen.insert(name.as_str()) {
                    return Err(Error::Invalid(format!("duplicate parameter name `{name}`")));
                }
            }
        }
        Ok(())
    }
}

impl std::fmt::Debug for ParamList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let describe = |a: &NDArray| format!("{}{:?}", a.dtype(), a.shape());
        match self {
            ParamList::Named(v) => f.debug_map().entries(v.iter().map(|(n, a)| (n, describe(a)))).finish(),
            ParamList::Unnamed(v) => f.debug_list().entries(v.iter().map(describe)).finish(),
        }
    }
}

/// The two on-disk formats oxnet reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// MXNet's binary NDArray-list format (`mx.nd.save`, `.params`).
    MXNet,
    /// The safetensors format (8-byte header length, JSON header, raw data).
    Safetensors,
}

/// Recognises a file's format from its first bytes: MXNet's list magic
/// `0x112`, or a safetensors header (a length followed by `{`).
pub fn detect_format(bytes: &[u8]) -> Option<Format> {
    if bytes.len() >= 8 && bytes[..8] == mxnet_format::LIST_MAGIC.to_le_bytes() {
        return Some(Format::MXNet);
    }
    if bytes.len() >= 9 && bytes[8] == b'{' {
        return Some(Format::Safetensors);
    }
    None
}

/// Writes `list` to `path` in MXNet's format, atomically.
pub fn save(path: &Path, list: &ParamList) -> Result<()> {
    write_atomically(path, |w| mxnet_format::write(w, list))
}

/// Reads a parameter file in either format (recognised from its content).
pub fn load(path: &Path) -> Result<ParamList> {
    let bytes = read_file(path)?;
    parse(&bytes, None).map_err(|msg| file_error(path, msg))
}

/// `list` in MXNet's format, as bytes.
pub fn to_bytes(list: &ParamList) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    mxnet_format::write(&mut out, list)?;
    Ok(out)
}

/// Parses a parameter file's bytes in either format (MXNet's
/// `mx.nd.load_frombuffer`).
pub fn from_bytes(bytes: &[u8]) -> Result<ParamList> {
    parse(bytes, None).map_err(|msg| Error::Invalid(format!("parameter buffer: {msg}")))
}

/// Writes `list` to `path` as safetensors, atomically. An unnamed list is
/// stored under the names `0`, `1`, ... with a note that reads it back as
/// unnamed; a named list keeps its order (see [`mod@safetensors`]).
pub fn save_safetensors(path: &Path, list: &ParamList) -> Result<()> {
    let bytes = safetensors::to_bytes(list)?;
    write_atomically(path, |w| w.write_all(&bytes).map_err(|e| Error::Invalid(e.to_string())))
}

/// Reads a safetensors file (an error for any other content).
pub fn load_safetensors(path: &Path) -> Result<ParamList> {
    let bytes = read_file(path)?;
    parse(&bytes, Some(Format::Safetensors)).map_err(|msg| file_error(path, msg))
}

/// `list` as safetensors bytes.
pub fn safetensors_to_bytes(list: &ParamList) -> Result<Vec<u8>> {
    safetensors::to_bytes(list)
}

/// Parses safetensors bytes.
pub fn safetensors_from_bytes(bytes: &[u8]) -> Result<ParamList> {
    parse(bytes, Some(Format::Safetensors))
        .map_err(|msg| Error::Invalid(format!("safetensors buffer: {msg}")))
}

/// Parses `bytes` as `format`, or as the format [`detect_format`] sees.
fn parse(bytes: &[u8], format: Option<Format>) -> std::result::Result<ParamList, String> {
    match format.or_else(|| detect_format(bytes)) {
        Some(Format::MXNet) => mxnet_format::parse(bytes),
        Some(Format::Safetensors) => safetensors::parse(bytes),
        None => Err(not_a_param_file(bytes)),
    }
}

fn not_a_param_file(bytes: &[u8]) -> String {
    if bytes.len() < 8 {
        return format!(
            "not a parameter file: {} bytes, fewer than the 8 of MXNet's list magic or a safetensors header",
            bytes.len()
        );
    }
    let mut head = [0u8; 8];
    head.copy_from_slice(&bytes[..8]);
    format!(
        "not a parameter file: bad magic {:#x} (MXNet's NDArray list starts with {:#x}; \
         a safetensors file with a header length followed by `{{`)",
        u64::from_le_bytes(head),
        mxnet_format::LIST_MAGIC
    )
}

fn file_error(path: &Path, msg: String) -> Error {
    Error::Invalid(format!("parameter file `{}`: {msg}", path.display()))
}

fn read_file(path: &Path) -> Result<Vec<u8>> {
    fs::read(path)
        .map_err(|e| Error::Invalid(format!("cannot read parameter file `{}`: {e}", path.display())))
}

/// Writes through `fill` into a temporary file beside `path`, then renames
/// it to `path`. The temporary file is removed when anything fails; every
/// error names `path`.
fn write_atomically(path: &Path, fill: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let fail =
        |msg: String| Error::Invalid(format!("cannot write parameter file `{}`: {msg}", path.display()));
    let name = path.file_name().ok_or_else(|| fail("the path names no file".into()))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp{}.{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed)));
    let tmp: PathBuf = path.with_file_name(tmp_name);
    let result = (|| {
        let file = fs::File::create(&tmp).map_err(|e| fail(format!("creating a temporary file: {e}")))?;
        let mut w = std::io::BufWriter::new(file);
        fill(&mut w).map_err(|e| fail(e.to_string()))?;
        let file = w.into_inner().map_err(|e| fail(format!("flushing: {}", e.error())))?;
        file.sync_all().map_err(|e| fail(format!("syncing: {e}")))?;
        fs::rename(&tmp, path).map_err(|e| fail(format!("renaming the temporary file: {e}")))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Checks a shape read from a file: its element count (and the strides an
/// array of it gets, where a zero extent counts as one) must fit in memory
/// arithmetic. Returns the element count.
pub(crate) fn checked_numel(shape: &[usize]) -> std::result::Result<usize, String> {
    let mut extent: isize = 1;
    let mut numel: usize = 1;
    for &d in shape {
        let d_isize = isize::try_from(d.max(1)).map_err(|_| format!("shape {shape:?} is too large"))?;
        extent = extent.checked_mul(d_isize).ok_or_else(|| format!("shape {shape:?} is too large"))?;
        numel = numel.saturating_mul(d);
    }
    Ok(numel)
}

/// The bytes of a host array with values, in row-major order and
/// little-endian, borrowed from a contiguous handle onto it.
pub(crate) struct HostBytes {
    array: NDArray,
}

impl HostBytes {
    /// Checks that `a` has values on the host and makes it contiguous.
    pub(crate) fn new(a: &NDArray) -> Result<HostBytes> {
        a.check_has_values()?;
        a.device().ensure_available()?;
        Ok(HostBytes { array: a.contiguous()? })
    }

    /// The bytes.
    pub(crate) fn bytes(&self) -> Cow<'_, [u8]> {
        let a = &self.array;
        let n = a.size() * a.dtype().size();
        // SAFETY: `a` is contiguous, has values on the host and holds `n`
        // bytes from `raw_ptr`; the slice borrows `self`, which keeps `a` alive.
        let bytes = unsafe { std::slice::from_raw_parts(a.raw_ptr() as *const u8, n) };
        if cfg!(target_endian = "big") {
            let mut owned = bytes.to_vec();
            swap_elements(&mut owned, a.dtype().size());
            return Cow::Owned(owned);
        }
        Cow::Borrowed(bytes)
    }
}

/// A new CPU array of `shape` and `dtype` holding little-endian `bytes`
/// (whose length the caller checked). Bool bytes other than 0 become 1.
pub(crate) fn array_from_bytes(shape: &[usize], dtype: DType, bytes: &[u8]) -> Result<NDArray> {
    let a = NDArray::empty(shape, dtype, Device::Cpu)?;
    let n = a.size() * dtype.size();
    if bytes.len() != n {
        return Err(Error::Shape(format!(
            "{} data bytes for an array of shape {shape:?} and dtype {dtype}, which needs {n}",
            bytes.len()
        )));
    }
    // SAFETY: `a` is a fresh contiguous host array of exactly `n` bytes that
    // nothing else references yet.
    let dst = unsafe { std::slice::from_raw_parts_mut(a.raw_ptr(), n) };
    if dtype == DType::Bool {
        for (d, s) in dst.iter_mut().zip(bytes) {
            *d = u8::from(*s != 0);
        }
    } else {
        dst.copy_from_slice(bytes);
        if cfg!(target_endian = "big") {
            swap_elements(dst, dtype.size());
        }
    }
    Ok(a)
}

fn swap_elements(bytes: &mut [u8], size: usize) {
    if size > 1 {
        for chunk in bytes.chunks_exact_mut(size) {
            chunk.reverse();
        }
    }
}
