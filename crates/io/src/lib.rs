//! oxnet's data pipeline: RecordIO files ([`recordio`], MXNet's `.rec`
//! format byte for byte), images ([`image`]: JPEG and PNG decoding and
//! encoding, OpenCV-compatible resizing), MXNet's image augmentations
//! ([`augment`]) and the pieces the Python `mx.recordio`, `mx.io` and
//! `mx.image` modules run on.

pub mod augment;
pub mod det_label;
pub mod det_record_iter;
pub mod image;
pub mod image_list;
pub mod image_normalize;
pub mod image_ops;
pub mod image_record_iter;
pub mod record_pipeline;
pub mod recordio;
pub mod resize;

pub use recordio::{RecordReader, RecordWriter};
