//! RecordIO: MXNet's `.rec` files (dmlc-core's format), byte for byte.
//!
//! A file is a sequence of records. Each record is written as
//! `magic lrec data pad`: the magic number `0xced7230a` and `lrec` are
//! little-endian `u32`s, `lrec` holding a 3-bit continuation flag above a
//! 29-bit length, and `pad` zero bytes up to a multiple of 4. A record
//! whose data holds the magic number at a 4-byte-aligned offset is split
//! there into parts (flag 1 for the first, 2 for middle ones, 3 for the
//! last; 0 for a record in one part), the magic number itself dropped and
//! put back on reading, so a reader can find record starts by scanning for
//! the magic number. Records are at most 2^29 - 1 bytes.
//!
//! [`RecordWriter`] writes records as dmlc-core's `RecordIOWriter` does;
//! [`RecordReader`] reads them back and can seek to a record's offset (what
//! an `.idx` file lists). Malformed files are errors naming the file and
//! the offset, never panics.

use oxnet_core::{Error, Result};
use std::fs::File;
use std::io::{BufReader, BufWriter, ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The number that starts every record part.
pub const MAGIC: u32 = 0xced7_230a;

/// The largest record (in bytes) the format can hold.
pub const MAX_RECORD: usize = (1 << 29) - 1;

fn encode(flag: u32, len: usize) -> u32 {
    (flag << 29) | len as u32
}

/// Rounds `len` up to a multiple of 4.
fn padded(len: usize) -> usize {
    (len + 3) & !3
}

fn io_error(path: &Path, what: &str, e: std::io::Error) -> Error {
    Error::Invalid(format!("RecordIO file `{}`: {what}: {e}", path.display()))
}

/// Writes records to a file.
pub struct RecordWriter {
    path: PathBuf,
    out: BufWriter<File>,
    /// Bytes written so far (the next record's offset).
    position: u64,
}

impl RecordWriter {
    /// Creates (or truncates) `path`.
    pub fn create(path: impl AsRef<Path>) -> Result<RecordWriter> {
        let path = path.as_ref().to_path_buf();
        let file = File::create(&path).map_err(|e| io_error(&path, "cannot create it", e))?;
        Ok(RecordWriter { path, out: BufWriter::new(file), position: 0 })
    }

    /// Appends to `path` (MXNet's flag `a`), creating it if needed.
    pub fn append(path: impl AsRef<Path>) -> Result<RecordWriter> {
        let path = path.as_ref().to_path_buf();
        let file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path)
            .map_err(|e| io_error(&path, "cannot open it to append", e))?;
        let position = file.metadata().map_err(|e| io_error(&path, "cannot read its size", e))?.len();
        Ok(RecordWriter { path, out: BufWriter::new(file), position })
    }

    /// The offset the next record will start at.
    pub fn tell(&self) -> u64 {
        self.position
    }

    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes).map_err(|e| io_error(&self.path, "cannot write", e))?;
        self.position += bytes.len() as u64;
        Ok(())
    }

    fn part(&mut self, flag: u32, data: &[u8]) -> Result<()> {
        self.put(&MAGIC.to_le_bytes())?;
        self.put(&encode(flag, data.len()).to_le_bytes())?;
        self.put(data)
    }

    /// Appends one record.
    pub fn write(&mut self, data: &[u8]) -> Result<()> {
        if data.len() > MAX_RECORD {
            return Err(Error::Invalid(format!(
                "RecordIO file `{}`: a record of {} bytes is over the format's limit of {MAX_RECORD}",
                self.path.display(),
                data.len()
            )));
        }
        let magic = MAGIC.to_le_bytes();
        let mut start = 0;
        for at in (0..data.len() / 4 * 4).step_by(4) {
            if data[at..at + 4] == magic {
                self.part(if start == 0 { 1 } else { 2 }, &data[start..at])?;
                start = at + 4;
            }
        }
        self.part(if start == 0 { 0 } else { 3 }, &data[start..])?;
        let pad = padded(data.len()) - data.len();
        self.put(&[0u8; 3][..pad])
    }

    /// Writes out what is buffered.
    pub fn flush(&mut self) -> Result<()> {
        self.out.flush().map_err(|e| io_error(&self.path, "cannot write", e))
    }
}

impl Drop for RecordWriter {
    fn drop(&mut self) {
        // an error here has no one to go to; `flush` reports it to callers who ask
        let _ = self.out.flush();
    }
}

/// Reads records from a file, in order or from a given offset.
pub struct RecordReader {
    path: PathBuf,
    input: BufReader<File>,
    /// The offset of the next byte to read.
    position: u64,
    size: u64,
}

