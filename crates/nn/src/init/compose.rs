//! Initializers built from others: [`Mixed`] (by name pattern) and [`Load`]
//! (from saved arrays, with a fallback).

use super::{InitDesc, Initializer};
use oxnet_core::{Error, NDArray, Result};
use regex::Regex;
use serde_json::Value;
use std::collections::BTreeMap;

/// Picks an initializer by parameter name: the first pattern that matches
/// the start of the name (Python's `re.match`) decides. A name no pattern
/// matches is an error; end the list with `".*"` for a default.
#[derive(Debug)]
pub struct Mixed {
    rules: Vec<(String, Regex, Box<dyn Initializer>)>,
}

impl Mixed {
    /// Pairs `patterns` (regular expressions) with `initializers`, in order.
    pub fn new<S: AsRef<str>>(patterns: &[S], initializers: Vec<Box<dyn Initializer>>) -> Result<Mixed> {
        if patterns.len() != initializers.len() {
            return Err(Error::Invalid(format!(
                "initializer `mixed`: {} patterns but {} initializers",
                patterns.len(),
                initializers.len()
            )));
        }
        let mut rules = Vec::with_capacity(patterns.len());
        for (p, init) in patterns.iter().zip(initializers) {
            let p = p.as_ref();
            let re = Regex::new(&format!("^(?:{p})")).map_err(|e| {
                Error::Invalid(format!("initializer `mixed`, argument `patterns`: bad pattern `{p}`: {e}"))
            })?;
            rules.push((p.to_string(), re, init));
        }
        Ok(Mixed { rules })
    }

    /// The initializer for `name`.
    fn pick(&self, name: &str) -> Result<&dyn Initializer> {
        self.rules.iter().find(|(_, re, _)| re.is_match(name)).map(|(_, _, init)| init.as_ref()).ok_or_else(
            || {
                Error::Invalid(format!(
                    "initializer `mixed`: parameter name `{name}` matches none of the patterns {:?}; \
                 add a \".*\" pattern at the end with a default initializer",
                    self.rules.iter().map(|r| r.0.as_str()).collect::<Vec<_>>()
                ))
            },
        )
    }
}

impl Initializer for Mixed {
    fn name(&self) -> &str {
        "mixed"
    }
    fn kwargs(&self) -> Result<Vec<(String, Value)>> {
        let patterns = self.rules.iter().map(|r| Value::from(r.0.clone())).collect();
        let mut inits = Vec::with_capacity(self.rules.len());
        for (_, _, init) in &self.rules {
            let text = init.to_json()?;
            inits.push(serde_json::from_str(&text).map_err(|e| Error::Invalid(e.to_string()))?);
        }
        Ok(vec![("patterns".into(), Value::Array(patterns)), ("initializers".into(), Value::Array(inits))])
    }
    fn init_weight(&self, desc: &InitDesc, arr: &NDArray) -> Result<()> {
        self.init(desc, arr)
    }
    fn init(&self, desc: &InitDesc, arr: &NDArray) -> Result<()> {
        self.pick(&desc.name)?.init(desc, arr)
    }
    fn init_legacy(&self, name: &str, arr: &NDArray) -> Result<()> {
        self.pick(name)?.init_legacy(name, arr)
    }
}

/// Copies parameters from saved arrays by name (a `.params` file's
/// contents); names missing there go to `default_init`. The prefixes `arg:`
/// and `aux:` of saved names are dropped, as MXNet does.
#[derive(Debug)]
pub struct Load {
    params: BTreeMap<String, NDArray>,
    default_init: Option<Box<dyn Initializer>>,
    verbose: bool,
}

impl Load {
    /// Loads from `params`; `verbose` reports on stderr where each value came from.
    pub fn new(
        params: impl IntoIterator<Item = (String, NDArray)>,
        default_init: Option<Box<dyn Initializer>>,
        verbose: bool,
    ) -> Load {
        let params = params
            .into_iter()
            .map(|(k, v)| match k.strip_prefix("arg:").or_else(|| k.strip_prefix("aux:")) {
                Some(rest) => (rest.to_string(), v),
                None => (k, v),
            })
            .collect();
        Load { params, default_init, verbose }
    }

    /// The saved names (prefixes dropped).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.params.keys().map(String::as_str)
    }

    /// Copies the saved array `name` into `arr`; `Ok(false)` when there is none.
    fn load(&self, name: &str, arr: &NDArray) -> Result<bool> {
        let Some(src) = self.params.get(name) else { return Ok(false) };
        if src.shape() != arr.shape() {
            return Err(Error::Shape(format!(
                "parameter `{name}` cannot be initialized from loading: shape mismatch, target {:?} vs loaded {:?}",
                arr.shape(),
                src.shape()
            )));
        }
        arr.assign_from(src)?;
        if self.verbose {
            eprintln!("Initialized {name} by loading");
        }
        Ok(true)
    }

    fn fallback(&self, name: &str) -> Result<&dyn Initializer> {
        let init = self.default_init.as_deref().ok_or_else(|| {
            Error::Invalid(format!(
                "cannot initialize `{name}`: not found in the loaded parameters and no default initializer was given"
            ))
        })?;
        if self.verbose {
            eprintln!("Initialized {name} by default");
        }
        Ok(init)
    }
}

impl Initializer for Load {
    fn name(&self) -> &str {
        "load"
    }
    fn kwargs(&self) -> Result<Vec<(String, Value)>> {
        Err(Error::Invalid("initializer `load` holds arrays and cannot be serialised".into()))
    }
    fn init_weight(&self, desc: &InitDesc, arr: &NDArray) -> Result<()> {
        self.init(desc, arr)
    }
    fn init(&self, desc: &InitDesc, arr: &NDArray) -> Result<()> {
        if self.load(&desc.name, arr)? {
            return Ok(());
        }
        self.fallback(&desc.name)?.init(desc, arr)
    }
    fn init_legacy(&self, name: &str, arr: &NDArray) -> Result<()> {
        if self.load(name, arr)? {
            return Ok(());
        }
        self.fallback(name)?.init_legacy(name, arr)
    }
}
