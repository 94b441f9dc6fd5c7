//! The attributes of a call, as (key, value) strings.

use crate::traits::OpResult;
use std::ffi::CStr;

/// An operator call's attributes: the keyword arguments as strings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attrs {
    pairs: Vec<(String, String)>,
}

impl Attrs {
    /// Attributes from pairs (for tests of an operator outside oxnet).
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Attrs {
        Attrs { pairs: pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect() }
    }

    /// Reads the ABI form.
    ///
    /// # Safety
    /// `a` is NULL or a valid `oxnet_ext_attrs` of the current call.
    pub(crate) unsafe fn from_abi(a: *const crate::abi::Attrs) -> Attrs {
        let mut pairs = Vec::new();
        if let Some(a) = a.as_ref() {
            for i in 0..a.count.max(0) as usize {
                let k = *a.keys.add(i);
                let v = *a.values.add(i);
                if k.is_null() || v.is_null() {
                    continue;
                }
                pairs.push((
                    CStr::from_ptr(k).to_string_lossy().into_owned(),
                    CStr::from_ptr(v).to_string_lossy().into_owned(),
                ));
            }
        }
        Attrs { pairs }
    }

    /// The value of `key`, if given.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The value of `key` parsed as `T`, or `default` when absent; a value
    /// that does not parse is an error naming the key.
    pub fn parse_or<T: std::str::FromStr>(&self, key: &str, default: T) -> OpResult<T> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v.trim().parse().map_err(|_| format!("attribute `{key}`: cannot parse `{v}`")),
        }
    }

    /// Every pair, in the order given.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }
}
