//! RecordIO files for `oxnet.recordio` (`mx.recordio`): a reader or a
//! writer of MXNet's `.rec` format (`oxnet_io::recordio`), records as bytes.

use crate::errors::IntoPyResult;
use oxnet_io::recordio::{RecordReader, RecordWriter};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::Mutex;

enum Handle {
    Reader(RecordReader),
    Writer(RecordWriter),
}

/// An open `.rec` file: `"r"` reads, `"w"` writes (truncating), `"a"` appends.
#[pyclass(frozen, name = "RecordFile", module = "oxnet._oxnet")]
pub struct RecordFile {
    inner: Mutex<Handle>,
}

impl RecordFile {
    fn with<T>(&self, f: impl FnOnce(&mut Handle) -> PyResult<T>) -> PyResult<T> {
        f(&mut self.inner.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

fn not(what: &str) -> PyErr {
    pyo3::exceptions::PyValueError::new_err(format!("this RecordIO file is not open for {what}"))
}

#[pymethods]
impl RecordFile {
    #[new]
    fn new(py: Python<'_>, path: &str, flag: &str) -> PyResult<Self> {
        let handle = py.detach(|| match flag {
            "r" => RecordReader::open(path).map(Handle::Reader),
            "w" => RecordWriter::create(path).map(Handle::Writer),
            "a" => RecordWriter::append(path).map(Handle::Writer),
            _ => Err(oxnet_core::Error::Invalid(format!("Invalid flag {flag}: use \"r\", \"w\" or \"a\""))),
        });
        Ok(RecordFile { inner: Mutex::new(handle.py()?) })
    }

    /// Appends one record.
    fn write(&self, py: Python<'_>, data: &[u8]) -> PyResult<()> {
        self.with(|h| match h {
            Handle::Writer(w) => py.detach(|| w.write(data)).py(),
            Handle::Reader(_) => Err(not("writing")),
        })
    }

    /// The next record, or None at the end of the file.
    fn read<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let record = self.with(|h| match h {
            Handle::Reader(r) => py.detach(|| r.read()).py(),
            Handle::Writer(_) => Err(not("reading")),
        })?;
        Ok(record.map(|r| PyBytes::new(py, &r)))
    }

    /// Moves the reader to byte offset `offset`.
    fn seek(&self, offset: u64) -> PyResult<()> {
        self.with(|h| match h {
            Handle::Reader(r) => r.seek(offset).py(),
            Handle::Writer(_) => Err(not("reading")),
        })
    }

    /// The offset of the next record.
    fn tell(&self) -> u64 {
        self.with(|h| {
            Ok(match h {
                Handle::Reader(r) => r.tell(),
                Handle::Writer(w) => w.tell(),
            })
        })
        .unwrap_or(0)
    }

    /// Writes out what a writer buffers.
    fn flush(&self) -> PyResult<()> {
        self.with(|h| match h {
            Handle::Writer(w) => w.flush().py(),
            Handle::Reader(_) => Ok(()),
        })
    }
}