impl RecordReader {
    /// Opens `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<RecordReader> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(|e| io_error(&path, "cannot open it", e))?;
        let size = file.metadata().map_err(|e| io_error(&path, "cannot read its size", e))?.len();
        Ok(RecordReader { path, input: BufReader::with_capacity(1 << 20, file), position: 0, size })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The offset the next record is read from.
    pub fn tell(&self) -> u64 {
        self.position
    }

    /// Moves to `offset` (a record's start, as an `.idx` file gives it).
    pub fn seek(&mut self, offset: u64) -> Result<()> {
        if offset > self.size {
            return Err(
                self.bad(offset, format!("cannot seek past the end of the file ({} bytes)", self.size))
            );
        }
        self.input.seek(SeekFrom::Start(offset)).map_err(|e| io_error(&self.path, "cannot seek", e))?;
        self.position = offset;
        Ok(())
    }

    fn bad(&self, offset: u64, msg: String) -> Error {
        Error::Invalid(format!("RecordIO file `{}`, offset {offset}: {msg}", self.path.display()))
    }

    /// Fills `buf`; false at the end of the file before any byte; an error
    /// when the file ends inside it.
    fn fill(&mut self, buf: &mut [u8], what: &str) -> Result<bool> {
        let mut got = 0;
        while got < buf.len() {
            match self.input.read(&mut buf[got..]) {
                Ok(0) if got == 0 => return Ok(false),
                Ok(0) => {
                    return Err(self.bad(
                        self.position,
                        format!("the file ends inside {what} ({got} of {} bytes)", buf.len()),
                    ))
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(io_error(&self.path, "cannot read", e)),
            }
        }
        self.position += buf.len() as u64;
        Ok(true)
    }

    /// The offsets of every record from the current position to the end,
    /// found by reading only the part headers (the data is skipped).
    pub fn offsets(&mut self) -> Result<Vec<u64>> {
        let mut found = Vec::new();
        let mut in_record = false;
        loop {
            let at = self.position;
            let mut header = [0u8; 8];
            if !self.fill(&mut header, "a record header")? {
                if in_record {
                    return Err(self.bad(at, "the file ends inside a record split in parts".into()));
                }
                return Ok(found);
            }
            let (flag, len) = self.check_header(at, &header, !in_record)?;
            if !in_record {
                found.push(at);
            }
            in_record = flag == 1 || flag == 2;
            self.seek(self.position + padded(len) as u64)?;
        }
    }

    /// The part flag and length of the header read at `at` (`first`: a
    /// record's first part); errors for a wrong magic number, a flag out of
    /// place or data past the end of the file.
    fn check_header(&self, at: u64, header: &[u8; 8], first: bool) -> Result<(u32, usize)> {
        let magic = u32::from_le_bytes(header[..4].try_into().expect("4 bytes"));
        if magic != MAGIC {
            return Err(self.bad(at, format!("expected the magic number 0x{MAGIC:08x}, found 0x{magic:08x}")));
        }
        let lrec = u32::from_le_bytes(header[4..].try_into().expect("4 bytes"));
        let (flag, len) = (lrec >> 29, (lrec & ((1 << 29) - 1)) as usize);
        let expected = if first { [0, 1].contains(&flag) } else { [2, 3].contains(&flag) };
        if !expected {
            let want = if first { "0 or 1 (a record's first part)" } else { "2 or 3 (a later part)" };
            return Err(self.bad(at, format!("part flag {flag}, expected {want}")));
        }
        if (self.size - self.position) < padded(len) as u64 {
            return Err(self.bad(
                at,
                format!("a part of {len} bytes, but only {} bytes follow", self.size - self.position),
            ));
        }
        Ok((flag, len))
    }

    /// The next record, or `None` at the end of the file.
    pub fn read(&mut self) -> Result<Option<Vec<u8>>> {
        let start = self.position;
        let mut record = Vec::new();
        let mut first = true;
        loop {
            let at = self.position;
            let mut header = [0u8; 8];
            if !self.fill(&mut header, "a record header")? {
                if first {
                    return Ok(None);
                }
                return Err(self.bad(start, "the file ends inside a record split in parts".into()));
            }
            let (flag, len) = self.check_header(at, &header, first)?;
            if !first {
                record.extend_from_slice(&MAGIC.to_le_bytes());
            }
            let from = record.len();
            record.resize(from + padded(len), 0);
            self.fill(&mut record[from..], "a record's data")?;
            record.truncate(from + len);
            if flag == 0 || flag == 3 {
                return Ok(Some(record));
            }
            first = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_length_word_holds_the_flag_above_29_bits() {
        assert_eq!(encode(3, 5), (3 << 29) | 5);
        assert_eq!(padded(0), 0);
        assert_eq!(padded(5), 8);
        assert_eq!(padded(8), 8);
    }
}
