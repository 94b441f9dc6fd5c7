//! `_histogram`: counts of the flattened data over bins, numpy's histogram.
//!
//! Either `bin_cnt` equal-width bins over `range` (the data's minimum and
//! maximum when not given), or the edges in the second input `bins`. Each
//! bin is half-open [lo, hi) except the last, which includes its upper edge;
//! values outside the edges are not counted. Outputs: the counts (int64) and
//! the bin edges (the data's dtype).

use crate::shape_ops::set_shape;
use oxnet_core::shape::Shape;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Attrs, DType, Error, OpDef, Result};

const OP: &str = "_histogram";

/// `range` as (lo, hi), when given.
fn range_of(attrs: &Attrs) -> Result<Option<(f64, f64)>> {
    let s = attrs.str("range")?.trim();
    if s.is_empty() || s == "None" {
        return Ok(None);
    }
    let inner = s.trim_start_matches(['(', '[']).trim_end_matches([')', ']']);
    let v: Vec<f64> = inner
        .split(',')
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.parse::<f64>()
                .map_err(|_| Error::attr("range", format!("{OP}: `{p}` is not a number in {s:?}")))
        })
        .collect::<Result<_>>()?;
    match v[..] {
        [lo, hi] if lo <= hi => Ok(Some((lo, hi))),
        [lo, hi] => {
            Err(Error::attr("range", format!("{OP}: the lower end {lo} is above the upper end {hi}")))
        }
        _ => Err(Error::attr("range", format!("{OP}: expected (lower, upper), got {s:?}"))),
    }
}

fn bin_cnt(attrs: &Attrs) -> Result<Option<usize>> {
    match attrs.opt_int("bin_cnt")? {
        None => Ok(None),
        Some(c) if c > 0 => Ok(Some(c as usize)),
        Some(c) => Err(Error::attr("bin_cnt", format!("{OP}: the bin count must be positive, got {c}"))),
    }
}

/// The bin of `v` among sorted `edges` (numpy's rule), if inside.
fn bin_of(v: f64, edges: &[f64]) -> Option<usize> {
    let (lo, hi) = (edges[0], *edges.last()?);
    if !(v >= lo && v <= hi) {
        return None;
    }
    let n = edges.len() - 1;
    if v == hi {
        return Some(n - 1);
    }
    // the last edge not above v
    let i = edges.partition_point(|e| *e <= v);
    Some((i - 1).min(n - 1))
}

pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .doc("Histogram of the flattened data: `bin_cnt` equal-width bins over `range` (default: the data's min and max), or the edges given as the input `bins`. Outputs the counts (int64) and the bin edges.")
            .attr(AttrSpec::optional("bin_cnt", AttrKind::OptInt, AttrValue::None, "Number of bins for uniform case"))
            .attr(AttrSpec::optional("range", AttrKind::Str, "None", "The lower and upper range of the bins. if not provided, range is simply (a.min(), a.max()). values outside the range are ignored."))
            .arguments_fn(|attrs| {
                Ok(if attrs.opt_int("bin_cnt")?.is_some() {
                    vec!["data".into()]
                } else {
                    vec!["data".into(), "bins".into()]
                })
            })
            .outputs(&["hist", "bin_edges"])
            .infer_shape(|attrs, ins, outs| {
                let n = match bin_cnt(attrs)? {
                    Some(c) => c,
                    None => match ins.get(1) {
                        Some(Some(b)) if b.len() == 1 && b[0] >= 2 => b[0] - 1,
                        Some(Some(b)) => {
                            return Err(Error::Shape(format!(
                                "{OP}: bins must be 1-D with at least two edges, got shape {:?}",
                                b.as_slice()
                            )))
                        }
                        _ => return Ok(()),
                    },
                };
                set_shape(&mut outs[0], Shape::from_slice(&[n]), "the counts of histogram")?;
                set_shape(&mut outs[1], Shape::from_slice(&[n + 1]), "the bin edges of histogram")
            })
            .infer_type(|_, ins, outs| {
                outs[0] = Some(DType::I64);
                if let Some(t) = ins[0] {
                    outs[1] = Some(t);
                }
                Ok(())
            })
            .forward(|ctx, ins, outs| {
                let data = ins[0].to_vec::<f64>()?;
                let edges: Vec<f64> = match bin_cnt(ctx.attrs)? {
                    Some(c) => {
                        let (lo, hi) = match range_of(ctx.attrs)? {
                            Some(r) => r,
                            None if data.is_empty() => (0.0, 1.0),
                            None => data.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(*v), b.max(*v))),
                        };
                        // numpy widens an empty range to (lo - 0.5, hi + 0.5)
                        let (lo, hi) = if lo == hi { (lo - 0.5, hi + 0.5) } else { (lo, hi) };
                        (0..=c).map(|i| lo + (hi - lo) * i as f64 / c as f64).collect()
                    }
                    None => {
                        let e = ins[1].to_vec::<f64>()?;
                        if e.windows(2).any(|w| !(w[0] <= w[1])) {
                            return Err(Error::Invalid(format!("{OP}: the bin edges must increase monotonically, got {e:?}")));
                        }
                        e
                    }
                };
                let mut counts = vec![0i64; edges.len() - 1];
                for v in data {
                    if let Some(b) = bin_of(v, &edges) {
                        counts[b] += 1;
                    }
                }
                oxnet_core::store::store(ctx.req[0], &outs[0], &oxnet_core::NDArray::from_vec(counts, outs[0].shape())?)?;
                let e = oxnet_core::NDArray::from_vec(edges, outs[1].shape())?.astype(outs[1].dtype())?;
                oxnet_core::store::store(ctx.req[1], &outs[1], &e)
            }),
    );
}

#[cfg(test)]
mod tests {
    use crate::shape_ops::testutil::*;
    use oxnet_core::{invoke, NDArray};

    #[test]
    fn uniform_and_given_bins() {
        let x = NDArray::from_vec(vec![0.0f64, 1.0, 2.0, 2.0, 3.0, 4.0, 7.0, -1.0], &[2, 4]).unwrap();
        let o = invoke("_histogram", &[&x], &[("bin_cnt", 5i64.into()), ("range", "(0, 5)".into())]).unwrap();
        assert_eq!(o[0].to_vec::<i64>().unwrap(), vec![1, 1, 2, 1, 1]);
        assert_eq!(vals(&o[1]), vec![0., 1., 2., 3., 4., 5.]);
        let bins = NDArray::from_vec(vec![0.0f64, 2.1, 3.0], &[3]).unwrap();
        let o = invoke("_histogram", &[&x, &bins], &[]).unwrap();
        assert_eq!(o[0].to_vec::<i64>().unwrap(), vec![4, 1]);
        // no range: the data's min and max
        let o = invoke("_histogram", &[&x], &[("bin_cnt", 2i64.into())]).unwrap();
        assert_eq!(o[0].to_vec::<i64>().unwrap(), vec![5, 3]);
        assert_eq!(vals(&o[1]), vec![-1., 3., 7.]);
        let e = err_msg(invoke("_histogram", &[&x], &[("bin_cnt", 2i64.into()), ("range", "(3, 1)".into())]));
        assert!(e.contains("range") && e.contains("_histogram"), "{e}");
    }
}
