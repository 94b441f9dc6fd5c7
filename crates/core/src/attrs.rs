//! Operator attributes: declared with a kind and a default, handed over as
//! strings (from Python kwargs or C libraries) or typed values, and parsed
//! once per call into [`Attrs`].

use crate::{DType, Error, Result};
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// The type of an attribute.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrKind {
    /// An integer: `3`, `-1`.
    Int,
    /// A float: `0.5`, `1e-3`.
    Float,
    /// A boolean: `True`/`False`, `true`/`false`, `1`/`0`.
    Bool,
    /// Free text.
    Str,
    /// A tuple of integers: `(2, 3)`, `[2,3]`, `4` (one element), `()`.
    Ints,
    /// An integer or `None`.
    OptInt,
    /// A tuple of integers or `None`.
    OptInts,
    /// A dtype name such as `float32`.
    DType,
    /// One of a fixed set of words.
    Choice(Vec<&'static str>),
}

impl fmt::Display for AttrKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttrKind::Int => f.write_str("int"),
            AttrKind::Float => f.write_str("float"),
            AttrKind::Bool => f.write_str("boolean"),
            AttrKind::Str => f.write_str("string"),
            AttrKind::Ints => f.write_str("tuple of int"),
            AttrKind::OptInt => f.write_str("int or None"),
            AttrKind::OptInts => f.write_str("tuple of int or None"),
            AttrKind::DType => f.write_str("dtype"),
            AttrKind::Choice(c) => write!(f, "one of {{{}}}", c.join(", ")),
        }
    }
}

/// A parsed attribute value.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    /// Python's `None`.
    None,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// Text (also the value of a [`AttrKind::Choice`]).
    Str(String),
    /// A tuple of integers.
    Ints(Vec<i64>),
    /// A data type.
    DType(DType),
    /// Not yet parsed: the string form as a user passed it.
    Raw(String),
}

impl From<i64> for AttrValue {
    fn from(v: i64) -> Self {
        AttrValue::Int(v)
    }
}
impl From<i32> for AttrValue {
    fn from(v: i32) -> Self {
        AttrValue::Int(v as i64)
    }
}
impl From<usize> for AttrValue {
    fn from(v: usize) -> Self {
        AttrValue::Int(v as i64)
    }
}
impl From<f64> for AttrValue {
    fn from(v: f64) -> Self {
        AttrValue::Float(v)
    }
}
impl From<f32> for AttrValue {
    fn from(v: f32) -> Self {
        AttrValue::Float(v as f64)
    }
}
impl From<bool> for AttrValue {
    fn from(v: bool) -> Self {
        AttrValue::Bool(v)
    }
}
impl From<&str> for AttrValue {
    fn from(v: &str) -> Self {
        AttrValue::Raw(v.to_string())
    }
}
impl From<String> for AttrValue {
    fn from(v: String) -> Self {
        AttrValue::Raw(v)
    }
}
impl From<&[i64]> for AttrValue {
    fn from(v: &[i64]) -> Self {
        AttrValue::Ints(v.to_vec())
    }
}
impl<const N: usize> From<[i64; N]> for AttrValue {
    fn from(v: [i64; N]) -> Self {
        AttrValue::Ints(v.to_vec())
    }
}
impl From<Vec<i64>> for AttrValue {
    fn from(v: Vec<i64>) -> Self {
        AttrValue::Ints(v)
    }
}
impl From<DType> for AttrValue {
    fn from(v: DType) -> Self {
        AttrValue::DType(v)
    }
}

