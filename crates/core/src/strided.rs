//! Walking strided layouts: the element offsets of one or more arrays that
//! share an iteration shape (broadcast operands have stride 0 on some axes).

/// Calls `f` with the element offsets of `N` operands for every index of
/// `shape`, in row-major order. `strides[k]` and `base[k]` describe operand k.
///
/// The innermost axis runs as a tight loop; the outer axes advance a counter.
#[inline]
pub fn for_each_offsets<const N: usize>(
    shape: &[usize],
    strides: [&[isize]; N],
    base: [isize; N],
    mut f: impl FnMut([isize; N]),
) {
    if shape.contains(&0) {
        return;
    }
    let nd = shape.len();
    if nd == 0 {
        f(base);
        return;
    }
    let inner = shape[nd - 1];
    let inner_stride: [isize; N] = std::array::from_fn(|k| strides[k][nd - 1]);
    let mut index = [0usize; 8];
    let mut big_index: Vec<usize>;
    let index: &mut [usize] = if nd <= 8 {
        &mut index[..nd]
    } else {
        big_index = vec![0; nd];
        &mut big_index
    };
    let mut offs = base;
    loop {
        let mut o = offs;
        for _ in 0..inner {
            f(o);
            for k in 0..N {
                o[k] += inner_stride[k];
            }
        }
        // advance the outer axes
        let mut axis = nd - 1;
        loop {
            if axis == 0 {
                return;
            }
            axis -= 1;
            index[axis] += 1;
            for k in 0..N {
                offs[k] += strides[k][axis];
            }
            if index[axis] < shape[axis] {
                break;
            }
            for k in 0..N {
                offs[k] -= strides[k][axis] * shape[axis] as isize;
            }
            index[axis] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visits_in_row_major_order() {
        let mut seen = vec![];
        for_each_offsets(&[2, 3], [&[3, 1], &[1, 2]], [0, 10], |[a, b]| seen.push((a, b)));
        assert_eq!(seen, vec![(0, 10), (1, 12), (2, 14), (3, 11), (4, 13), (5, 15)]);
        let mut n = 0;
        for_each_offsets(&[], [&[]], [7], |[a]| {
            assert_eq!(a, 7);
            n += 1
        });
        assert_eq!(n, 1);
        for_each_offsets(&[2, 0], [&[0, 1]], [0], |_| panic!("empty"));
    }
}
