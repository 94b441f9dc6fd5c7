//! [`Updater`]: an optimizer together with the states of the parameters it
//! updates (MXNet's `mx.optimizer.Updater`), updating many parameters in
//! one call and saving / restoring states with the update counts.

use super::base::UpdateCounts;
use super::states::StatesBlob;
use super::{all_params, create, create_default, MultKey, Optimizer, SharedOptimizer, State};
use oxnet_core::{autograd, DType, Error, NDArray, Result};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

/// An optimizer and the per-parameter states it updates.
pub struct Updater {
    optimizer: SharedOptimizer,
    states: BTreeMap<usize, State>,
}

/// Locks a shared optimizer, turning a poisoned lock into an error.
pub fn lock(opt: &SharedOptimizer) -> Result<MutexGuard<'_, Box<dyn Optimizer>>> {
    opt.lock()
        .map_err(|_| Error::Invalid("the optimizer panicked during an earlier update and is unusable".into()))
}

fn bad(msg: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("optimizer states: {msg}"))
}

impl Updater {
    /// An updater owning `optimizer`.
    pub fn new(optimizer: Box<dyn Optimizer>) -> Updater {
        Updater::from_shared(Arc::new(Mutex::new(optimizer)))
    }

    /// An updater of an optimizer shared with its owner (changes to the
    /// optimizer's hyper-parameters, such as `rescale_grad`, apply to the
    /// next update).
    pub fn from_shared(optimizer: SharedOptimizer) -> Updater {
        Updater { optimizer, states: BTreeMap::new() }
    }

    /// The optimizer.
    pub fn optimizer(&self) -> &SharedOptimizer {
        &self.optimizer
    }

    /// The states by parameter index.
    pub fn states(&self) -> &BTreeMap<usize, State> {
        &self.states
    }

    /// Updates parameter `index`'s `weight` from `grad` (MXNet's argument
    /// order), creating its state on first use.
    pub fn update(&mut self, index: usize, grad: &NDArray, weight: &NDArray) -> Result<()> {
        self.update_multi(&[index], std::slice::from_ref(grad), std::slice::from_ref(weight))
    }

    /// Updates several parameters in one call: states are created on first
    /// use, and weights are grouped by dtype, each group handed to the
    /// optimizer's multi-tensor update (one fused operator call for SGD).
    pub fn update_multi(&mut self, indices: &[usize], grads: &[NDArray], weights: &[NDArray]) -> Result<()> {
        if indices.len() != grads.len() || indices.len() != weights.len() {
            return Err(Error::Invalid(format!(
                "update_multi: {} indices, {} gradients and {} weights must be as many",
                indices.len(),
                grads.len(),
                weights.len()
            )));
        }
        let _no_tape = autograd::pause();
        let mut opt = lock(&self.optimizer)?;
        for (k, &i) in indices.iter().enumerate() {
            if grads[k].shape() != weights[k].shape() {
                return Err(Error::Shape(format!(
                    "optimizer `{}`: parameter {i} has weight shape {:?} but gradient shape {:?}",
                    opt.name(),
                    weights[k].shape(),
                    grads[k].shape()
                )));
            }
            if let std::collections::btree_map::Entry::Vacant(slot) = self.states.entry(i) {
                slot.insert(opt.create_state_multi_precision(i, &weights[k])?);
            }
        }
        let mut groups: Vec<(DType, Vec<usize>)> = Vec::new();
        for (k, w) in weights.iter().enumerate() {
            match groups.iter_mut().find(|(d, _)| *d == w.dtype()) {
                Some((_, members)) => members.push(k),
                None => groups.push((w.dtype(), vec![k])),
            }
        }
        for (_, members) in groups {
            let idx: Vec<usize> = members.iter().map(|&k| indices[k]).collect();
            let ws: Vec<NDArray> = members.iter().map(|&k| weights[k].clone()).collect();
            let gs: Vec<NDArray> = members.iter().map(|&k| grads[k].clone()).collect();
            let ss: Vec<&[NDArray]> = idx.iter().map(|i| self.states[i].as_slice()).collect();
            opt.update_multi(&idx, &ws, &gs, &ss)?;
        }
        Ok(())
    }

    /// The states as a flat list of named arrays (`"{index}/{k}"`, sharing
    /// memory with the live states) and the optimizer's update counts.
    pub fn export_states(&self) -> Result<(Vec<(String, NDArray)>, UpdateCounts)> {
        let arrays = self
            .states
            .iter()
            .flat_map(|(i, s)| s.iter().enumerate().map(move |(k, a)| (format!("{i}/{k}"), a.clone())))
            .collect();
        Ok((arrays, lock(&self.optimizer)?.base().counts().clone()))
    }

