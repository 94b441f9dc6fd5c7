//! The input layout shared by the multi-tensor update operators
//! (`multi_sgd_update`, `preloaded_multi_sgd_update`, `_multi_adamw_update`,
//! `_multi_lamb_update`, their momentum and `mp_` forms): one call updates
//! `n` tensors, `n` given by an attribute (`num_weights` or `num_tensors`).
//!
//! Inputs come in one group per tensor (`weight_i, grad_i, ...`, named
//! with the suffix `_i`), then a few trailing inputs shared by all groups
//! (the preloaded SGD's `lrs` and `wds` arrays, AdamW's `rescale_grad`).
//! Output `i` is the new weight `i` and may be the weight's own buffer.
//! Within a group, the first `low` inputs and the output share one dtype
//! (the weight's), the rest are float32 states or master copies; a group's
//! inputs and its output share one shape.

use crate::util::parse_floats;
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::{shape, Shape};
use oxnet_core::{AttrKind, AttrSpec, DType, Error, OpDef, Result};
use std::any::Any;
use std::borrow::Cow;
use std::sync::Arc;

/// Weights of one multi-tensor call whose output may be the weight's own
/// buffer without a temporary (the in-place pairs are declared up front,
/// while the count is an attribute); later ones still work, through a
/// temporary. MXNet's Trainer aggregates at most 60 weights per call.
const IN_PLACE_WEIGHTS: usize = 64;

/// An input after the groups.
#[derive(Clone, Copy)]
pub(super) enum Tail {
    /// A float32 vector with one value per tensor (the preloaded SGD's
    /// `lrs` and `wds`).
    PerTensor(&'static str),
    /// A one-element floating-point array (AdamW's `rescale_grad`).
    Scale(&'static str),
}

impl Tail {
    fn name(self) -> &'static str {
        match self {
            Tail::PerTensor(n) | Tail::Scale(n) => n,
        }
    }
}

/// The layout of one multi-tensor operator.
#[derive(Clone, Copy)]
pub(super) struct Groups {
    /// The attribute holding the number of tensors.
    pub(super) count: &'static str,
    /// The names of a group's inputs (each gets the suffix `_i`).
    pub(super) names: &'static [&'static str],
    /// How many leading inputs of a group share the weight's dtype.
    pub(super) low: usize,
    /// The group-relative indices of the inputs the kernel rewrites.
    pub(super) mutated: &'static [usize],
    /// The inputs after the groups.
    pub(super) tail: &'static [Tail],
}

/// The value of count attribute `name`, at least 1.
pub(super) fn count(attrs: &Attrs, name: &str) -> Result<usize> {
    let n = attrs.int(name)?;
    if n < 1 {
        return Err(Error::attr(name, format!("must be at least 1, got {n}")));
    }
    Ok(n as usize)
}

/// The float tuples `names` (one value per tensor), checked against the
/// count attribute `count_attr`.
pub(super) fn per_tensor<const K: usize>(
    attrs: &Attrs,
    count_attr: &str,
    names: [&str; K],
) -> Result<[Vec<f64>; K]> {
    let n = count(attrs, count_attr)?;
    let mut out: [Vec<f64>; K] = std::array::from_fn(|_| Vec::new());
    for (v, name) in out.iter_mut().zip(names) {
        *v = parse_floats(name, attrs.str(name)?)?;
        if v.len() != n {
            return Err(Error::attr(name, format!("holds {} values for {count_attr} = {n}", v.len())));
        }
    }
    Ok(out)
}

/// The float tuples `names` of a call: the value the operator's `prepare`
/// hook stored (see [`prepare_tuples`]), or parsed now.
pub(super) fn tuples<'a, const K: usize>(
    attrs: &'a Attrs,
    count_attr: &str,
    names: [&str; K],
) -> Result<Cow<'a, [Vec<f64>; K]>> {
    match attrs.prepared::<[Vec<f64>; K]>() {
        Some(p) => Ok(Cow::Borrowed(p)),
        None => per_tensor(attrs, count_attr, names).map(Cow::Owned),
    }
}

/// A `prepare` hook parsing the float tuples `names` once per call.
pub(super) fn prepare_tuples<const K: usize>(
    count_attr: &'static str,
    names: [&'static str; K],
) -> impl Fn(&Attrs) -> Result<Arc<dyn Any + Send + Sync>> + Send + Sync + 'static {
    move |attrs| Ok(Arc::new(per_tensor(attrs, count_attr, names)?))
}

/// A required attribute holding one float per tensor.
pub(super) fn tuple_attr(name: &str, doc: &str) -> AttrSpec {
    AttrSpec::required(name, AttrKind::Str, &format!("{doc}, one per tensor (a tuple of floats)."))
}

impl Groups {
    /// Inputs per group.
    pub(super) fn stride(&self) -> usize {
        self.names.len()
    }

    /// The number of tensors of a call.
    pub(super) fn n(&self, attrs: &Attrs) -> Result<usize> {
        count(attrs, self.count)
    }