impl fmt::Display for AttrValue {
    /// The string form MXNet uses (and C plugins receive).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttrValue::None => f.write_str("None"),
            AttrValue::Bool(b) => f.write_str(if *b { "True" } else { "False" }),
            AttrValue::Int(i) => write!(f, "{i}"),
            AttrValue::Float(x) => write!(f, "{x}"),
            AttrValue::Str(s) | AttrValue::Raw(s) => f.write_str(s),
            AttrValue::Ints(v) => {
                let parts: Vec<String> = v.iter().map(|i| i.to_string()).collect();
                if v.len() == 1 {
                    write!(f, "({},)", parts[0])
                } else {
                    write!(f, "({})", parts.join(", "))
                }
            }
            AttrValue::DType(d) => f.write_str(d.name()),
        }
    }
}

/// The declaration of one attribute of an operator.
#[derive(Debug, Clone)]
pub struct AttrSpec {
    /// The keyword name.
    pub name: String,
    /// Its type.
    pub kind: AttrKind,
    /// The default; `None` makes the attribute required.
    pub default: Option<AttrValue>,
    /// One line of documentation.
    pub doc: String,
}

impl AttrSpec {
    /// A required attribute.
    pub fn required(name: &str, kind: AttrKind, doc: &str) -> AttrSpec {
        AttrSpec { name: name.into(), kind, default: None, doc: doc.into() }
    }

    /// An optional attribute with a default value.
    pub fn optional(name: &str, kind: AttrKind, default: impl Into<AttrValue>, doc: &str) -> AttrSpec {
        let default = default.into();
        let default = match default {
            AttrValue::Raw(s) => parse_value(&kind, &s).unwrap_or(AttrValue::Raw(s)),
            v => v,
        };
        AttrSpec { name: name.into(), kind, default: Some(default), doc: doc.into() }
    }
}

fn strip_quotes(s: &str) -> &str {
    let t = s.trim();
    if t.len() >= 2
        && ((t.starts_with('\'') && t.ends_with('\'')) || (t.starts_with('"') && t.ends_with('"')))
    {
        &t[1..t.len() - 1]
    } else {
        t
    }
}

fn parse_int(s: &str) -> std::result::Result<i64, String> {
    let t = s.trim().trim_end_matches('L');
    if let Ok(v) = t.parse::<i64>() {
        return Ok(v);
    }
    match t.parse::<f64>() {
        Ok(f) if f.fract() == 0.0 && f.abs() < 9.0e18 => Ok(f as i64),
        _ => Err(format!("expected an integer, got `{s}`")),
    }
}

/// The items of a tuple as Python writes it: `(2, 3)`, `[2,3]`, `4` (one
/// item), `()` (none); each trimmed, empty ones (a trailing comma) skipped.
pub fn tuple_items(text: &str) -> impl Iterator<Item = &str> {
    let t = text.trim();
    let inner = if (t.starts_with('(') && t.ends_with(')')) || (t.starts_with('[') && t.ends_with(']')) {
        &t[1..t.len() - 1]
    } else {
        t
    };
    inner.split(',').map(str::trim).filter(|p| !p.is_empty())
}

fn parse_ints(s: &str) -> std::result::Result<Vec<i64>, String> {
    tuple_items(s)
        .map(|p| parse_int(p).map_err(|_| format!("expected a tuple of integers, got `{s}`")))
        .collect()
}

fn is_none(s: &str) -> bool {
    matches!(s.trim(), "None" | "none" | "null")
}

/// Parses the string form of a value of `kind`.
pub fn parse_value(kind: &AttrKind, s: &str) -> std::result::Result<AttrValue, String> {
    let s = strip_quotes(s);
    Ok(match kind {
        AttrKind::Int => AttrValue::Int(parse_int(s)?),
        AttrKind::Float => {
            AttrValue::Float(s.parse::<f64>().map_err(|_| format!("expected a number, got `{s}`"))?)
        }
        AttrKind::Bool => match s {
            "True" | "true" | "1" => AttrValue::Bool(true),
            "False" | "false" | "0" => AttrValue::Bool(false),
            _ => return Err(format!("expected True or False, got `{s}`")),
        },
        AttrKind::Str => AttrValue::Str(s.to_string()),
        AttrKind::Ints => AttrValue::Ints(parse_ints(s)?),
        AttrKind::OptInt if is_none(s) => AttrValue::None,
        AttrKind::OptInt => AttrValue::Int(parse_int(s)?),
        AttrKind::OptInts if is_none(s) => AttrValue::None,
        AttrKind::OptInts => AttrValue::Ints(parse_ints(s)?),
        AttrKind::DType if is_none(s) => AttrValue::None,
        AttrKind::DType => AttrValue::DType(DType::from_name(s).map_err(|e| e.to_string())?),
        AttrKind::Choice(options) => {
            if options.contains(&s) {
                AttrValue::Str(s.to_string())
            } else {
                return Err(format!("expected one of {{{}}}, got `{s}`", options.join(", ")));
            }
        }
    })
}

