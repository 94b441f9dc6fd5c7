//! [`ParameterCollection`]: parameters by full name, in insertion order
//! (MXNet's `ParameterDict`), and loading named arrays into parameters with
//! every check made before anything changes.
//!
//! ```
//! use oxnet_nn::collection::ParameterCollection;
//! use oxnet_nn::parameter::Parameter;
//!
//! let mut params = ParameterCollection::new();
//! params.insert(Parameter::new("dense0_weight", &[4, 3])).unwrap();
//! params.insert(Parameter::new("dense0_bias", &[4])).unwrap();
//! assert_eq!(params.names(), ["dense0_weight", "dense0_bias"]);
//! assert_eq!(params.select("bias$").unwrap().len(), 1);
//! ```

use crate::io::{self, ParamList};
use crate::parameter::{Parameter, SharedInit};
use oxnet_core::{Error, NDArray, Result};
use std::collections::HashMap;
use std::path::Path;

/// Parameters by full name, in the order they were added.
#[derive(Clone, Default, Debug)]
pub struct ParameterCollection {
    params: Vec<Parameter>,
    index: HashMap<String, usize>,
}

impl ParameterCollection {
    /// An empty collection.
    pub fn new() -> ParameterCollection {
        ParameterCollection::default()
    }

    /// Adds `param` under its name. Adding the same parameter again does
    /// nothing; another parameter under a taken name is an error.
    pub fn insert(&mut self, param: Parameter) -> Result<()> {
        match self.index.get(param.name()) {
            Some(&i) if self.params[i].same(&param) => Ok(()),
            Some(_) => Err(Error::Invalid(format!(
                "two different parameters are named `{}`; give their blocks different prefixes",
                param.name()
            ))),
            None => {
                self.index.insert(param.name().to_string(), self.params.len());
                self.params.push(param);
                Ok(())
            }
        }
    }

    /// Adds every parameter of `other` (see [`ParameterCollection::insert`]).
    pub fn extend(&mut self, other: &ParameterCollection) -> Result<()> {
        other.params.iter().try_for_each(|p| self.insert(p.clone()))
    }

    /// The parameter named `name`.
    pub fn get(&self, name: &str) -> Option<&Parameter> {
        self.index.get(name).map(|&i| &self.params[i])
    }

    /// The parameter named `name`, or an error listing the names.
    pub fn require(&self, name: &str) -> Result<&Parameter> {
        self.get(name).ok_or_else(|| {
            Error::Invalid(format!("no parameter named `{name}` (there are: {})", brief(&self.names())))
        })
    }

    /// True when a parameter is named `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// The number of parameters.
    pub fn len(&self) -> usize {
        self.params.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.params.is_empty()
    }

    /// The names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.params.iter().map(Parameter::name).collect()
    }

    /// The parameters, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Parameter> {
        self.params.iter()
    }

    /// The parameters, in order, as a vector of handles.
    pub fn to_vec(&self) -> Vec<Parameter> {
        self.params.clone()
    }

    /// The parameters whose names match the regular expression `pattern`
    /// (searched anywhere in the name; anchor it with `^...$`), as MXNet's
    /// `collect_params(select)`.
    pub fn select(&self, pattern: &str) -> Result<ParameterCollection> {
        let re = regex::Regex::new(pattern)
            .map_err(|e| Error::Invalid(format!("bad parameter selection pattern `{pattern}`: {e}")))?;
        let mut out = ParameterCollection::new();
        for p in self.params.iter().filter(|p| re.is_match(p.name())) {
            out.insert(p.clone())?;
        }
        Ok(out)
    }

    /// Initialises every parameter (`init` serves those without their own
    /// initializer); parameters already initialised are left alone.
    pub fn initialize(&self, init: &SharedInit) -> Result<()> {
        self.params.iter().try_for_each(|p| p.initialize(init))
    }

    /// Zeroes every gradient.
    pub fn zero_grad(&self) -> Result<()> {
        self.params.iter().try_for_each(Parameter::zero_grad)
    }

    /// Saves the data by full name (without `strip_prefix`, which every name
    /// must start with) in MXNet's `.params` format.
    pub fn save(&self, path: &Path, strip_prefix: &str) -> Result<()> {
        let mut named = Vec::with_capacity(self.params.len());
        for p in &self.params {
            let short = p.name().strip_prefix(strip_prefix).ok_or_else(|| {
                Error::Invalid(format!(
                    "cannot save Parameter `{}` without the prefix `{strip_prefix}` it does not start with",
                    p.name()
                ))
            })?;
            named.push((short.to_string(), p.data()?.copy()?));
        }
        io::save(path, &ParamList::Named(named))
    }

    /// Loads a file written by [`ParameterCollection::save`] (or MXNet's
    /// `ParameterDict.save`; `arg:`/`aux:` key prefixes are dropped),
    /// putting `restore_prefix` before every saved name. Every name, shape
    /// and dtype is checked before any parameter changes.
    pub fn load(&self, path: &Path, restore_prefix: &str, options: LoadOptions) -> Result<()> {
        let arrays = read_named(path)?;
        let arrays = arrays
            .into_iter()
            .map(|(k, v)| {
                let k = k.strip_prefix("arg:").or_else(|| k.strip_prefix("aux:")).unwrap_or(&k).to_string();
                (format!("{restore_prefix}{k}"), v)
            })
            .collect::<Vec<_>>();
        let targets: Vec<(String, Parameter)> =
            self.params.iter().map(|p| (p.name().to_string(), p.clone())).collect();
        load_checked(&targets, &arrays, path, options)
    }
}

