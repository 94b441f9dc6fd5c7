//! `Crop` (MXNet 1.x's deprecated spatial crop): a (h, w) window of 4-D
//! (batch, channel, height, width) data, sized by `h_w` or by the height and
//! width of a second input `crop_like`, at `offset` (y, x) or centred.
//!
//! It runs as `slice` over the last two axes; the gradient puts the head
//! gradient back into the window of a zero array (`_slice_assign`), and
//! `crop_like`, read only for its shape, gets a zero gradient.

use crate::util::call;
use oxnet_core::attrs::Attrs;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Error, GradCtx, NDArray, OpDef, Result, Shape};

const OP: &str = "Crop";

fn num_args(attrs: &Attrs) -> Result<usize> {
    match attrs.int("num_args")? {
        n @ 1..=2 => Ok(n as usize),
        n => Err(Error::attr("num_args", format!("{OP}: must be 1 (h_w) or 2 (crop_like), got {n}"))),
    }
}

/// A pair attribute `(a, b)` of non-negative values.
fn pair(attrs: &Attrs, name: &str) -> Result<[usize; 2]> {
    match attrs.ints(name)? {
        &[a, b] if a >= 0 && b >= 0 => Ok([a as usize, b as usize]),
        v => Err(Error::attr(name, format!("{OP}: expected two non-negative values, got {v:?}"))),
    }
}

/// `(top, left, height, width)` of the window in `data` (4-D) for the
/// window size `hw`.
fn window(attrs: &Attrs, data: &[usize], hw: [usize; 2]) -> Result<[usize; 4]> {
    let &[_, _, h, w] = data else {
        return Err(Error::Shape(format!(
            "{OP}: data must be 4-D (batch, channel, y, x), got shape {data:?}"
        )));
    };
    if hw[0] < 1 || hw[1] < 1 || hw[0] > h || hw[1] > w {
        return Err(Error::Shape(format!(
            "{OP}: the crop size {hw:?} must be at least 1 and fit the data's height and width ({h}, {w})"
        )));
    }
    let (spare_h, spare_w) = (h - hw[0], w - hw[1]);
    let [top, left] = if attrs.bool("center_crop")? {
        [spare_h / 2, spare_w / 2]
    } else {
        let o = pair(attrs, "offset")?;
        if o[0] > spare_h || o[1] > spare_w {
            return Err(Error::attr(
                "offset",
                format!(
                    "{OP}: offset {o:?} leaves the data: at most ({spare_h}, {spare_w}) for a {hw:?} crop"
                ),
            ));
        }
        o
    };
    Ok([top, left, hw[0], hw[1]])
}

/// The window size: `h_w`, or the last two extents of `crop_like`.
fn crop_size(attrs: &Attrs, like: Option<&[usize]>) -> Result<Option<[usize; 2]>> {
    if num_args(attrs)? == 1 {
        return pair(attrs, "h_w").map(Some);
    }
    match like {
        None => Ok(None),
        Some(&[_, _, h, w]) => Ok(Some([h, w])),
        Some(s) => Err(Error::Shape(format!("{OP}: crop_like must be 4-D, got shape {s:?}"))),
    }
}

/// `slice`'s begin and end for the window.
fn slice_attrs(win: [usize; 4]) -> Vec<(&'static str, AttrValue)> {
    let [top, left, h, w] = win;
    vec![
        ("begin", AttrValue::Str(format!("(None, None, {top}, {left})"))),
        ("end", AttrValue::Str(format!("(None, None, {}, {})", top + h, left + w))),
    ]
}

/// The window for arrays `inputs` (data, optionally crop_like).
fn window_of(attrs: &Attrs, inputs: &[NDArray]) -> Result<[usize; 4]> {
    let hw = crop_size(attrs, inputs.get(1).map(|a| a.shape()))?
        .ok_or_else(|| Error::Invalid(format!("{OP}: crop_like is missing")))?;
    window(attrs, inputs[0].shape(), hw)
}

fn grad(c: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    let x = &c.inputs[0];
    let mut grads = vec![None; c.inputs.len()];
    if c.needs_grad[0] {
        let zeros = call("zeros_like", &[x], &[])?;
        grads[0] = Some(call(
            "_slice_assign",
            &[&zeros, &c.out_grads[0]],
            &slice_attrs(window_of(c.attrs, c.inputs)?),
        )?);
    }
    if c.inputs.len() > 1 && c.needs_grad[1] {
        grads[1] = Some(call("zeros_like", &[&c.inputs[1]], &[])?);
    }
    Ok(grads)
}

pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .doc(
                "Crops 4-D data (batch, channel, y, x) to a (h, w) window: h_w gives the size with \
                 num_args=1, the height and width of the second input (crop_like) with num_args=2; the \
                 window starts at offset (y, x), or is centred with center_crop. Deprecated in MXNet \
                 in favour of slice.",
            )
            .attr(AttrSpec::required(
                "num_args",
                AttrKind::Int,
                "1: crop to h_w; 2: crop to crop_like's size.",
            ))
            .attr(AttrSpec::optional(
                "offset",
                AttrKind::Ints,
                AttrValue::Ints(vec![0, 0]),
                "Window corner (y, x).",
            ))
            .attr(AttrSpec::optional(
                "h_w",
                AttrKind::Ints,
                AttrValue::Ints(vec![0, 0]),
                "Window size (h, w).",
            ))
            .attr(AttrSpec::optional(
                "center_crop",
                AttrKind::Bool,
                false,
                "Centre the window (ignores offset).",
            ))
            .arguments_fn(|attrs| Ok((0..num_args(attrs)?).map(|i| format!("arg{i}")).collect()))
            .arity_fn(|attrs| Ok([num_args(attrs)?, 0, 1]))
            .infer_shape(|attrs, ins, outs| {
                let Some(data) = ins[0].clone() else { return Ok(()) };
                let Some(hw) = crop_size(attrs, ins.get(1).and_then(|s| s.as_deref()))? else {
                    return Ok(());
                };
                let [_, _, h, w] = window(attrs, &data, hw)?;
                let out = Shape::from_slice(&[data[0], data[1], h, w]);
                crate::shape_ops::set_shape(&mut outs[0], out, "the output")
            })
            .forward(|ctx, inputs, outputs| {
                let y = call("slice", &[&inputs[0]], &slice_attrs(window_of(ctx.attrs, inputs)?))?;
                oxnet_core::store::store(ctx.req[0], &outputs[0], &y)
            })
            .grad_rule(grad),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::OpChecker;
    use oxnet_core::{invoke1, AttrValue, NDArray};

    fn iota(shape: &[usize]) -> NDArray {
        let n = shape.iter().product::<usize>();
        NDArray::from_vec((0..n).map(|v| v as f64).collect(), shape).unwrap()
    }

    #[test]
    fn windows_by_size_offset_centre_or_like() {
        let x = iota(&[1, 1, 4, 5]);
        let h_w = [("num_args", AttrValue::Int(1)), ("h_w", AttrValue::Ints(vec![2, 3]))];
        let y = invoke1("Crop", &[&x], &h_w).unwrap();
        assert_eq!(
            (y.shape(), y.to_vec::<f64>().unwrap()),
            (&[1usize, 1, 2, 3][..], vec![0., 1., 2., 5., 6., 7.])
        );
        let mut at = h_w.to_vec();
        at.push(("offset", AttrValue::Ints(vec![2, 1])));
        assert_eq!(
            invoke1("Crop", &[&x], &at).unwrap().to_vec::<f64>().unwrap(),
            vec![11., 12., 13., 16., 17., 18.]
        );
        // centred: spare (2, 2) -> corner (1, 1)
        let mut centre = h_w.to_vec();
        centre.push(("center_crop", true.into()));
        assert_eq!(
            invoke1("Crop", &[&x], &centre).unwrap().to_vec::<f64>().unwrap(),
            vec![6., 7., 8., 11., 12., 13.]
        );
        let like = iota(&[3, 7, 1, 2]);
        let y = invoke1("Crop", &[&x, &like], &[("num_args", AttrValue::Int(2))]).unwrap();
        assert_eq!((y.shape(), y.to_vec::<f64>().unwrap()), (&[1usize, 1, 1, 2][..], vec![0., 1.]));
    }

    #[test]
    fn bad_windows_are_errors() {
        let x = iota(&[1, 1, 4, 5]);
        let e = |attrs: &[(&str, AttrValue)]| invoke1("Crop", &[&x], attrs).unwrap_err().to_string();
        let big = e(&[("num_args", AttrValue::Int(1)), ("h_w", AttrValue::Ints(vec![5, 1]))]);
        assert!(big.contains("Crop") && big.contains("fit"), "{big}");
        let off = e(&[
            ("num_args", AttrValue::Int(1)),
            ("h_w", AttrValue::Ints(vec![2, 2])),
            ("offset", AttrValue::Ints(vec![0, 4])),
        ]);
        assert!(off.contains("offset"), "{off}");
        let flat =
            invoke1("Crop", &[&iota(&[4, 5])], &[("num_args", AttrValue::Int(1))]).unwrap_err().to_string();
        assert!(flat.contains("4-D"), "{flat}");
    }

    #[test]
    fn gradient_fills_the_window() {
        let x = iota(&[2, 1, 3, 4]);
        OpChecker::new("Crop", &[x])
            .attr("num_args", 1)
            .attr("h_w", AttrValue::Ints(vec![2, 2]))
            .attr("offset", AttrValue::Ints(vec![1, 1]))
            .run()
            .unwrap();
    }
}
