//! The attributes of `topk`, `sort` and `argsort`, and the layout they
//! give a call: which axis is sorted (or the flattened array), how many
//! elements are kept, and the output shapes, as MXNet 1.9.1's
//! `ParseTopKParam` decides them.

use oxnet_core::attrs::Attrs;
use oxnet_core::shape::{normalize_axis, Shape};
use oxnet_core::{AttrKind, AttrSpec, DType, Error, OpDef, Result};

/// What `topk` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RetTyp {
    /// The top `k` values.
    Value,
    /// Their positions along the axis.
    Indices,
    /// An array shaped like the input with 1 at the top `k` positions, 0 elsewhere.
    Mask,
    /// Values and positions (two outputs).
    Both,
}

/// The parsed attributes of one call (sort and argsort are `topk` with
/// every element kept).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TopK {
    /// The axis, or `None` for the flattened array.
    pub axis: Option<i64>,
    /// How many to keep; `k <= 0` keeps all.
    pub k: i64,
    pub ret: RetTyp,
    pub ascend: bool,
    /// The dtype of index outputs.
    pub dtype: DType,
}

/// The index dtypes MXNet accepts for `dtype`.
const INDEX_DTYPES: [DType; 6] = [DType::U8, DType::I32, DType::I64, DType::F16, DType::F32, DType::F64];

/// The `dtype` attribute, checked against MXNet's choices.
fn index_dtype(attrs: &Attrs) -> Result<DType> {
    let dt = attrs.dtype("dtype")?.unwrap_or(DType::F32);
    if !INDEX_DTYPES.contains(&dt) {
        return Err(Error::attr(
            "dtype",
            format!("{dt} cannot hold indices; use one of uint8, int32, int64, float16, float32, float64"),
        ));
    }
    Ok(dt)
}

impl TopK {
    /// `topk`'s attributes.
    pub fn of_topk(attrs: &Attrs) -> Result<TopK> {
        let ret = match attrs.str("ret_typ")? {
            "value" => RetTyp::Value,
            "indices" => RetTyp::Indices,
            "mask" => RetTyp::Mask,
            _ => RetTyp::Both,
        };
        Ok(TopK {
            axis: attrs.opt_int("axis")?,
            k: attrs.int("k")?,
            ret,
            ascend: attrs.bool("is_ascend")?,
            dtype: index_dtype(attrs)?,
        })
    }

    /// `sort`'s attributes: every value, in order.
    pub fn of_sort(attrs: &Attrs) -> Result<TopK> {
        Ok(TopK {
            axis: attrs.opt_int("axis")?,
            k: 0,
            ret: RetTyp::Value,
            ascend: attrs.bool("is_ascend")?,
            dtype: DType::I32,
        })
    }

    /// `argsort`'s attributes: every index, in order.
    pub fn of_argsort(attrs: &Attrs) -> Result<TopK> {
        Ok(TopK {
            axis: attrs.opt_int("axis")?,
            k: 0,
            ret: RetTyp::Indices,
            ascend: attrs.bool("is_ascend")?,
            dtype: index_dtype(attrs)?,
        })
    }

    /// The call's layout on an input of shape `shape`; errors name `op`.
    pub fn layout(&self, shape: &[usize], op: &str) -> Result<Layout> {
        let (outer, n, inner, axis) = match self.axis {
            None => (1, shape.iter().product(), 1, None),
            Some(a) => {
                let ax = normalize_axis(a, shape.len()).map_err(|_| {
                    Error::attr(
                        "axis",
                        format!("{op}: axis {a} is out of range for an input of rank {}", shape.len()),
                    )
                })?;
                (shape[..ax].iter().product(), shape[ax], shape[ax + 1..].iter().product(), Some(ax))
            }
        };
        let k = if self.k <= 0 { n } else { self.k as usize };
        if k > n {
            return Err(Error::attr("k", format!("{op}: k = {k} exceeds the {n} elements to choose from")));
        }
        Ok(Layout { outer, n, inner, k, axis })
    }
}

/// Where the sorted elements of a call lie: `outer * inner` lines of `n`
/// elements, line `(o, i)` at `(o * n + j) * inner + i` for `j < n`, of
/// which the first `k` in order are kept.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    pub outer: usize,
    pub n: usize,
    pub inner: usize,
    pub k: usize,
    /// The normalised axis, `None` when flattened.
    pub axis: Option<usize>,
}

impl Layout {
    /// The number of lines.
    pub fn lines(&self) -> usize {
        self.outer * self.inner
    }

    /// The shape of a value or index output for input shape `shape`.
    pub fn kept_shape(&self, shape: &[usize]) -> Shape {
        match self.axis {
            None => Shape::from_slice(&[self.k]),
            Some(ax) => {
                let mut s = Shape::from_slice(shape);
                s[ax] = self.k;
                s
            }
        }
    }
}

/// Sets `slot` to `want`, or checks that it already is.
pub(crate) fn fill(slot: &mut Option<Shape>, want: Shape, what: &str, op: &str) -> Result<()> {
    match slot {
        Some(have) if *have != want => Err(Error::Shape(format!(
            "{op}: {what} has shape {:?}, expected {:?}",
            have.as_slice(),
            want.as_slice()
        ))),
        _ => {
            *slot = Some(want);
            Ok(())
        }
    }
}

/// Declares the `axis` and `is_ascend` attributes.
pub(crate) fn axis_attrs(def: OpDef, ascend: bool, what: &str) -> OpDef {
    def.attr(AttrSpec::optional(
        "axis",
        AttrKind::OptInt,
        -1i64,
        &format!("Axis along which to {what}; None: the flattened array."),
    ))
    .attr(AttrSpec::optional(
        "is_ascend",
        AttrKind::Bool,
        ascend,
        "Ascending order (smallest first) if true, descending if false.",
    ))
}

/// Declares the `dtype` attribute of index outputs.
pub(crate) fn dtype_attr(def: OpDef) -> OpDef {
    def.attr(AttrSpec::optional(
        "dtype",
        AttrKind::DType,
        DType::F32,
        "DType of the index output: uint8, int32, int64, float16, float32 or float64.",
    ))
}
