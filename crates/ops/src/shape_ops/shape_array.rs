//! `shape_array` and `size_array`: an input's shape, and its number of
//! elements, as int64 arrays (zero gradient, as in MXNet).

use oxnet_core::shape::Shape;
use oxnet_core::store::store_slice;
use oxnet_core::{registry, DType, NDArray, OpContext, OpDef, Result};

/// Writes `values` into the int64 output under the request.
fn write(ctx: &OpContext, values: &[i64], outs: &[NDArray]) -> Result<()> {
    store_slice(ctx.req[0], outs[0].as_mut_slice::<i64>()?, values);
    Ok(())
}

fn info_op(
    name: &str,
    doc: &str,
    out_shape: fn(&[usize]) -> Shape,
    values: fn(&[usize]) -> Vec<i64>,
) -> OpDef {
    OpDef::new(name)
        .doc(doc)
        .infer_shape(move |_, ins, outs| {
            if let Some(x) = &ins[0] {
                outs[0] = Some(out_shape(x));
            }
            Ok(())
        })
        .infer_type(|_, _, outs| {
            outs[0] = Some(DType::I64);
            Ok(())
        })
        .accepts_strided()
        .forward(move |ctx, ins, outs| write(ctx, &values(ins[0].shape()), outs))
        .zero_grad()
}

pub(super) fn register() {
    registry::register(info_op(
        "shape_array",
        "The shape of the input as a 1-d int64 array.",
        |s| Shape::from_slice(&[s.len()]),
        |s| s.iter().map(|d| *d as i64).collect(),
    ));
    registry::register(info_op(
        "size_array",
        "The number of elements of the input as a one-element int64 array.",
        |_| Shape::from_slice(&[1]),
        |s| vec![s.iter().product::<usize>() as i64],
    ));
}

#[cfg(test)]
mod tests {
    use oxnet_core::{invoke1, DType, NDArray};

    #[test]
    fn shape_and_size_as_int64() {
        let x = NDArray::zeros(&[2, 3, 4], DType::F32, oxnet_core::Device::Cpu).unwrap();
        let s = invoke1("shape_array", &[&x], &[]).unwrap();
        assert_eq!((s.dtype(), s.to_vec::<i64>().unwrap()), (DType::I64, vec![2, 3, 4]));
        let n = invoke1("size_array", &[&x], &[]).unwrap();
        assert_eq!((n.shape(), n.to_vec::<i64>().unwrap()), (&[1usize][..], vec![24]));
    }
}
