//! Sliding-window geometry shared by `Convolution` and `Pooling`: the
//! per-axis `kernel`, `stride`, `dilate` and `pad` attributes, output
//! extents, and a normalised three-axis form that the loops of im2col,
//! col2im and pooling run over (1-D and 2-D windows get leading axes of
//! extent 1).

use oxnet_core::attrs::Attrs;
use oxnet_core::{Error, Result};

/// Formats a tuple the way MXNet prints shapes: `(2, 3)`, `(3,)`.
pub(crate) fn fmt_tuple(s: &[usize]) -> String {
    match s.len() {
        1 => format!("({},)", s[0]),
        _ => format!("({})", s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

/// Reads the per-axis attribute `name` for `nd` spatial axes: an empty
/// tuple gives `default` on every axis; otherwise it must have `nd` entries
/// (or more, when `extra_ok`: Pooling reads the first `nd`, as MXNet does),
/// each at least `min`.
pub(crate) fn spatial_attr(
    op: &str,
    attrs: &Attrs,
    name: &str,
    nd: usize,
    default: usize,
    min: i64,
    extra_ok: bool,
) -> Result<Vec<usize>> {
    let v = attrs.ints(name)?;
    if v.is_empty() {
        return Ok(vec![default; nd]);
    }
    if v.len() != nd && !(extra_ok && v.len() > nd) {
        return Err(Error::attr(
            name,
            format!("{op}: `{name}` has {} entries, but the kernel has {nd} axes ({v:?})", v.len()),
        ));
    }
    if let Some(bad) = v.iter().find(|&&x| x < min) {
        return Err(Error::attr(
            name,
            format!("{op}: every entry of `{name}` must be at least {min}, got {bad} in {v:?}"),
        ));
    }
    Ok(v[..nd].iter().map(|&x| x as usize).collect())
}

/// A window over `nd` (1 to 3) spatial axes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Window {
    /// Kernel extent per axis.
    pub kernel: Vec<usize>,
    /// Step between windows per axis.
    pub stride: Vec<usize>,
    /// Spacing between kernel taps per axis (1: dense).
    pub dilate: Vec<usize>,
    /// Implicit padding before each axis.
    pub pad_before: Vec<usize>,
    /// Implicit padding after each axis (equal to `pad_before` except for
    /// pooling's `same` convention).
    pub pad_after: Vec<usize>,
}

impl Window {
    /// Number of spatial axes.
    pub fn nd(&self) -> usize {
        self.kernel.len()
    }

    /// Extent covered by the kernel along axis `i`, dilation included.
    pub fn span(&self, i: usize) -> usize {
        self.dilate[i] * (self.kernel[i] - 1) + 1
    }

    /// Number of kernel taps.
    pub fn taps(&self) -> usize {
        self.kernel.iter().product()
    }

    /// The normalised three-axis form for an input of spatial extents
    /// `input` and output extents `output`.
    pub fn geom3(&self, input: &[usize], output: &[usize]) -> Geom3 {
        let lead = 3 - self.nd();
        let mut g = Geom3 { inp: [1; 3], out: [1; 3], k: [1; 3], s: [1; 3], d: [1; 3], p: [0; 3] };
        for i in 0..self.nd() {
            g.inp[lead + i] = input[i];
            g.out[lead + i] = output[i];
            g.k[lead + i] = self.kernel[i];
            g.s[lead + i] = self.stride[i];
            g.d[lead + i] = self.dilate[i];
            g.p[lead + i] = self.pad_before[i] as isize;
        }
        g
    }
}

/// A window's geometry over exactly three spatial axes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Geom3 {
    /// Input extents.
    pub inp: [usize; 3],
    /// Output extents.
    pub out: [usize; 3],
    /// Kernel extents.
    pub k: [usize; 3],
    /// Strides.
    pub s: [usize; 3],
    /// Dilations.
    pub d: [usize; 3],
    /// Padding before each axis.
    pub p: [isize; 3],
}

impl Geom3 {
    /// Elements of one input plane.
    pub fn in_size(&self) -> usize {
        self.inp.iter().product()
    }

    /// Elements of one output plane.
    pub fn out_size(&self) -> usize {
        self.out.iter().product()
    }

    /// Input coordinate along axis `a` of output index `o` and tap `t`
    /// (negative or past the end when it falls into the padding).
    #[inline(always)]
    pub fn coord(&self, a: usize, o: usize, t: usize) -> isize {
        (o * self.s[a] + t * self.d[a]) as isize - self.p[a]
    }

    /// True when `z` lies inside the input along axis `a`.
    #[inline(always)]
    pub fn inside(&self, a: usize, z: isize) -> bool {
        z >= 0 && (z as usize) < self.inp[a]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_to_three_axes() {
        let w = Window {
            kernel: vec![3],
            stride: vec![2],
            dilate: vec![2],
            pad_before: vec![1],
            pad_after: vec![1],
        };
        assert_eq!(w.span(0), 5);
        let g = w.geom3(&[9], &[4]);
        assert_eq!((g.inp, g.out, g.k, g.p), ([1, 1, 9], [1, 1, 4], [1, 1, 3], [0, 0, 1]));
        assert_eq!(g.coord(2, 1, 2), 2 + 4 - 1);
        assert!(!g.inside(2, -1) && g.inside(2, 8) && !g.inside(2, 9));
        assert_eq!(fmt_tuple(&[3]), "(3,)");
        assert_eq!(fmt_tuple(&[3, 4]), "(3, 4)");
    }
}