    /// Replaces every state and the update counts with `arrays` (named as
    /// [`export_states`](Updater::export_states) names them) and `counts`.
    /// Nothing changes when the names are malformed.
    pub fn import_states(&mut self, arrays: Vec<(String, NDArray)>, counts: UpdateCounts) -> Result<()> {
        let states = group_states(arrays)?;
        lock(&self.optimizer)?.base_mut().set_counts(counts);
        self.states = states;
        Ok(())
    }

    /// Serialises the states, the update counts and the optimizer's internal
    /// values; with `dump_optimizer` also its hyper-parameters and
    /// multipliers (MXNet's `get_states(dump_optimizer)`).
    pub fn get_states(&self, dump_optimizer: bool) -> Result<Vec<u8>> {
        let (arrays, counts) = self.export_states()?;
        let opt = lock(&self.optimizer)?;
        let mut meta = json!({
            "optimizer": opt.name(),
            "counts": counts_json(&counts),
            "internal": opt.internal_state().iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
        });
        if dump_optimizer {
            let b = opt.base();
            meta["hyper"] = json!({
                "params": all_params(opt.as_ref()).iter().map(|(k, v)| json!([k, v.to_string()])).collect::<Vec<_>>(),
                "lr_mult": mults_json(b.lr_mult()),
                "wd_mult": mults_json(b.wd_mult()),
                "idx2name": b.idx2name().iter().map(|(i, n)| json!([i, n])).collect::<Vec<_>>(),
            });
        }
        drop(opt);
        StatesBlob { arrays, meta }.to_bytes()
    }

    /// Restores what [`get_states`](Updater::get_states) saved: states and
    /// update counts, and the hyper-parameters when they were dumped. The
    /// blob is checked completely first: a corrupt blob, or one saved by
    /// another optimizer, is an error that leaves the updater unchanged.
    pub fn set_states(&mut self, bytes: &[u8]) -> Result<()> {
        let blob = StatesBlob::from_bytes(bytes)?;
        let meta = &blob.meta;
        let saved_by =
            meta.get("optimizer").and_then(Value::as_str).ok_or_else(|| bad("no optimizer name"))?;
        let counts = parse_counts(meta.get("counts").ok_or_else(|| bad("no update counts"))?)?;
        let internal = parse_pairs(meta.get("internal"), "internal")?
            .into_iter()
            .map(|(k, v)| {
                v.as_f64()
                    .map(|v| (k.clone(), v))
                    .ok_or_else(|| bad(format!("internal value `{k}` is not a number")))
            })
            .collect::<Result<Vec<_>>>()?;
        let hyper = match meta.get("hyper") {
            None | Some(Value::Null) => None,
            Some(h) => Some(parse_hyper(saved_by, h)?),
        };
        let states = group_states(blob.arrays)?;
        let mut opt = lock(&self.optimizer)?;
        if opt.name() != saved_by {
            return Err(bad(format!(
                "they were saved by optimizer `{saved_by}`, this updater's is `{}`",
                opt.name()
            )));
        }
        // dry run of everything that parses, on a fresh optimizer of the kind
        let mut probe = match &hyper {
            Some(h) => create(saved_by, &h.params)?,
            None => create_default(saved_by)?,
        };
        for (k, v) in &internal {
            probe.set_internal_state(k, *v)?;
        }
        if let Some(h) = hyper {
            for (k, v) in &h.params {
                super::set_param(opt.as_mut(), k, v)?;
            }
            let b = opt.base_mut();
            b.set_idx2name(h.idx2name);
            b.set_lr_mult(h.lr_mult);
            b.set_wd_mult(h.wd_mult);
        }
        for (k, v) in &internal {
            opt.set_internal_state(k, *v)?;
        }
        opt.base_mut().set_counts(counts);
        drop(opt);
        self.states = states;
        Ok(())
    }
}

/// Groups `"{index}/{k}"` arrays into states, checking the names.
fn group_states(arrays: Vec<(String, NDArray)>) -> Result<BTreeMap<usize, State>> {
    let mut parts: BTreeMap<usize, BTreeMap<usize, NDArray>> = BTreeMap::new();
    for (name, a) in arrays {
        let parsed = name
            .split_once('/')
            .and_then(|(i, k)| Some((i.parse::<usize>().ok()?, k.parse::<usize>().ok()?)));
        let Some((i, k)) = parsed else {
            return Err(bad(format!("array name `{name}` is not `<index>/<position>`")));
        };
        if parts.entry(i).or_default().insert(k, a).is_some() {
            return Err(bad(format!("array `{name}` appears twice")));
        }
    }
    let mut states = BTreeMap::new();
    for (i, p) in parts {
        if p.keys().copied().ne(0..p.len()) {
            return Err(bad(format!("the state of parameter {i} has gaps in its positions {:?}", p.keys())));
        }
        states.insert(i, p.into_values().collect());
    }
    Ok(states)
}