/// Checks a typed value against `kind`, converting where lossless.
fn coerce(kind: &AttrKind, value: AttrValue) -> std::result::Result<AttrValue, String> {
    use AttrValue as V;
    Ok(match (kind, value) {
        (_, V::Raw(s)) => parse_value(kind, &s)?,
        (AttrKind::Int | AttrKind::OptInt, V::Int(i)) => V::Int(i),
        (AttrKind::Int | AttrKind::OptInt, V::Bool(b)) => V::Int(b as i64),
        (AttrKind::Float, V::Float(x)) => V::Float(x),
        (AttrKind::Float, V::Int(i)) => V::Float(i as f64),
        (AttrKind::Bool, V::Bool(b)) => V::Bool(b),
        (AttrKind::Bool, V::Int(i)) if i == 0 || i == 1 => V::Bool(i == 1),
        (AttrKind::Str, v) => V::Str(v.to_string()),
        (AttrKind::Ints | AttrKind::OptInts, V::Ints(v)) => V::Ints(v),
        (AttrKind::Ints | AttrKind::OptInts, V::Int(i)) => V::Ints(vec![i]),
        (AttrKind::OptInt | AttrKind::OptInts, V::None) => V::None,
        (AttrKind::DType, V::DType(d)) => V::DType(d),
        (AttrKind::DType, V::None) => V::None,
        (AttrKind::DType | AttrKind::Choice(_), V::Str(s)) => parse_value(kind, &s)?,
        (kind, v) => return Err(format!("expected {kind}, got `{v}`")),
    })
}

/// An operator's attributes after validation: every declared attribute has a
/// value (given or default); undeclared keys are kept only for operators that
/// accept free-form keywords (such as `Custom`).
#[derive(Clone, Default)]
pub struct Attrs {
    values: Vec<(String, AttrValue)>,
    extra: Vec<(String, String)>,
    prepared: Option<Arc<dyn Any + Send + Sync>>,
}

impl fmt::Debug for Attrs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.to_strings()).finish()
    }
}

impl Attrs {
    /// No attributes.
    pub fn empty() -> Attrs {
        Attrs::default()
    }

    /// Validates `given` against `specs`. As in MXNet, an operator that
    /// declares no attributes keeps any it is given without reading them
    /// (`broadcast_maximum(a, b, axis=1)` is valid MXNet code); one that
    /// declares some rejects the unknown ones unless `allow_extra`.
    pub fn parse(specs: &[AttrSpec], allow_extra: bool, given: &[(&str, AttrValue)]) -> Result<Attrs> {
        let allow_extra = allow_extra || specs.is_empty();
        let mut values = Vec::with_capacity(specs.len());
        let mut extra = Vec::new();
        for (key, _) in given {
            if !specs.iter().any(|s| s.name == *key) {
                if allow_extra {
                    continue;
                }
                let known: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
                return Err(Error::attr(*key, format!("unknown attribute (known: {})", known.join(", "))));
            }
        }
        for spec in specs {
            let found = given.iter().rev().find(|(k, _)| *k == spec.name);
            let value = match (found, &spec.default) {
                (Some((_, v)), _) => coerce(&spec.kind, v.clone()).map_err(|m| Error::attr(&spec.name, m))?,
                (None, Some(d)) => d.clone(),
                (None, None) => return Err(Error::attr(&spec.name, "required attribute is missing")),
            };
            values.push((spec.name.clone(), value));
        }
        if allow_extra {
            for (k, v) in given {
                if !specs.iter().any(|s| s.name == *k) {
                    extra.push((k.to_string(), v.to_string()));
                }
            }
        }
        Ok(Attrs { values, extra, prepared: None })
    }

