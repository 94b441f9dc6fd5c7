//! Parameter lists as safetensors files (through the `safetensors` crate).
//!
//! A safetensors file maps names to tensors (dtype, shape, little-endian
//! data) and may carry a string-to-string `__metadata__` map. oxnet writes
//!
//! - a named list under its names, with `oxnet.order` in the metadata: the
//!   names as a JSON list in the list's order (the format itself sorts
//!   tensors by dtype and name), so that a round trip keeps the order;
//! - an unnamed list under the names `0`, `1`, ..., with `oxnet.list` set to
//!   `unnamed`, so that it reads back as an unnamed list.
//!
//! Reading, a file without these notes (one written by another program)
//! gives a named list in the order of the tensors' data in the file.
//! Every oxnet dtype maps to the safetensors one of the same name (`BOOL`,
//! `U8`, `I8`, `I32`, `I64`, `F16`, `BF16`, `F32`, `F64`); tensors of other
//! dtypes (`I16`, `U32`, `F8_E4M3`, ...) are errors that name them.

use super::{array_from_bytes, checked_numel, HostBytes, ParamList};
use ::safetensors::tensor::{Dtype, SafeTensors, View};
use oxnet_core::{DType, Error, NDArray, Result};
use std::borrow::Cow;
use std::collections::HashMap;

/// The metadata key holding a named list's order (a JSON list of names).
pub const ORDER_KEY: &str = "oxnet.order";
/// The metadata key marking an unnamed list (value `unnamed`).
pub const LIST_KEY: &str = "oxnet.list";

/// `list` as safetensors bytes.
pub fn to_bytes(list: &ParamList) -> Result<Vec<u8>> {
    list.check_unique_names()?;
    let (names, info): (Vec<String>, HashMap<String, String>) = match list {
        ParamList::Named(v) => {
            let names: Vec<String> = v.iter().map(|(n, _)| n.clone()).collect();
            let order = serde_json::to_string(&names).map_err(|e| Error::Invalid(e.to_string()))?;
            (names, HashMap::from([(ORDER_KEY.to_string(), order)]))
        }
        ParamList::Unnamed(v) => {
            let names = (0..v.len()).map(|i| i.to_string()).collect();
            (names, HashMap::from([(LIST_KEY.to_string(), "unnamed".to_string())]))
        }
    };
    let mut views = Vec::with_capacity(names.len());
    for (i, (name, a)) in names.iter().zip(list.arrays()).enumerate() {
        let view = TensorBytes::new(a).map_err(|e| Error::Invalid(format!("array {i} (`{name}`): {e}")))?;
        views.push((name.as_str(), view));
    }
    ::safetensors::tensor::serialize(views, Some(info))
        .map_err(|e| Error::Invalid(format!("safetensors: {e}")))
}

/// Parses safetensors bytes. Errors are messages without the file's name.
pub(crate) fn parse(bytes: &[u8]) -> std::result::Result<ParamList, String> {
    let (_, metadata) =
        SafeTensors::read_metadata(bytes).map_err(|e| format!("not a valid safetensors file: {e}"))?;
    let tensors =
        SafeTensors::deserialize(bytes).map_err(|e| format!("not a valid safetensors file: {e}"))?;
    let in_file_order = metadata.offset_keys();
    let notes = metadata.metadata().clone().unwrap_or_default();

    let mut arrays: HashMap<String, NDArray> = HashMap::with_capacity(in_file_order.len());
    for name in &in_file_order {
        let view = tensors.tensor(name).map_err(|e| format!("tensor `{name}`: {e}"))?;
        let dtype = dtype_of(view.dtype()).map_err(|m| format!("tensor `{name}`: {m}"))?;
        checked_numel(view.shape()).map_err(|m| format!("tensor `{name}`: {m}"))?;
        let a = array_from_bytes(view.shape(), dtype, view.data())
            .map_err(|e| format!("tensor `{name}`: {e}"))?;
        arrays.insert(name.clone(), a);
    }

    if notes.get(LIST_KEY).map(String::as_str) == Some("unnamed") {
        let n = arrays.len();
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            match arrays.remove(&i.to_string()) {
                Some(a) => out.push(a),
                None => {
                    return Err(format!(
                        "marked as an unnamed list ({LIST_KEY}), but tensor `{i}` of 0..{n} is missing"
                    ))
                }
            }
        }
        return Ok(ParamList::Unnamed(out));
    }
    let order = notes
        .get(ORDER_KEY)
        .and_then(|text| serde_json::from_str::<Vec<String>>(text).ok())
        .filter(|names| is_permutation(names, &in_file_order))
        .unwrap_or(in_file_order);
    let mut named = Vec::with_capacity(order.len());
    for name in order {
        let a = arrays.remove(&name).ok_or_else(|| format!("tensor `{name}` is missing"))?;
        named.push((name, a));
    }
    Ok(ParamList::Named(named))
}

fn is_permutation(names: &[String], of: &[String]) -> bool {
    let mut a: Vec<&String> = names.iter().collect();
    let mut b: Vec<&String> = of.iter().collect();
    a.sort();
    b.sort();
    a == b
}

/// The safetensors dtype of an oxnet dtype.
fn dtype_to_st(dtype: DType) -> Dtype {
    match dtype {
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::U8 => Dtype::U8,
        DType::I8 => Dtype::I8,
        DType::I32 => Dtype::I32,
        DType::I64 => Dtype::I64,
        DType::Bool => Dtype::BOOL,
    }
}

/// The oxnet dtype of a safetensors dtype.
fn dtype_of(dtype: Dtype) -> std::result::Result<DType, String> {
    Ok(match dtype {
        Dtype::F32 => DType::F32,
        Dtype::F64 => DType::F64,
        Dtype::F16 => DType::F16,
        Dtype::BF16 => DType::BF16,
        Dtype::U8 => DType::U8,
        Dtype::I8 => DType::I8,
        Dtype::I32 => DType::I32,
        Dtype::I64 => DType::I64,
        Dtype::BOOL => DType::Bool,
        other => return Err(format!("dtype {other:?} is not supported by oxnet")),
    })
}

/// One array as a safetensors [`View`].
struct TensorBytes {
    host: HostBytes,
    dtype: Dtype,
    shape: Vec<usize>,
}

impl TensorBytes {
    fn new(a: &NDArray) -> Result<TensorBytes> {
        Ok(TensorBytes { host: HostBytes::new(a)?, dtype: dtype_to_st(a.dtype()), shape: a.shape().to_vec() })
    }
}

impl View for TensorBytes {
    fn dtype(&self) -> Dtype {
        self.dtype
    }

    fn shape(&self) -> &[usize] {
        &self.shape
    }

    fn data(&self) -> Cow<'_, [u8]> {
        self.host.bytes()
    }

    fn data_len(&self) -> usize {
        self.shape.iter().product::<usize>() * self.dtype.bitsize() / 8
    }
}
