//! Initializers by name and in MXNet's JSON form: the registry behind
//! [`from_json`], and the writer behind [`super::Initializer::to_json`].

use super::fill::arg_error;
use super::{
    Bilinear, Constant, FactorType, Initializer, LSTMBias, MSRAPrelu, Mixed, Normal, One, OrthoRandType,
    Orthogonal, RandType, Uniform, Xavier, Zero,
};
use oxnet_core::{Error, Result};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// Builds an initializer from its arguments (see [`register`]).
pub type Factory = Arc<dyn Fn(&mut Args) -> Result<Box<dyn Initializer>> + Send + Sync>;

static REGISTRY: RwLock<Option<HashMap<String, Factory>>> = RwLock::new(None);

/// The built-in names (MXNet's registry and its aliases), lower case.
const BUILT_IN: &[&str] = &[
    "zero",
    "zeros",
    "one",
    "ones",
    "constant",
    "uniform",
    "normal",
    "xavier",
    "msraprelu",
    "orthogonal",
    "bilinear",
    "lstmbias",
    "mixed",
];

/// Registers `factory` under `name` (matched case-insensitively), so that
/// [`from_json`] can build it. A name registered twice keeps the last
/// factory; a registered name hides a built-in of the same name.
pub fn register(name: &str, factory: Factory) {
    let mut guard = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    guard.get_or_insert_with(HashMap::new).insert(name.to_lowercase(), factory);
}

/// Every name [`from_json`] accepts, sorted.
pub fn registered_names() -> Vec<String> {
    let guard = REGISTRY.read().unwrap_or_else(|e| e.into_inner());
    let mut names: Vec<String> = BUILT_IN.iter().map(|s| s.to_string()).collect();
    names.extend(guard.iter().flat_map(|m| m.keys().cloned()));
    names.sort();
    names.dedup();
    names
}

/// The keyword arguments of one initializer being built: typed getters with
/// defaults, and errors that name the initializer and the argument.
#[derive(Debug)]
pub struct Args {
    init: String,
    map: Map<String, Value>,
}

impl Args {
    /// Arguments `map` for initializer `init`.
    pub fn new(init: impl Into<String>, map: Map<String, Value>) -> Args {
        Args { init: init.into(), map }
    }

    /// The initializer's name, for messages.
    pub fn init_name(&self) -> &str {
        &self.init
    }

    /// Removes and returns argument `key`, if given (JSON `null` counts as not given).
    pub fn take(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key).filter(|v| !v.is_null())
    }

    /// A number (numeric strings are accepted, as MXNet's `float(...)` does).
    pub fn f64(&mut self, key: &str, default: f64) -> Result<f64> {
        match self.take(key) {
            None => Ok(default),
            Some(Value::Number(n)) => {
                n.as_f64().ok_or_else(|| arg_error(&self.init, key, "number out of range"))
            }
            Some(Value::String(s)) => {
                s.trim().parse().map_err(|_| arg_error(&self.init, key, format!("`{s}` is not a number")))
            }
            Some(Value::Bool(b)) => Ok(f64::from(u8::from(b))),
            Some(other) => Err(arg_error(&self.init, key, format!("expected a number, got {other}"))),
        }
    }

    /// A string.
    pub fn string(&mut self, key: &str, default: &str) -> Result<String> {
        match self.take(key) {
            None => Ok(default.to_string()),
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(arg_error(&self.init, key, format!("expected a string, got {other}"))),
        }
    }

    /// An argument that must be given.
    pub fn required(&mut self, key: &str) -> Result<Value> {
        self.take(key).ok_or_else(|| arg_error(&self.init, key, "missing (it has no default)"))
    }

    /// Errors when arguments are left that no getter took.
    pub fn finish(self) -> Result<()> {
        match self.map.keys().next() {
            None => Ok(()),
            Some(key) => Err(arg_error(&self.init, key, "unexpected argument")),
        }
    }
}

/// Builds an initializer from a spec: MXNet's `dumps()` form
/// `["xavier", {"magnitude": 2}]`, the object form
/// `{"initializer": "xavier", "magnitude": 2}`, or a bare name (`"zeros"`,
/// `"Xavier"`; names are case-insensitive).
pub fn from_json(spec: &str) -> Result<Box<dyn Initializer>> {
    let text = spec.trim();
    if text.starts_with('[') || text.starts_with('{') {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| Error::Invalid(format!("initializer spec `{text}` is not valid JSON: {e}")))?;
        return from_value(&value);
    }
    if text.is_empty() {
        return Err(Error::Invalid("empty initializer name".into()));
    }
    build(text, Map::new())
}