    /// The declared defaults only (required attributes are left out), for
    /// describing an operator without calling it.
    pub fn defaults(specs: &[AttrSpec]) -> Attrs {
        let values = specs.iter().filter_map(|s| s.default.clone().map(|d| (s.name.clone(), d))).collect();
        Attrs { values, extra: Vec::new(), prepared: None }
    }

    /// The value of a declared attribute.
    pub fn get(&self, name: &str) -> Result<&AttrValue> {
        self.values
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
            .ok_or_else(|| Error::attr(name, "not declared by this operator"))
    }

    /// An integer attribute.
    pub fn int(&self, name: &str) -> Result<i64> {
        match self.get(name)? {
            AttrValue::Int(i) => Ok(*i),
            v => Err(Error::attr(name, format!("expected an integer, holds `{v}`"))),
        }
    }

    /// A non-negative integer attribute, as `usize`.
    pub fn usize(&self, name: &str) -> Result<usize> {
        let v = self.int(name)?;
        usize::try_from(v).map_err(|_| Error::attr(name, format!("must be non-negative, got {v}")))
    }

    /// An integer-or-None attribute.
    pub fn opt_int(&self, name: &str) -> Result<Option<i64>> {
        match self.get(name)? {
            AttrValue::None => Ok(None),
            AttrValue::Int(i) => Ok(Some(*i)),
            v => Err(Error::attr(name, format!("expected an integer or None, holds `{v}`"))),
        }
    }

    /// A float attribute.
    pub fn float(&self, name: &str) -> Result<f64> {
        match self.get(name)? {
            AttrValue::Float(x) => Ok(*x),
            AttrValue::Int(i) => Ok(*i as f64),
            v => Err(Error::attr(name, format!("expected a number, holds `{v}`"))),
        }
    }

    /// A boolean attribute.
    pub fn bool(&self, name: &str) -> Result<bool> {
        match self.get(name)? {
            AttrValue::Bool(b) => Ok(*b),
            v => Err(Error::attr(name, format!("expected a boolean, holds `{v}`"))),
        }
    }

    /// A string or choice attribute.
    pub fn str(&self, name: &str) -> Result<&str> {
        match self.get(name)? {
            AttrValue::Str(s) | AttrValue::Raw(s) => Ok(s),
            v => Err(Error::attr(name, format!("expected a string, holds `{v}`"))),
        }
    }

    /// A tuple-of-integers attribute.
    pub fn ints(&self, name: &str) -> Result<&[i64]> {
        match self.get(name)? {
            AttrValue::Ints(v) => Ok(v),
            v => Err(Error::attr(name, format!("expected a tuple of integers, holds `{v}`"))),
        }
    }

    /// A tuple-of-integers-or-None attribute.
    pub fn opt_ints(&self, name: &str) -> Result<Option<&[i64]>> {
        match self.get(name)? {
            AttrValue::None => Ok(None),
            AttrValue::Ints(v) => Ok(Some(v)),
            v => Err(Error::attr(name, format!("expected a tuple of integers, holds `{v}`"))),
        }
    }

    /// A dtype attribute (`None` if the attribute holds None).
    pub fn dtype(&self, name: &str) -> Result<Option<DType>> {
        match self.get(name)? {
            AttrValue::DType(d) => Ok(Some(*d)),
            AttrValue::None => Ok(None),
            v => Err(Error::attr(name, format!("expected a dtype, holds `{v}`"))),
        }
    }

