//! The byte format of saved optimizer states (what `Trainer.save_states`
//! writes): named arrays plus a JSON description (update counts, the
//! optimizer's hyper-parameters, anything a face adds).
//!
//! Layout, all integers little-endian:
//!
//! ```text
//! "OXOPTST\0"          8 bytes of magic
//! version              u32 (1)
//! header length        u64
//! header               UTF-8 JSON: {"meta": <any JSON>,
//!                        "arrays": [{"name", "dtype", "shape", "offset", "nbytes"}, ...]}
//! payload              the arrays' elements, row-major, at their offsets
//! ```
//!
//! [`StatesBlob::from_bytes`] checks every length and offset before it
//! allocates anything, so a truncated or corrupted blob is an error that
//! says what is wrong, never a crash.

use oxnet_core::{DType, Device, Error, NDArray, Result};
use serde_json::{json, Value};

const MAGIC: &[u8; 8] = b"OXOPTST\0";
const VERSION: u32 = 1;

/// Named arrays and a JSON description, as saved.
#[derive(Clone)]
pub struct StatesBlob {
    /// The arrays, in order.
    pub arrays: Vec<(String, NDArray)>,
    /// Free-form description (counts, hyper-parameters, ...).
    pub meta: Value,
}

fn bad(msg: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("optimizer states: {msg}"))
}

impl StatesBlob {
    /// A blob whose description is given as JSON text.
    pub fn with_json_meta(arrays: Vec<(String, NDArray)>, meta: &str) -> Result<StatesBlob> {
        let meta =
            serde_json::from_str(meta).map_err(|e| bad(format!("the description is not JSON: {e}")))?;
        Ok(StatesBlob { arrays, meta })
    }

    /// The description as JSON text.
    pub fn meta_json(&self) -> String {
        self.meta.to_string()
    }

    /// Serialises the blob.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut table = Vec::with_capacity(self.arrays.len());
        let mut payload: Vec<u8> = Vec::new();
        for (name, a) in &self.arrays {
            let a = a.contiguous()?;
            a.check_has_values()?;
            let nbytes = a.size() * a.dtype().size();
            table.push(json!({
                "name": name,
                "dtype": a.dtype().name(),
                "shape": a.shape(),
                "offset": payload.len(),
                "nbytes": nbytes,
            }));
            // SAFETY: a contiguous CPU array holds `nbytes` bytes from `raw_ptr`.
            let bytes = unsafe { std::slice::from_raw_parts(a.raw_ptr() as *const u8, nbytes) };
            payload.extend_from_slice(bytes);
        }
        let header = serde_json::to_vec(&json!({ "meta": self.meta, "arrays": table }))
            .map_err(|e| bad(format!("cannot encode the header: {e}")))?;
        let mut out = Vec::with_capacity(20 + header.len() + payload.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(header.len() as u64).to_le_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(&payload);
        Ok(out)
    }

    /// Parses a blob written by [`to_bytes`](StatesBlob::to_bytes).
    pub fn from_bytes(bytes: &[u8]) -> Result<StatesBlob> {
        if bytes.len() < 20 || &bytes[..8] != MAGIC {
            return Err(bad("not an oxnet optimizer-states blob (bad magic or too short)"));
        }
        let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap_or_default());
        if version != VERSION {
            return Err(bad(format!("unsupported version {version} (this build reads {VERSION})")));
        }
        let header_len = u64::from_le_bytes(bytes[12..20].try_into().unwrap_or_default());
        let rest = &bytes[20..];
        if header_len > rest.len() as u64 {
            return Err(bad(format!(
                "header of {header_len} bytes, only {} bytes follow (truncated?)",
                rest.len()
            )));
        }
        let (header, payload) = rest.split_at(header_len as usize);
        let header: Value =
            serde_json::from_slice(header).map_err(|e| bad(format!("corrupt header: {e}")))?;
        let table =
            header.get("arrays").and_then(Value::as_array).ok_or_else(|| bad("header lists no arrays"))?;
        let mut arrays = Vec::with_capacity(table.len());
        for (i, entry) in table.iter().enumerate() {
            arrays.push(read_array(i, entry, payload)?);
        }
        Ok(StatesBlob { arrays, meta: header.get("meta").cloned().unwrap_or(Value::Null) })
    }
}

