//! RecordIO files for `oxnet.recordio` (`mx.recordio`): a reader or a
//! writer of MXNet's `.rec` format (`oxnet_io::recordio`), records as bytes.

use crate::errors::{to_py, IntoPyResult};
use oxnet_io::recordio::{RecordReader, RecordWriter};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::Mutex;

enum Handle {
    Reader(RecordReader),
    Writer(RecordWriter),
}

/// An open `.rec` file: `"r"` reads, `"w"` writes (truncating), `"a"` appends.
///
/// Several Python threads may share one file (a `DataLoader` with a thread
/// pool reading one `ImageRecordDataset`). Every method therefore releases
/// the GIL *before* it takes the file's lock and takes the GIL back only
/// after it let the lock go: a thread never waits for the lock while it
/// holds the GIL, nor for the GIL while it holds the lock, so two threads
/// cannot each hold what the other waits for.
#[pyclass(frozen, name = "RecordFile", module = "oxnet._oxnet")]
pub struct RecordFile {
    inner: Mutex<Handle>,
}

/// What a method of [`RecordFile`] can fail with while the GIL is released:
/// turned into a Python exception once the GIL is held again.
enum Failure {
    /// An error of the file itself.
    Io(oxnet_core::Error),
    /// A reader asked to write or a writer asked to read (the word says which).
    Not(&'static str),
}

impl From<oxnet_core::Error> for Failure {
    fn from(e: oxnet_core::Error) -> Self {
        Failure::Io(e)
    }
}

impl RecordFile {
    /// Runs `f` on the handle with the GIL released, the lock held only
    /// inside that detached block; `f` returns owned data, which becomes a
    /// Python object (or its failure a Python exception) after the lock is
    /// released and the GIL re-acquired.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Handle) -> Result<T, Failure> + Send,
    ) -> PyResult<T> {
        py.detach(|| f(&mut self.inner.lock().unwrap_or_else(|e| e.into_inner()))).map_err(|e| match e {
            Failure::Io(e) => to_py(e),
            Failure::Not(what) => not(what),
        })
    }

    /// The reader of the handle, or the failure of a writer asked to read.
    fn reader(h: &mut Handle) -> Result<&mut RecordReader, Failure> {
        match h {
            Handle::Reader(r) => Ok(r),
            Handle::Writer(_) => Err(Failure::Not("reading")),
        }
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
        self.with(py, |h| match h {
            Handle::Writer(w) => Ok(w.write(data)?),
            Handle::Reader(_) => Err(Failure::Not("writing")),
        })
    }

    /// The next record, or None at the end of the file.
    fn read<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let record = self.with(py, |h| Ok(Self::reader(h)?.read()?))?;
        Ok(record.map(|r| PyBytes::new(py, &r)))
    }

    /// The record at byte offset `offset` (None past the last one): the
    /// seek and the read under one lock, so that threads reading records
    /// of one file by offset never read at each other's positions. The
    /// reader is left after that record, as a seek and a read leave it.
    fn read_at<'py>(&self, py: Python<'py>, offset: u64) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let record = self.with(py, |h| {
            let r = Self::reader(h)?;
            r.seek(offset)?;
            Ok(r.read()?)
        })?;
        Ok(record.map(|r| PyBytes::new(py, &r)))
    }

    /// Moves the reader to byte offset `offset`.
    fn seek(&self, py: Python<'_>, offset: u64) -> PyResult<()> {
        self.with(py, |h| Ok(Self::reader(h)?.seek(offset)?))
    }

    /// The offset of the next record.
    fn tell(&self, py: Python<'_>) -> u64 {
        self.with(py, |h| {
            Ok(match h {
                Handle::Reader(r) => r.tell(),
                Handle::Writer(w) => w.tell(),
            })
        })
        .unwrap_or(0)
    }

    /// Writes out what a writer buffers.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |h| match h {
            Handle::Writer(w) => Ok(w.flush()?),
            Handle::Reader(_) => Ok(()),
        })
    }
}
