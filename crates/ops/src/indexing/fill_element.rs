//! `fill_element_0index`: a copy of a matrix with one element per row
//! replaced, the counterpart of `choose_element_0index` (an alias of
//! `pick`). As in MXNet 1.9.1 it has no gradient.

use oxnet_core::store::store_slice;
use oxnet_core::{registry, Element, Error, NDArray, OpContext, OpDef, Result, Shape};

/// The row length of `lhs` and the checked inputs.
fn check_shapes(lhs: &[usize], mhs: &[usize], rhs: &[usize]) -> Result<()> {
    if lhs.len() != 2 || mhs.len() != 1 || rhs.len() != 1 {
        return Err(Error::Shape(format!(
            "fill_element_0index: needs a 2-d lhs, a 1-d mhs (values) and a 1-d rhs (indices); got shapes {lhs:?}, {mhs:?} and {rhs:?}"
        )));
    }
    if lhs[0] != mhs[0] || mhs[0] != rhs[0] {
        return Err(Error::Shape(format!(
            "fill_element_0index: lhs has {} rows but mhs has {} values and rhs {} indices; they must agree",
            lhs[0], mhs[0], rhs[0]
        )));
    }
    Ok(())
}

/// `out = lhs` with `out[i, rhs[i]] = mhs[i]` for every row `i`; indices are
/// truncated to integers and rows whose index is out of range are left
/// unchanged (as MXNet's kernel, which compares every column with the index).
fn forward(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let [lhs, mhs, rhs] = ins else {
        return Err(Error::Invalid("fill_element_0index takes lhs, mhs and rhs".into()));
    };
    check_shapes(lhs.shape(), mhs.shape(), rhs.shape())?;
    let cols = lhs.shape()[1];
    let vals = mhs.to_vec::<f64>()?;
    let idx = rhs.to_vec::<f64>()?;
    oxnet_core::with_numeric_dtype!(lhs.dtype(), T => {
        let mut y = lhs.as_slice::<T>()?.to_vec();
        for (row, (v, i)) in vals.iter().zip(&idx).enumerate() {
            let col = i.trunc();
            if col >= 0.0 && col < cols as f64 {
                y[row * cols + col as usize] = T::from_f64(*v);
            }
        }
        store_slice(ctx.req[0], outs[0].as_mut_slice::<T>()?, &y);
    });
    Ok(())
}

pub(super) fn register() {
    registry::register(
        OpDef::new("fill_element_0index")
            .doc(
                "Fill one element of each row of the matrix `lhs`: the result is lhs with \
                 out[i, rhs[i]] = mhs[i] (0-based indices in rhs, values in mhs; an index out \
                 of range leaves its row unchanged). Not differentiable.",
            )
            .arguments(&["lhs", "mhs", "rhs"])
            .infer_shape(|_, ins, outs| {
                let (Some(l), Some(m), Some(r)) = (&ins[0], &ins[1], &ins[2]) else {
                    if let Some(l) = &ins[0] {
                        outs[0] = Some(l.clone());
                    }
                    return Ok(());
                };
                check_shapes(l, m, r)?;
                let want: Shape = l.clone();
                match &outs[0] {
                    Some(o) if *o != want => Err(Error::Shape(format!(
                        "fill_element_0index: the output has shape {:?}, expected lhs's {:?}",
                        o.as_slice(),
                        want.as_slice()
                    ))),
                    _ => {
                        outs[0] = Some(want);
                        Ok(())
                    }
                }
            })
            .infer_type(|_, ins, outs| {
                outs[0] = ins[0].or(outs[0]);
                Ok(())
            })
            .forward(forward),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::{invoke1, DType, NDArray};

    #[test]
    fn fills_one_element_per_row() {
        let x = NDArray::zeros(&[3, 4], DType::F32, oxnet_core::Device::Cpu).unwrap();
        let v = NDArray::from_vec(vec![7.0f32, 8., 9.], &[3]).unwrap();
        let i = NDArray::from_vec(vec![1.0f32, 3., 0.], &[3]).unwrap();
        let y = invoke1("fill_element_0index", &[&x, &v, &i], &[]).unwrap();
        #[rustfmt::skip]
        let want = vec![0., 7., 0., 0.,  0., 0., 0., 8.,  9., 0., 0., 0.];
        assert_eq!(y.to_vec::<f32>().unwrap(), want);
        assert_eq!(x.to_vec::<f32>().unwrap(), vec![0.0; 12], "lhs is untouched");
        // out-of-range indices leave their row; fractional ones truncate (as MXNet 1.9.1)
        let i = NDArray::from_vec(vec![5.0f32, -1., 2.7], &[3]).unwrap();
        let y = invoke1("fill_element_0index", &[&x, &v, &i], &[]).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap()[8..], [0., 0., 9., 0.]);
        assert_eq!(y.to_vec::<f32>().unwrap()[..8], [0.0; 8]);
        // integer matrices keep their dtype; indices may be integers
        let xi = NDArray::from_vec(vec![1i64; 4], &[2, 2]).unwrap();
        let vi = NDArray::from_vec(vec![5i64, 6], &[2]).unwrap();
        let ii = NDArray::from_vec(vec![0i32, 1], &[2]).unwrap();
        let y = invoke1("fill_element_0index", &[&xi, &vi, &ii], &[]).unwrap();
        assert_eq!((y.dtype(), y.to_vec::<i64>().unwrap()), (DType::I64, vec![5, 1, 1, 6]));
    }

    #[test]
    fn shape_errors_name_the_operator() {
        let x = NDArray::zeros(&[2, 3], DType::F32, oxnet_core::Device::Cpu).unwrap();
        let three = NDArray::zeros(&[3], DType::F32, oxnet_core::Device::Cpu).unwrap();
        let two = NDArray::zeros(&[2], DType::F32, oxnet_core::Device::Cpu).unwrap();
        let e = invoke1("fill_element_0index", &[&x, &three, &two], &[]).unwrap_err().to_string();
        assert!(e.contains("fill_element_0index") && e.contains("rows"), "{e}");
        let cube = NDArray::zeros(&[2, 2, 3], DType::F32, oxnet_core::Device::Cpu).unwrap();
        let e = invoke1("fill_element_0index", &[&cube, &two, &two], &[]).unwrap_err().to_string();
        assert!(e.contains("2-d"), "{e}");
    }
}
