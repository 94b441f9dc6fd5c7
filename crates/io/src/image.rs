//! Images as height × width × channels `u8` arrays: decoding and encoding
//! JPEG and PNG (the `image` crate), channel orders, and resizing with
//! OpenCV's interpolation rules (what MXNet's `mx.image` calls), so images
//! resized here match MXNet's within a unit of rounding.

use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::{ColorType, DynamicImage, ImageEncoder};
use oxnet_core::{Error, Result};

/// An image: `height × width × channels` bytes, row-major, channels last.
#[derive(Clone, Debug, PartialEq)]
pub struct Image {
    /// Rows.
    pub height: usize,
    /// Columns.
    pub width: usize,
    /// 1 (grey), 3 (colour) or 4 (colour and alpha).
    pub channels: usize,
    /// The pixels.
    pub data: Vec<u8>,
}

/// How [`decode`] lays out the channels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channels {
    /// One grey channel (OpenCV's `IMREAD_GRAYSCALE`, MXNet's `flag=0`).
    Grey,
    /// Three colour channels (`IMREAD_COLOR`, `flag=1`).
    Colour,
    /// As stored: grey, colour, or colour with alpha (`IMREAD_UNCHANGED`, `flag=-1`).
    AsStored,
}

impl Channels {
    /// MXNet's and OpenCV's flag: 0 grey, 1 (or any positive) colour, negative as stored.
    pub fn from_flag(flag: i64) -> Channels {
        match flag {
            0 => Channels::Grey,
            f if f > 0 => Channels::Colour,
            _ => Channels::AsStored,
        }
    }
}

/// Decodes JPEG or PNG bytes; colour comes out RGB(A), or BGR(A) with `bgr`
/// (OpenCV's order, which `mx.recordio.unpack_img` returns).
pub fn decode(bytes: &[u8], channels: Channels, bgr: bool) -> Result<Image> {
    if bytes.is_empty() {
        return Err(Error::Invalid("cannot decode an image from 0 bytes".into()));
    }
    let img = image::load_from_memory(bytes)
        .map_err(|e| Error::Invalid(format!("cannot decode the image ({} bytes): {e}", bytes.len())))?;
    let png = image::guess_format(bytes).is_ok_and(|f| f == image::ImageFormat::Png);
    let (width, height) = (img.width() as usize, img.height() as usize);
    let stored = img.color().channel_count() as usize;
    let (data, channels) = match channels {
        Channels::Grey => (grey(&img, png), 1),
        Channels::Colour => (img.into_rgb8().into_raw(), 3),
        Channels::AsStored => match stored {
            1 | 2 => (grey(&img, png), 1),
            4 => (img.into_rgba8().into_raw(), 4),
            _ => (img.into_rgb8().into_raw(), 3),
        },
    };
    let mut out = Image { height, width, channels, data };
    if bgr {
        out.swap_red_blue();
    }
    Ok(out)
}

/// Grey levels as OpenCV's decoders make them from colour (0.299 R +
/// 0.587 G + 0.114 B): for PNG, libpng's conversion OpenCV asks for (15-bit
/// weights, truncated); otherwise OpenCV's `cvtColor` (14-bit, rounded).
/// A stored grey channel is kept.
fn grey(img: &DynamicImage, png: bool) -> Vec<u8> {
    if matches!(img.color(), ColorType::L8 | ColorType::La8) {
        return img.to_luma8().into_raw();
    }
    img.to_rgb8()
        .pixels()
        .map(|p| {
            let [r, g, b] = p.0.map(u32::from);
            if png {
                ((r * 9797 + g * 19234 + b * 3737) >> 15) as u8
            } else {
                ((r * 4899 + g * 9617 + b * 1868 + (1 << 13)) >> 14) as u8
            }
        })
        .collect()
}

impl Image {
    /// Checks that the data holds `height × width × channels` bytes.
    pub fn new(height: usize, width: usize, channels: usize, data: Vec<u8>) -> Result<Image> {
        if !matches!(channels, 1 | 3 | 4) {
            return Err(Error::Invalid(format!("an image has 1, 3 or 4 channels, not {channels}")));
        }
        if data.len() != height * width * channels {
            return Err(Error::Invalid(format!(
                "an image of {height}x{width}x{channels} needs {} bytes, got {}",
                height * width * channels,
                data.len()
            )));
        }
        Ok(Image { height, width, channels, data })
    }

    /// Swaps the first and third channels (RGB and BGR), for colour images.
    pub fn swap_red_blue(&mut self) {
        if self.channels >= 3 {
            for px in self.data.chunks_exact_mut(self.channels) {
                px.swap(0, 2);
            }
        }
    }

    /// Encodes as `.jpg` (with `quality`, 1 to 100) or `.png`; `bgr` says
    /// the colour channels are in OpenCV's order.
    pub fn encode(&self, format: &str, quality: u8, bgr: bool) -> Result<Vec<u8>> {
        let mut img = self.clone();
        if bgr {
            img.swap_red_blue();
        }
        let color = match img.channels {
            1 => ColorType::L8,
            3 => ColorType::Rgb8,
            _ => ColorType::Rgba8,
        };
        let (w, h) = (img.width as u32, img.height as u32);
        let mut out = Vec::new();
        let fail = |e: image::ImageError| Error::Invalid(format!("cannot encode the image as {format}: {e}"));
        match format.trim_start_matches('.').to_ascii_lowercase().as_str() {
            "jpg" | "jpeg" => {
                if img.channels == 4 {
                    return Err(Error::Invalid("JPEG has no alpha channel: encode 1 or 3 channels".into()));
                }
                JpegEncoder::new_with_quality(&mut out, quality.clamp(1, 100))
                    .write_image(&img.data, w, h, color.into())
                    .map_err(fail)?
            }
            "png" => PngEncoder::new(&mut out).write_image(&img.data, w, h, color.into()).map_err(fail)?,
            other => return Err(Error::Invalid(format!("unknown image format `{other}`: use .jpg or .png"))),
        }
        Ok(out)
    }
}
