//! MXNet-style printing: the values, then `<NDArray 2x3 @cpu(0)>`.

use super::NDArray;
use std::fmt::{self, Write};

/// Arrays larger than this print their first and last `EDGE` items per axis.
const SUMMARY_THRESHOLD: usize = 1000;
const EDGE: usize = 3;

fn format_value(v: f64, is_float: bool) -> String {
    if !is_float {
        return format!("{}", v as i64);
    }
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else if v == v.trunc() && v.abs() < 1e16 {
        format!("{v:.0}.")
    } else if v.abs() >= 1e-4 && v.abs() < 1e8 {
        let s = format!("{v:.8}");
        s.trim_end_matches('0').to_string()
    } else {
        format!("{v:.8e}")
    }
}

fn write_axis(
    out: &mut String,
    values: &[f64],
    shape: &[usize],
    indent: usize,
    summarize: bool,
    is_float: bool,
) {
    if shape.is_empty() {
        out.push_str(&format_value(values[0], is_float));
        return;
    }
    let n = shape[0];
    let inner: usize = shape[1..].iter().product();
    out.push('[');
    let show: Vec<Option<usize>> = if summarize && n > 2 * EDGE {
        (0..EDGE).map(Some).chain([None]).chain((n - EDGE..n).map(Some)).collect()
    } else {
        (0..n).map(Some).collect()
    };
    for (k, item) in show.iter().enumerate() {
        if k > 0 {
            if shape.len() > 1 {
                out.push('\n');
                out.push_str(&" ".repeat(indent + 1));
            } else {
                out.push(' ');
            }
        }
        match item {
            Some(i) => write_axis(
                out,
                &values[i * inner..(i + 1) * inner],
                &shape[1..],
                indent + 1,
                summarize,
                is_float,
            ),
            None => out.push_str("..."),
        }
    }
    out.push(']');
}

impl fmt::Display for NDArray {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = String::new();
        match self.to_vec::<f64>() {
            Ok(values) => write_axis(
                &mut text,
                &values,
                self.shape(),
                0,
                self.size() > SUMMARY_THRESHOLD,
                self.dtype().is_float(),
            ),
            Err(e) => write!(text, "<unreadable: {e}>")?,
        }
        let dims: Vec<String> = self.shape().iter().map(|d| d.to_string()).collect();
        let dtype =
            if self.dtype() == crate::DType::F32 { String::new() } else { format!(" {}", self.dtype()) };
        write!(f, "{text}\n<NDArray {}{dtype} @{}>", dims.join("x"), self.device())
    }
}

#[cfg(test)]
mod tests {
    use crate::{DType, NDArray};

    #[test]
    fn prints_like_mxnet() {
        let a = NDArray::from_vec(vec![0.0f32, 1.0, 2.5, 3.0], &[2, 2]).unwrap();
        assert_eq!(a.to_string(), "[[0. 1.]\n [2.5 3.]]\n<NDArray 2x2 @cpu(0)>");
        let b = NDArray::from_vec(vec![1i32, 2], &[2]).unwrap();
        assert_eq!(b.to_string(), "[1 2]\n<NDArray 2 int32 @cpu(0)>");
        let big = NDArray::zeros(&[2000], DType::F32, crate::Device::Cpu).unwrap();
        assert!(big.to_string().contains("..."));
    }
}