    /// Keywords the operator did not declare, as given (for `Custom`).
    pub fn extra(&self) -> &[(String, String)] {
        &self.extra
    }

    /// Every attribute in string form, declared ones first.
    pub fn to_strings(&self) -> Vec<(String, String)> {
        self.values
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .chain(self.extra.iter().cloned())
            .collect()
    }

    /// The value the operator's `prepare` hook derived from these attributes.
    pub fn prepared<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.prepared.as_ref().and_then(|p| p.downcast_ref::<T>())
    }

    pub(crate) fn set_prepared(&mut self, value: Arc<dyn Any + Send + Sync>) {
        self.prepared = Some(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs() -> Vec<AttrSpec> {
        vec![
            AttrSpec::required("num_hidden", AttrKind::Int, "units"),
            AttrSpec::optional("no_bias", AttrKind::Bool, false, "skip bias"),
            AttrSpec::optional("axis", AttrKind::OptInts, AttrValue::None, "axes"),
            AttrSpec::optional("act_type", AttrKind::Choice(vec!["relu", "tanh"]), "relu", "kind"),
        ]
    }

    #[test]
    fn parses_strings_and_typed_values() {
        let a = Attrs::parse(&specs(), false, &[("num_hidden", "10".into()), ("axis", "(1, -1)".into())])
            .unwrap();
        assert_eq!(a.int("num_hidden").unwrap(), 10);
        assert!(!a.bool("no_bias").unwrap());
        assert_eq!(a.opt_ints("axis").unwrap(), Some(&[1, -1][..]));
        assert_eq!(a.str("act_type").unwrap(), "relu");
        let b = Attrs::parse(
            &specs(),
            false,
            &[("num_hidden", 4i64.into()), ("no_bias", "True".into()), ("axis", 2i64.into())],
        )
        .unwrap();
        assert!(b.bool("no_bias").unwrap());
        assert_eq!(b.opt_ints("axis").unwrap(), Some(&[2][..]));
    }

    #[test]
    fn errors_name_the_attribute() {
        let e = Attrs::parse(&specs(), false, &[]).unwrap_err().to_string();
        assert!(e.contains("num_hidden") && e.contains("missing"), "{e}");
        let e = Attrs::parse(&specs(), false, &[("num_hidden", "ten".into())]).unwrap_err().to_string();
        assert!(e.contains("num_hidden") && e.contains("integer"), "{e}");
        let e = Attrs::parse(&specs(), false, &[("num_hidden", "1".into()), ("bogus", "1".into())])
            .unwrap_err()
            .to_string();
        assert!(e.contains("bogus") && e.contains("unknown"), "{e}");
        let e = Attrs::parse(&specs(), false, &[("num_hidden", "1".into()), ("act_type", "gelu".into())])
            .unwrap_err()
            .to_string();
        assert!(e.contains("act_type") && e.contains("relu"), "{e}");
    }

    #[test]
    fn extras_are_kept_when_allowed() {
        let a = Attrs::parse(&[], true, &[("bias", "0.1".into())]).unwrap();
        assert_eq!(a.extra(), &[("bias".to_string(), "0.1".to_string())]);
        assert_eq!(AttrValue::Ints(vec![2]).to_string(), "(2,)");
    }

    #[test]
    fn an_operator_without_attributes_keeps_whatever_it_is_given() {
        // MXNet 1.9.1: broadcast_maximum(a, b, axis=1) runs and writes "axis" to JSON
        let a = Attrs::parse(&[], false, &[("axis", "1".into())]).unwrap();
        assert_eq!(a.extra(), &[("axis".to_string(), "1".to_string())]);
        let e =
            Attrs::parse(&specs(), false, &[("num_hidden", "1".into()), ("axs", "1".into())]).unwrap_err();
        assert!(e.to_string().contains("unknown attribute (known: "), "{e}");
    }
}
