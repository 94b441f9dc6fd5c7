//! Images: JPEG and PNG round trips (PNG exact, JPEG close), channel
//! layouts and orders, and resizing: sizes, identities, constant images,
//! hand-worked bilinear and nearest values, area averages; errors.

use oxnet_io::image::{decode, Channels, Image};
use oxnet_io::resize::{resize, Interp};

fn gradient(h: usize, w: usize, c: usize) -> Image {
    let data = (0..h * w * c).map(|i| ((i * 37 + i / c * 11) % 256) as u8).collect();
    Image::new(h, w, c, data).unwrap()
}

#[test]
fn png_round_trips_exactly_and_jpeg_closely() {
    let img = gradient(12, 17, 3);
    let png = img.encode(".png", 95, false).unwrap();
    assert_eq!(decode(&png, Channels::Colour, false).unwrap(), img);
    // the BGR order is swapped on the way in and out
    let mut bgr = img.clone();
    bgr.swap_red_blue();
    assert_eq!(decode(&img.encode(".png", 0, true).unwrap(), Channels::Colour, true).unwrap(), img);
    assert_eq!(decode(&png, Channels::Colour, true).unwrap(), bgr);
    let smooth =
        Image::new(16, 16, 3, (0..16 * 16 * 3).map(|i| (i / 3 % 16 * 8 + 40) as u8).collect()).unwrap();
    let jpg = smooth.encode(".jpg", 95, false).unwrap();
    let back = decode(&jpg, Channels::Colour, false).unwrap();
    let worst = back.data.iter().zip(&smooth.data).map(|(a, b)| a.abs_diff(*b)).max().unwrap();
    assert!(worst <= 6, "JPEG at quality 95 is off by {worst}");
}

#[test]
fn grey_and_stored_channel_layouts() {
    let img = gradient(5, 4, 3);
    let png = img.encode(".png", 0, false).unwrap();
    let grey = decode(&png, Channels::Grey, false).unwrap();
    assert_eq!((grey.channels, grey.data.len()), (1, 20));
    // 0.299 R + 0.587 G + 0.114 B as libpng computes it for OpenCV's PNG
    // decoder: 15-bit weights, truncated
    for (k, px) in img.data.chunks(3).enumerate() {
        let [r, g, b] = [px[0], px[1], px[2]].map(u32::from);
        assert_eq!(u32::from(grey.data[k]), (9797 * r + 19234 * g + 3737 * b) >> 15);
        let exact = 0.299 * f64::from(r) + 0.587 * f64::from(g) + 0.114 * f64::from(b);
        assert!((f64::from(grey.data[k]) - exact).abs() <= 1.0);
    }
    // other formats: OpenCV's cvtColor weights (14-bit, rounded), for JPEG's colour
    let jpeg = decode(&img.encode(".jpg", 100, false).unwrap(), Channels::Colour, false).unwrap();
    let jpeg_grey = decode(&img.encode(".jpg", 100, false).unwrap(), Channels::Grey, false).unwrap();
    let [r, g, b] = [jpeg.data[0], jpeg.data[1], jpeg.data[2]].map(u32::from);
    assert_eq!(u32::from(jpeg_grey.data[0]), (4899 * r + 9617 * g + 1868 * b + 8192) >> 14);
    let rgba = Image::new(2, 2, 4, (0..16).map(|i| i as u8 * 10).collect()).unwrap();
    let stored = decode(&rgba.encode(".png", 0, false).unwrap(), Channels::AsStored, false).unwrap();
    assert_eq!(stored, rgba);
    assert_eq!(decode(&grey.encode(".png", 0, false).unwrap(), Channels::AsStored, false).unwrap(), grey);
}

#[test]
fn undecodable_bytes_and_bad_shapes_are_errors() {
    let e = decode(b"not an image", Channels::Colour, false).unwrap_err().to_string();
    assert!(e.contains("cannot decode") && e.contains("12 bytes"), "{e}");
    assert!(decode(&[], Channels::Colour, false).is_err());
    assert!(Image::new(2, 2, 3, vec![0; 11]).is_err());
    assert!(Image::new(2, 2, 2, vec![0; 8]).is_err());
    let e = gradient(2, 2, 3).encode(".bmp", 90, false).unwrap_err().to_string();
    assert!(e.contains("bmp"), "{e}");
    assert!(resize(&gradient(2, 2, 3), 0, 3, Interp::Linear).is_err());
}

#[test]
fn resizing_keeps_identities_and_constants() {
    let img = gradient(9, 7, 3);
    for interp in [Interp::Nearest, Interp::Linear, Interp::Cubic, Interp::Area, Interp::Lanczos] {
        assert_eq!(resize(&img, 9, 7, interp).unwrap(), img, "{interp:?} at the same size");
        let flat = Image::new(6, 5, 1, vec![77; 30]).unwrap();
        for (h, w) in [(3, 2), (13, 11), (6, 9)] {
            let out = resize(&flat, h, w, interp).unwrap();
            assert_eq!((out.height, out.width, out.channels), (h, w, 1));
            assert!(out.data.iter().all(|&v| v == 77), "{interp:?} to {h}x{w}");
        }
    }
}

#[test]
fn resizing_by_hand_worked_values() {
    // one row [0, 100]: doubled bilinearly, the centres fall at -0.25, 0.25, 0.75, 1.25
    let row = Image::new(1, 2, 1, vec![0, 100]).unwrap();
    assert_eq!(resize(&row, 1, 4, Interp::Linear).unwrap().data, vec![0, 25, 75, 100]);
    assert_eq!(resize(&row, 1, 4, Interp::Nearest).unwrap().data, vec![0, 0, 100, 100]);
    // halving by area averages pairs
    let row = Image::new(1, 4, 1, vec![10, 20, 30, 50]).unwrap();
    assert_eq!(resize(&row, 1, 2, Interp::Area).unwrap().data, vec![15, 40]);
    // three to two by area: weights (1, 1/2) and (1/2, 1) over 1.5 pixels
    let row = Image::new(1, 3, 1, vec![30, 60, 90]).unwrap();
    assert_eq!(resize(&row, 1, 2, Interp::Area).unwrap().data, vec![40, 80]);
    // auto: area to shrink, cubic to enlarge
    assert_eq!(Interp::from_code(9, (10, 10), (5, 5)).unwrap(), Interp::Area);
    assert_eq!(Interp::from_code(9, (10, 10), (20, 20)).unwrap(), Interp::Cubic);
    assert!(Interp::from_code(7, (1, 1), (1, 1)).is_err());
}
