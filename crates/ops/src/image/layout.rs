//! The layouts of images the `_image_*` operators take: one image
//! (height, width, channels) or a batch (N, height, width, channels).

use oxnet_core::{Error, Result};

/// The axes of height and width in an image or batch of `shape`.
pub(super) fn hw_axes(op: &str, shape: &[usize]) -> Result<(usize, usize)> {
    match shape.len() {
        3 => Ok((0, 1)),
        4 => Ok((1, 2)),
        _ => Err(Error::Shape(format!(
            "{op}: data must be (height, width, channels) or (N, height, width, channels), got {shape:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::OpChecker;
    use oxnet_core::{invoke1, DType, NDArray};

    fn image(shape: &[usize]) -> NDArray {
        let n: usize = shape.iter().product();
        NDArray::from_vec((0..n).map(|i| i as f64 * 0.5 - 3.0).collect(), shape).unwrap()
    }

    #[test]
    fn to_tensor_moves_channels_first_and_scales() {
        let x = NDArray::from_vec((0u8..24).collect(), &[2, 4, 3]).unwrap();
        let y = invoke1("_image_to_tensor", &[&x], &[]).unwrap();
        assert_eq!((y.shape(), y.dtype()), (&[3, 2, 4][..], DType::F32));
        // channel 1 of pixel (row 1, column 2) is byte (1·4 + 2)·3 + 1 = 19
        assert_eq!(y.to_vec::<f32>().unwrap()[(2 + 1) * 4 + 2], 19.0 / 255.0);
        let b = invoke1("_image_to_tensor", &[&image(&[2, 2, 4, 3])], &[]).unwrap();
        assert_eq!(b.shape(), &[2, 3, 2, 4]);
        // linear, float32 out: wide differences are exact
        OpChecker::new("_image_to_tensor", &[image(&[2, 3, 1])]).eps(0.5).run().unwrap();
    }

    #[test]
    fn flips_reverse_width_or_height_of_images_and_batches() {
        let x = NDArray::from_vec((0..6).map(f64::from).collect(), &[1, 3, 2]).unwrap();
        let lr = invoke1("_image_flip_left_right", &[&x], &[]).unwrap();
        assert_eq!(lr.to_vec::<f64>().unwrap(), vec![4.0, 5.0, 2.0, 3.0, 0.0, 1.0]);
        let b = NDArray::from_vec((0..12).map(f64::from).collect(), &[2, 2, 3, 1]).unwrap();
        let lr = invoke1("_image_flip_left_right", &[&b], &[]).unwrap();
        assert_eq!(&lr.to_vec::<f64>().unwrap()[..6], &[2.0, 1.0, 0.0, 5.0, 4.0, 3.0]);
        let tb = invoke1("_image_flip_top_bottom", &[&b], &[]).unwrap();
        assert_eq!(&tb.to_vec::<f64>().unwrap()[..6], &[3.0, 4.0, 5.0, 0.0, 1.0, 2.0]);
        for op in ["_image_flip_left_right", "_image_flip_top_bottom"] {
            OpChecker::new(op, &[image(&[3, 4, 2])]).run().unwrap();
        }
        // a random flip gives the input or its flip
        for _ in 0..8 {
            let r = invoke1("_image_random_flip_left_right", &[&x], &[]).unwrap().to_vec::<f64>().unwrap();
            assert!(r == x.to_vec::<f64>().unwrap() || r == vec![4.0, 5.0, 2.0, 3.0, 0.0, 1.0]);
        }
    }

    #[test]
    fn crop_takes_the_region_and_its_gradient_fills_it_back() {
        let x = NDArray::from_vec((0..24).map(f64::from).collect(), &[4, 3, 2]).unwrap();
        let attrs = [("x", 1i64.into()), ("y", 2i64.into()), ("width", 2i64.into()), ("height", 1i64.into())];
        let y = invoke1("_image_crop", &[&x], &attrs).unwrap();
        assert_eq!(y.shape(), &[1, 2, 2]);
        assert_eq!(y.to_vec::<f64>().unwrap(), vec![14.0, 15.0, 16.0, 17.0]);
        OpChecker::new("_image_crop", &[image(&[2, 4, 3, 2])])
            .attr("x", 1i64)
            .attr("y", 1i64)
            .attr("width", 2i64)
            .attr("height", 3i64)
            .run()
            .unwrap();
        let e = invoke1(
            "_image_crop",
            &[&x],
            &[("x", 2i64.into()), ("y", 0i64.into()), ("width", 2i64.into()), ("height", 1i64.into())],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("does not fit") && e.contains("4x3"), "{e}");
        let e = invoke1("_image_flip_left_right", &[&image(&[4, 3])], &[]).unwrap_err().to_string();
        assert!(e.contains("(height, width, channels)"), "{e}");
    }
}
