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
    }
}