impl<'a> IntoIterator for &'a ParameterCollection {
    type Item = &'a Parameter;
    type IntoIter = std::slice::Iter<'a, Parameter>;

    fn into_iter(self) -> Self::IntoIter {
        self.params.iter()
    }
}

/// How strict loading parameters is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Parameters the file lacks keep their values (else an error).
    pub allow_missing: bool,
    /// Arrays the block lacks are skipped (else an error).
    pub ignore_extra: bool,
    /// Arrays of another dtype are converted (else an error).
    pub cast_dtype: bool,
}

/// The named arrays of a parameter file (an error for an unnamed list).
pub(crate) fn read_named(path: &Path) -> Result<Vec<(String, NDArray)>> {
    match io::load(path)? {
        ParamList::Named(v) => Ok(v),
        ParamList::Unnamed(v) if v.is_empty() => Ok(Vec::new()),
        ParamList::Unnamed(_) => Err(Error::Invalid(format!(
            "parameter file `{}` holds arrays without names, not parameters",
            path.display()
        ))),
    }
}

/// Loads `arrays` into `targets` (both keyed by name; a parameter may have
/// several names) after checking every name, shape and dtype, so a failure
/// leaves every parameter as it was.
pub(crate) fn load_checked(
    targets: &[(String, Parameter)],
    arrays: &[(String, NDArray)],
    path: &Path,
    options: LoadOptions,
) -> Result<()> {
    let by_name: HashMap<&str, &Parameter> = targets.iter().map(|(k, p)| (k.as_str(), p)).collect();
    let loaded: HashMap<&str, &NDArray> = arrays.iter().map(|(k, a)| (k.as_str(), a)).collect();
    let file = path.display();
    if !options.allow_missing {
        for (name, p) in targets {
            let present = targets.iter().any(|(k, q)| q.same(p) && loaded.contains_key(k.as_str()));
            if !present {
                return Err(Error::Invalid(format!(
                    "Parameter `{name}` is missing in file `{file}`, which contains parameters: {}",
                    brief(&arrays.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>())
                )));
            }
        }
    }
    if !options.ignore_extra {
        for (name, _) in arrays {
            if !by_name.contains_key(name.as_str()) {
                return Err(Error::Invalid(format!(
                    "Parameter `{name}` loaded from file `{file}` is not present in the block, which contains \
                     parameters: {}",
                    brief(&targets.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>())
                )));
            }
        }
    }
    for (name, arr) in arrays {
        if let Some(p) = by_name.get(name.as_str()) {
            p.check_loadable(arr, options.cast_dtype)
                .map_err(|e| Error::Invalid(format!("file `{file}`: {e}")))?;
        }
    }
    for (name, arr) in arrays {
        if let Some(p) = by_name.get(name.as_str()) {
            p.load_values(arr)?;
        }
    }
    Ok(())
}

/// At most ten names, then how many there are.
pub(crate) fn brief(names: &[&str]) -> String {
    let mut text = names.iter().take(10).copied().collect::<Vec<_>>().join(", ");
    if names.len() > 10 {
        text.push_str(&format!(", ... ({} in all)", names.len()));
    }
    if text.is_empty() {
        text.push_str("none");
    }
    text
}