fn counts_json(c: &UpdateCounts) -> Value {
    json!({
        "num_update": c.num_update,
        "per_index": c.per_index.iter().map(|(i, n)| json!([i, n])).collect::<Vec<_>>(),
    })
}

/// Parses update counts saved by [`counts_json`].
pub(crate) fn parse_counts(v: &Value) -> Result<UpdateCounts> {
    let num_update = v.get("num_update").and_then(Value::as_u64).ok_or_else(|| bad("bad num_update"))?;
    let mut per_index = BTreeMap::new();
    for e in v.get("per_index").and_then(Value::as_array).ok_or_else(|| bad("bad per-index counts"))? {
        let pair = e.as_array().filter(|p| p.len() == 2).ok_or_else(|| bad("bad per-index count entry"))?;
        let (i, n) = (pair[0].as_u64(), pair[1].as_u64());
        match (i, n) {
            (Some(i), Some(n)) => per_index.insert(i as usize, n),
            _ => return Err(bad("bad per-index count entry")),
        };
    }
    Ok(UpdateCounts { num_update, per_index })
}

fn mults_json(m: &HashMap<MultKey, f64>) -> Vec<Value> {
    let mut entries: Vec<(&MultKey, &f64)> = m.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
        .into_iter()
        .map(|(k, v)| match k {
            MultKey::Index(i) => json!(["i", i, v]),
            MultKey::Name(n) => json!(["n", n, v]),
        })
        .collect()
}

fn parse_mults(v: Option<&Value>) -> Result<HashMap<MultKey, f64>> {
    let mut out = HashMap::new();
    for e in v.and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
        let t = e.as_array().filter(|t| t.len() == 3).ok_or_else(|| bad("bad multiplier entry"))?;
        let value = t[2].as_f64().ok_or_else(|| bad("multiplier is not a number"))?;
        let key = match (t[0].as_str(), &t[1]) {
            (Some("i"), Value::Number(n)) => {
                MultKey::Index(n.as_u64().ok_or_else(|| bad("bad multiplier index"))? as usize)
            }
            (Some("n"), Value::String(s)) => MultKey::Name(s.clone()),
            _ => return Err(bad("bad multiplier key")),
        };
        out.insert(key, value);
    }
    Ok(out)
}

/// `[[key, value], ...]` pairs.
fn parse_pairs<'a>(v: Option<&'a Value>, what: &str) -> Result<Vec<(String, &'a Value)>> {
    let mut out = Vec::new();
    for e in v.and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
        let p = e.as_array().filter(|p| p.len() == 2).ok_or_else(|| bad(format!("bad {what} entry")))?;
        let k = p[0].as_str().ok_or_else(|| bad(format!("bad {what} key")))?;
        out.push((k.to_string(), &p[1]));
    }
    Ok(out)
}

/// Dumped hyper-parameters.
struct Hyper {
    params: Vec<(String, String)>,
    lr_mult: HashMap<MultKey, f64>,
    wd_mult: HashMap<MultKey, f64>,
    idx2name: BTreeMap<usize, String>,
}

fn parse_hyper(opt: &str, h: &Value) -> Result<Hyper> {
    let params = parse_pairs(h.get("params"), "hyper-parameter")?
        .into_iter()
        .map(|(k, v)| {
            v.as_str()
                .map(|s| (k.clone(), s.to_string()))
                .ok_or_else(|| bad(format!("{opt}: `{k}` is not text")))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut idx2name = BTreeMap::new();
    for e in h.get("idx2name").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
        match e.as_array().map(Vec::as_slice) {
            Some([Value::Number(i), Value::String(n)]) if i.as_u64().is_some() => {
                idx2name.insert(i.as_u64().unwrap_or_default() as usize, n.clone());
            }
            _ => return Err(bad("bad idx2name entry")),
        }
    }
    Ok(Hyper {
        params,
        lr_mult: parse_mults(h.get("lr_mult"))?,
        wd_mult: parse_mults(h.get("wd_mult"))?,
        idx2name,
    })
}