/// Builds an initializer from a parsed spec (any form [`from_json`] takes;
/// a string is parsed as a spec).
pub fn from_value(value: &Value) -> Result<Box<dyn Initializer>> {
    match value {
        Value::String(s) => from_json(s),
        Value::Array(items) => {
            let name = items.first().and_then(Value::as_str).ok_or_else(|| {
                Error::Invalid(format!("initializer spec {value} must start with the initializer's name"))
            })?;
            let kwargs = match items.get(1) {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(m)) => m.clone(),
                Some(other) => {
                    return Err(Error::Invalid(format!(
                        "initializer `{name}`: arguments must be a JSON object, got {other}"
                    )))
                }
            };
            if items.len() > 2 {
                return Err(Error::Invalid(format!(
                    "initializer spec {value} has more than [name, arguments]"
                )));
            }
            build(name, kwargs)
        }
        Value::Object(m) => {
            let mut kwargs = m.clone();
            let name = match kwargs.remove("initializer") {
                Some(Value::String(s)) => s,
                _ => {
                    return Err(Error::Invalid(format!(
                        "initializer spec {value} needs an \"initializer\" key naming the initializer"
                    )))
                }
            };
            build(&name, kwargs)
        }
        other => Err(Error::Invalid(format!("{other} is not an initializer spec"))),
    }
}

fn build(name: &str, kwargs: Map<String, Value>) -> Result<Box<dyn Initializer>> {
    let key = name.trim().to_lowercase();
    let mut args = Args::new(key.clone(), kwargs);
    let user = {
        let guard = REGISTRY.read().unwrap_or_else(|e| e.into_inner());
        guard.as_ref().and_then(|m| m.get(&key).cloned())
    };
    let init = match user {
        Some(factory) => factory(&mut args)?,
        None => build_in(&key, &mut args)?,
    };
    args.finish()?;
    Ok(init)
}

fn build_in(name: &str, a: &mut Args) -> Result<Box<dyn Initializer>> {
    Ok(match name {
        "zero" | "zeros" => Box::new(Zero),
        "one" | "ones" => Box::new(One),
        "constant" => Box::new(Constant::from_json_value(&a.required("value")?)?),
        "uniform" => Box::new(Uniform::new(a.f64("scale", 0.07)?)),
        "normal" => Box::new(Normal::new(a.f64("sigma", 0.01)?)),
        "xavier" => Box::new(Xavier::new(
            RandType::parse(&a.string("rnd_type", "uniform")?)?,
            FactorType::parse(&a.string("factor_type", "avg")?, "xavier")?,
            a.f64("magnitude", 3.0)?,
        )),
        "msraprelu" => Box::new(MSRAPrelu::new(
            FactorType::parse(&a.string("factor_type", "avg")?, "msraprelu")?,
            a.f64("slope", 0.25)?,
        )),
        "orthogonal" => Box::new(Orthogonal::new(
            a.f64("scale", 1.414)?,
            OrthoRandType::parse(&a.string("rand_type", "uniform")?)?,
        )),
        "bilinear" => Box::new(Bilinear),
        "lstmbias" => Box::new(LSTMBias::new(a.f64("forget_bias", 1.0)?)),
        "mixed" => build_mixed(a)?,
        "load" => {
            return Err(Error::Invalid(
                "initializer `load` holds arrays and cannot be built from a name; construct Load directly"
                    .into(),
            ))
        }
        other => {
            return Err(Error::Invalid(format!(
                "unknown initializer `{other}`; known: {}",
                registered_names().join(", ")
            )))
        }
    })
}

fn build_mixed(a: &mut Args) -> Result<Box<dyn Initializer>> {
    let patterns = match a.required("patterns")? {
        Value::Array(items) => items
            .iter()
            .map(|p| {
                p.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| arg_error("mixed", "patterns", "expected strings"))
            })
            .collect::<Result<Vec<_>>>()?,
        other => return Err(arg_error("mixed", "patterns", format!("expected a list, got {other}"))),
    };
    let inits = match a.required("initializers")? {
        Value::Array(items) => items.iter().map(from_value).collect::<Result<Vec<_>>>()?,
        other => return Err(arg_error("mixed", "initializers", format!("expected a list, got {other}"))),
    };
    Ok(Box::new(Mixed::new(&patterns, inits)?))
}

/// A JSON number for `v`, written as an integer when it is one (MXNet's
/// defaults such as `"magnitude": 3` are Python ints).
pub(crate) fn num(v: f64) -> Value {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e15 {
        Value::from(v as i64)
    } else {
        Value::from(v)
    }
}

/// `["name", {kwargs}]` with Python's `json.dumps` spacing.
pub(crate) fn dumps(name: &str, kwargs: &[(String, Value)]) -> String {
    let mut out = String::from("[");
    write_value(&Value::from(name), &mut out);
    out.push_str(", {");
    for (i, (k, v)) in kwargs.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_value(&Value::from(k.as_str()), &mut out);
        out.push_str(": ");
        write_value(v, &mut out);
    }
    out.push_str("}]");
    out
}

fn write_value(v: &Value, out: &mut String) {
    match v {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, item)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(&Value::from(k.as_str()), out);
                out.push_str(": ");
                write_value(item, out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}
