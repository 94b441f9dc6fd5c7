//! `batch_take` (deprecated in MXNet in favour of `pick`): one element of
//! each row, `out[i] = a[i, clip(indices[i])]`. As in MXNet 1.9.1 it has no
//! gradient, so a graph that differentiates through it cannot be bound.

use oxnet_core::store::store_slice;
use oxnet_core::{registry, DType, Error, NDArray, OpContext, OpDef, Result, Shape};

/// Rows of `a` (all axes but the last, merged): there must be one per index.
fn check_shapes(a: &[usize], indices: &[usize]) -> Result<usize> {
    let (Some(&cols), true) = (a.last(), a.len() >= 2) else {
        return Err(Error::Shape(format!("batch_take: `a` must have rank 2 or more, got shape {a:?}")));
    };
    let rows: usize = a[..a.len() - 1].iter().product();
    let n: usize = indices.iter().product();
    if rows != n {
        return Err(Error::Shape(format!(
            "batch_take: `a` of shape {a:?} has {rows} rows (all axes but the last) but `indices` of shape {indices:?} has {n} entries; they must agree"
        )));
    }
    Ok(cols)
}

/// `out[i] = a[i, indices[i]]`, indices truncated and clipped to the row.
fn forward(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let cols = check_shapes(ins[0].shape(), ins[1].shape())?;
    let idx = ins[1].to_vec::<f64>()?;
    oxnet_core::with_numeric_dtype!(ins[0].dtype(), T => {
        let a = ins[0].as_slice::<T>()?;
        let y: Vec<T> = idx
            .iter()
            .enumerate()
            .map(|(row, i)| a[row * cols + (i.trunc().max(0.0) as usize).min(cols - 1)])
            .collect();
        store_slice(ctx.req[0], outs[0].as_mut_slice::<T>()?, &y);
    });
    Ok(())
}

pub(super) fn register() {
    registry::register(
        OpDef::new("batch_take")
            .doc(
                "One element of each row: out[i] = a[i, indices[i]], with `a` seen as rows along its \
                 last axis and the indices clipped to the row. Deprecated in MXNet (use `pick`). \
                 Not differentiable.",
            )
            .arguments(&["a", "indices"])
            .infer_shape(|_, ins, outs| {
                let (Some(a), Some(i)) = (&ins[0], &ins[1]) else { return Ok(()) };
                check_shapes(a, i)?;
                outs[0] = Some(Shape::from_slice(i));
                Ok(())
            })
            .infer_type(|_, ins, outs| {
                if ins[1].is_none() {
                    ins[1] = Some(DType::I32);
                }
                outs[0] = ins[0];
                Ok(())
            })
            .forward(forward),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::{invoke1, NDArray};

    #[test]
    fn takes_one_clipped_element_per_row() {
        // values from MXNet 1.9.1: batch_take(arange(12).reshape(3, 4), [0, 5, -1]) = [0, 7, 8]
        let a = NDArray::from_vec((0..12).map(|v| v as f32).collect(), &[3, 4]).unwrap();
        let i = NDArray::from_vec(vec![0i32, 5, -1], &[3]).unwrap();
        let y = invoke1("batch_take", &[&a, &i], &[]).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![0.0, 7.0, 8.0]);
        let bad = NDArray::from_vec(vec![0i32, 1], &[2]).unwrap();
        let e = invoke1("batch_take", &[&a, &bad], &[]).unwrap_err().to_string();
        assert!(e.contains("3 rows") && e.contains("2 entries"), "{e}");
    }
}