    /// An operator with this layout: the count attribute (default 1), the
    /// argument and output names, the mutated inputs, the in-place pairs and
    /// shape and dtype inference. The caller adds the other attributes and
    /// the kernel.
    pub(super) fn def(self, name: &str, doc: &str) -> OpDef {
        let stride = self.stride();
        let in_place: Vec<(usize, usize)> = (0..IN_PLACE_WEIGHTS).map(|i| (i * stride, i)).collect();
        OpDef::new(name)
            .doc(doc)
            .attr(AttrSpec::optional(self.count, AttrKind::Int, 1i64, "Number of updated weights (tensors)."))
            .inplace(&in_place)
            .arguments_fn(move |attrs| {
                let n = self.n(attrs)?;
                let groups = (0..n).flat_map(|i| self.names.iter().map(move |s| format!("{s}_{i}")));
                Ok(groups.chain(self.tail.iter().map(|t| t.name().to_string())).collect())
            })
            .outputs_fn(move |attrs| Ok((0..self.n(attrs)?).map(|i| format!("output_{i}")).collect()))
            .arity_fn(move |attrs| {
                let n = self.n(attrs)?;
                Ok([n * stride + self.tail.len(), 0, n])
            })
            .mutate_inputs(move |attrs| {
                let n = self.n(attrs).unwrap_or(0);
                (0..n).flat_map(|i| self.mutated.iter().map(move |j| i * stride + j)).collect()
            })
            .infer_shape(move |attrs, ins, outs| self.infer_shape(attrs, ins, outs))
            .infer_type(move |attrs, ins, outs| self.infer_type(attrs, ins, outs))
    }

    /// Per-group shapes: each group's inputs and its output share a shape;
    /// the trailing inputs have `n` elements (per tensor) or one (a scale).
    fn infer_shape(
        &self,
        attrs: &Attrs,
        ins: &mut [Option<Shape>],
        outs: &mut [Option<Shape>],
    ) -> Result<()> {
        let (stride, n) = (self.stride(), self.n(attrs)?);
        for (i, out) in outs.iter_mut().enumerate() {
            let group = &mut ins[i * stride..(i + 1) * stride];
            if group.iter().all(|s| s.is_none()) && out.is_none() {
                continue;
            }
            oxnet_core::op::same_shape(&Attrs::empty(), group, std::slice::from_mut(out))
                .map_err(|e| Error::Shape(format!("weight {i}: {e}")))?;
        }
        for (t, slot) in self.tail.iter().zip(&mut ins[n * stride..]) {
            let (want, what) = match t {
                Tail::PerTensor(_) => (n, format!("one value per tensor ({} = {n})", self.count)),
                Tail::Scale(_) => (1, "exactly one element".to_string()),
            };
            match slot {
                Some(s) if s.iter().product::<usize>() != want => {
                    return Err(Error::Shape(format!(
                        "`{}` must hold {what}, got shape {:?}",
                        t.name(),
                        s.as_slice()
                    )))
                }
                Some(_) => {}
                None => *slot = Some(shape(&[want])),
            }
        }
        Ok(())
    }

    /// Per-group dtypes: the first `low` inputs of a group and its output
    /// share a dtype, the rest of the group is float32; the per-tensor
    /// trailing inputs are float32 and a scale is any float type.
    fn infer_type(&self, attrs: &Attrs, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
        let (stride, low, n) = (self.stride(), self.low, self.n(attrs)?);
        for (i, out) in outs.iter_mut().enumerate() {
            let group = &mut ins[i * stride..(i + 1) * stride];
            for (j, d) in group.iter_mut().enumerate().skip(low) {
                force_f32(
                    d,
                    &format!("weight {i}: input {}", i * stride + j),
                    "a float32 state or master copy",
                )?;
            }
            if group[..low].iter().all(|d| d.is_none()) && out.is_none() {
                continue;
            }
            oxnet_core::op::same_dtype(&Attrs::empty(), &mut group[..low], std::slice::from_mut(out))
                .map_err(|e| Error::DType(format!("weight {i}: {e}")))?;
        }
        for (t, slot) in self.tail.iter().zip(&mut ins[n * stride..]) {
            match (t, *slot) {
                (Tail::PerTensor(name), _) => force_f32(slot, &format!("`{name}`"), "a float32 vector")?,
                (Tail::Scale(name), Some(d)) if !d.is_float() => {
                    return Err(Error::DType(format!("`{name}` must be a floating-point array, got {d}")))
                }
                (Tail::Scale(_), Some(_)) => {}
                (Tail::Scale(_), None) => *slot = Some(DType::F32),
            }
        }
        Ok(())
    }
}

/// Sets `d` to float32, or errs when it is known to be another dtype.
fn force_f32(d: &mut Option<DType>, what: &str, is: &str) -> Result<()> {
    match *d {
        Some(have) if have != DType::F32 => Err(Error::DType(format!("{what} is {is}, got {have}"))),
        _ => {
            *d = Some(DType::F32);
            Ok(())
        }
    }
}
