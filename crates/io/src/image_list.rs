//! Image lists (`.lst`, as `tools/im2rec.py` writes them): one image a
//! line, its index, its labels and its path, separated by whitespace. With
//! `path_imglist`, `ImageRecordIter` takes each record's labels from the
//! list by the record's image index instead of from its header.

use oxnet_core::{Error, Result};
use std::collections::HashMap;
use std::path::Path;

/// The labels of each image index in a list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImageList {
    labels: HashMap<u64, Vec<f32>>,
}

impl ImageList {
    /// Parses `text`: per non-empty line an index then `label_width` labels
    /// (anything after them, such as the path, is ignored).
    pub fn parse(text: &str, label_width: usize) -> Result<ImageList> {
        let mut labels = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let mut fields = line.split_whitespace();
            let Some(index) = fields.next() else { continue };
            let bad = |what: String| {
                Error::attr("path_imglist", format!("ImageRecordIter: path_imglist line {}: {what}", n + 1))
            };
            let index: u64 = index
                .parse::<f64>()
                .ok()
                .filter(|v| *v >= 0.0)
                .map(|v| v as u64)
                .ok_or_else(|| bad(format!("the index `{index}` is not a number")))?;
            let values = (0..label_width)
                .map(|_| {
                    let field =
                        fields.next().ok_or_else(|| bad(format!("fewer than {label_width} labels")))?;
                    field.parse::<f32>().map_err(|_| bad(format!("the label `{field}` is not a number")))
                })
                .collect::<Result<Vec<f32>>>()?;
            labels.insert(index, values);
        }
        Ok(ImageList { labels })
    }

    /// Parses `text` with a label width per line (MXNet's `label_width=-1`
    /// for detection lists): per non-empty line an index, its labels, and
    /// a last field (the path) that is not a label.
    pub fn parse_variable(text: &str) -> Result<ImageList> {
        let mut labels = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.is_empty() {
                continue;
            }
            let bad =
                |what: String| Error::attr("path_imglist", format!("path_imglist line {}: {what}", n + 1));
            let index: u64 = fields[0]
                .parse::<f64>()
                .ok()
                .filter(|v| *v >= 0.0)
                .map(|v| v as u64)
                .ok_or_else(|| bad(format!("the index `{}` is not a number", fields[0])))?;
            if fields.len() < 3 {
                return Err(bad("no labels between the index and the path".into()));
            }
            let values = fields[1..fields.len() - 1]
                .iter()
                .map(|f| f.parse::<f32>().map_err(|_| bad(format!("the label `{f}` is not a number"))))
                .collect::<Result<Vec<f32>>>()?;
            labels.insert(index, values);
        }
        Ok(ImageList { labels })
    }

    /// The most labels any image has.
    pub fn max_width(&self) -> usize {
        self.labels.values().map(Vec::len).max().unwrap_or(0)
    }

    /// Reads and parses the list at `path`.
    pub fn read(path: &Path, label_width: usize) -> Result<ImageList> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::attr("path_imglist", format!("ImageRecordIter: cannot read `{}`: {e}", path.display()))
        })?;
        ImageList::parse(&text, label_width)
    }

    /// The labels of image `index`.
    pub fn labels(&self, index: u64) -> Result<&[f32]> {
        self.labels.get(&index).map(Vec::as_slice).ok_or_else(|| {
            Error::Invalid(format!("ImageRecordIter: path_imglist has no labels for image index {index}"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_indices_labels_and_paths() {
        let list = ImageList::parse("0\t3.5\t-1\ta.jpg\n\n7 2 0.25 dir/b c.png\n", 2).unwrap();
        assert_eq!(list.labels(0).unwrap(), &[3.5, -1.0]);
        assert_eq!(list.labels(7).unwrap(), &[2.0, 0.25]);
        assert!(list.labels(1).unwrap_err().to_string().contains("image index 1"));
        let e = ImageList::parse("0\t1\ta.jpg\n", 2).unwrap_err().to_string();
        assert!(e.contains("path_imglist") && e.contains("label"), "{e}");
        let list = ImageList::parse_variable("3\t2\t5\t1\t0.1\t0.2\t0.3\t0.4\ta.png\n4 2 5 a b.png\n");
        assert!(list.unwrap_err().to_string().contains("`a`"));
        let list = ImageList::parse_variable("3\t2\t5\t1\t0.1\t0.2\t0.3\t0.4\ta.png\n9 7 b.png\n").unwrap();
        assert_eq!(list.labels(3).unwrap(), &[2.0, 5.0, 1.0, 0.1, 0.2, 0.3, 0.4]);
        assert_eq!((list.labels(9).unwrap(), list.max_width()), (&[7.0][..], 7));
        assert!(ImageList::parse_variable("1 a.png\n").is_err());
    }
}