/// Builds array `i` of the table from the payload, checking every field.
fn read_array(i: usize, entry: &Value, payload: &[u8]) -> Result<(String, NDArray)> {
    let field = |k: &str| entry.get(k).ok_or_else(|| bad(format!("array {i} has no `{k}`")));
    let name =
        field("name")?.as_str().ok_or_else(|| bad(format!("array {i}: name is not text")))?.to_string();
    let dtype_name =
        field("dtype")?.as_str().ok_or_else(|| bad(format!("array `{name}`: dtype is not text")))?;
    let dtype = DType::from_name(dtype_name).map_err(|e| bad(format!("array `{name}`: {e}")))?;
    let shape: Vec<usize> = field("shape")?
        .as_array()
        .ok_or_else(|| bad(format!("array `{name}`: shape is not a list")))?
        .iter()
        .map(|d| d.as_u64().map(|d| d as usize))
        .collect::<Option<_>>()
        .ok_or_else(|| bad(format!("array `{name}`: shape holds a non-integer")))?;
    let offset = field("offset")?.as_u64().ok_or_else(|| bad(format!("array `{name}`: bad offset")))?;
    let nbytes = field("nbytes")?.as_u64().ok_or_else(|| bad(format!("array `{name}`: bad byte count")))?;
    let expected = shape
        .iter()
        .try_fold(dtype.size() as u64, |acc, &d| acc.checked_mul(d as u64))
        .ok_or_else(|| bad(format!("array `{name}`: shape {shape:?} is too large")))?;
    if expected != nbytes {
        return Err(bad(format!(
            "array `{name}`: shape {shape:?} of {dtype} needs {expected} bytes, not {nbytes}"
        )));
    }
    let end = offset.checked_add(nbytes).filter(|&e| e <= payload.len() as u64).ok_or_else(|| {
        bad(format!(
            "array `{name}`: bytes {offset}..+{nbytes} lie outside the {}-byte payload (truncated?)",
            payload.len()
        ))
    })?;
    let a = NDArray::empty(&shape, dtype, Device::Cpu)?;
    let src = &payload[offset as usize..end as usize];
    // SAFETY: the fresh contiguous array holds exactly `nbytes` bytes.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), a.raw_ptr(), src.len()) };
    Ok((name, a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_corruption() {
        let a = NDArray::from_vec(vec![1.0f32, -2.0, 3.5], &[3]).unwrap();
        let b = NDArray::from_vec(vec![7i64], &[1, 1]).unwrap();
        let blob = StatesBlob { arrays: vec![("0/0".into(), a), ("x".into(), b)], meta: json!({"k": 1}) };
        let bytes = blob.to_bytes().unwrap();
        let back = StatesBlob::from_bytes(&bytes).unwrap();
        assert_eq!(back.meta, json!({"k": 1}));
        assert_eq!(back.arrays[0].0, "0/0");
        assert_eq!(back.arrays[0].1.to_vec::<f32>().unwrap(), vec![1.0, -2.0, 3.5]);
        assert_eq!((back.arrays[1].1.shape(), back.arrays[1].1.dtype()), (&[1usize, 1][..], DType::I64));
        for cut in [0, 5, 19, 25, bytes.len() - 1] {
            let e = StatesBlob::from_bytes(&bytes[..cut]).err().unwrap().to_string();
            assert!(e.starts_with("optimizer states:"), "{e}");
        }
        let mut flipped = bytes.clone();
        flipped[20] ^= 0x55; // the header's opening brace
        assert!(StatesBlob::from_bytes(&flipped).is_err());
    }
}
