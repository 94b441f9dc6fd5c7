//! RecordIO: the bytes written against hand-worked layouts (dmlc-core's
//! format), round trips of random records (the magic number inside
//! included), seeking to offsets, and a bounded fuzz of corrupted and
//! truncated files (errors naming the file and offset, never panics).

use oxnet_io::recordio::{RecordReader, RecordWriter, MAGIC};
use rand::{Rng, RngCore, SeedableRng};
use rand_pcg::Pcg64;
use std::path::PathBuf;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("oxnet-io-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn write_all(path: &PathBuf, records: &[Vec<u8>]) -> Vec<u64> {
    let mut w = RecordWriter::create(path).unwrap();
    let mut offsets = Vec::new();
    for r in records {
        offsets.push(w.tell());
        w.write(r).unwrap();
    }
    w.flush().unwrap();
    offsets
}

fn read_all(path: &PathBuf) -> Vec<Vec<u8>> {
    let mut r = RecordReader::open(path).unwrap();
    let mut out = Vec::new();
    while let Some(rec) = r.read().unwrap() {
        out.push(rec);
    }
    out
}

fn words(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

#[test]
fn a_record_is_magic_length_data_and_padding() {
    let path = temp("layout.rec");
    write_all(&path, &[b"abcde".to_vec(), Vec::new()]);
    let bytes = std::fs::read(&path).unwrap();
    // magic, length 5 (flag 0), "abcd", "e" + 3 zero bytes; then an empty record
    assert_eq!(bytes.len(), 4 + 4 + 8 + 4 + 4);
    assert_eq!(words(&bytes[..8]), vec![MAGIC, 5]);
    assert_eq!(&bytes[8..16], b"abcde\0\0\0");
    assert_eq!(words(&bytes[16..]), vec![MAGIC, 0]);
    assert_eq!(read_all(&path), vec![b"abcde".to_vec(), Vec::new()]);
}

#[test]
fn the_magic_number_at_an_aligned_offset_splits_the_record() {
    let path = temp("split.rec");
    let magic = MAGIC.to_le_bytes();
    // "wxyz" MAGIC "ab": parts "wxyz" (flag 1) and "ab" (flag 3)
    let mut record = b"wxyz".to_vec();
    record.extend_from_slice(&magic);
    record.extend_from_slice(b"ab");
    // the magic number at an unaligned offset stays in the data
    let mut unaligned = b"q".to_vec();
    unaligned.extend_from_slice(&magic);
    write_all(&path, &[record.clone(), unaligned.clone()]);
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(words(&bytes[..8]), vec![MAGIC, (1 << 29) | 4]);
    assert_eq!(&bytes[8..12], b"wxyz");
    assert_eq!(words(&bytes[12..20]), vec![MAGIC, (3 << 29) | 2]);
    assert_eq!(&bytes[20..24], b"ab\0\0");
    assert_eq!(words(&bytes[24..32]), vec![MAGIC, 5]);
    assert_eq!(read_all(&path), vec![record, unaligned]);
    // a record that starts with the magic number, and one that is only it
    let path = temp("split2.rec");
    let mut leading = magic.to_vec();
    leading.extend_from_slice(&magic);
    leading.extend_from_slice(b"end");
    write_all(&path, &[leading.clone(), magic.to_vec()]);
    assert_eq!(read_all(&path), vec![leading, magic.to_vec()]);
}

fn random_records(rng: &mut Pcg64, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|_| {
            let len = rng.random_range(0..200);
            let mut r = vec![0u8; len];
            rng.fill_bytes(&mut r);
            // plant the magic number at aligned offsets now and then
            for at in (0..len.saturating_sub(3)).step_by(4) {
                if rng.random_range(0..6) == 0 {
                    r[at..at + 4].copy_from_slice(&MAGIC.to_le_bytes());
                }
            }
            r
        })
        .collect()
}

#[test]
fn random_records_round_trip_and_offsets_seek_to_them() {
    let mut rng = Pcg64::seed_from_u64(7);
    let records = random_records(&mut rng, 300);
    let path = temp("random.rec");
    let offsets = write_all(&path, &records);
    assert_eq!(read_all(&path), records);
    let mut reader = RecordReader::open(&path).unwrap();
    for k in [299, 0, 150, 7, 150] {
        reader.seek(offsets[k]).unwrap();
        assert_eq!(reader.tell(), offsets[k]);
        assert_eq!(reader.read().unwrap().unwrap(), records[k], "record {k}");
    }
    let e = reader.seek(reader.size() + 1).unwrap_err().to_string();
    assert!(e.contains("random.rec") && e.contains("past the end"), "{e}");
    // appending continues the file
    let mut w = RecordWriter::append(&path).unwrap();
    assert_eq!(w.tell(), std::fs::metadata(&path).unwrap().len());
    w.write(b"one more").unwrap();
    drop(w);
    let all = read_all(&path);
    assert_eq!(all.len(), 301);
    assert_eq!(all[300], b"one more");
}

#[test]
fn malformed_files_are_errors_naming_the_file_and_offset() {
    let path = temp("bad.rec");
    std::fs::write(&path, [0u8; 8]).unwrap();
    let e = RecordReader::open(&path).unwrap().read().unwrap_err().to_string();
    assert!(e.contains("bad.rec") && e.contains("offset 0") && e.contains("magic"), "{e}");
    // a header promising more data than the file holds
    let mut bytes = MAGIC.to_le_bytes().to_vec();
    bytes.extend_from_slice(&100u32.to_le_bytes());
    bytes.extend_from_slice(b"short");
    std::fs::write(&path, &bytes).unwrap();
    let e = RecordReader::open(&path).unwrap().read().unwrap_err().to_string();
    assert!(e.contains("100 bytes") && e.contains("only 5"), "{e}");
    // a truncated header
    std::fs::write(&path, &bytes[..6]).unwrap();
    let e = RecordReader::open(&path).unwrap().read().unwrap_err().to_string();
    assert!(e.contains("ends inside a record header"), "{e}");
    // a first part that says it continues nothing
    let mut bytes = MAGIC.to_le_bytes().to_vec();
    bytes.extend_from_slice(&(2u32 << 29).to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let e = RecordReader::open(&path).unwrap().read().unwrap_err().to_string();
    assert!(e.contains("part flag 2"), "{e}");
    let e = RecordReader::open(temp("missing.rec")).err().unwrap().to_string();
    assert!(e.contains("missing.rec") && e.contains("cannot open"), "{e}");
}

#[test]
fn corrupted_and_truncated_files_never_panic() {
    let mut rng = Pcg64::seed_from_u64(11);
    let path = temp("fuzz-src.rec");
    write_all(&path, &random_records(&mut rng, 20));
    let good = std::fs::read(&path).unwrap();
    let fuzz = temp("fuzz.rec");
    for round in 0..400 {
        let mut bytes = good.clone();
        match round % 3 {
            0 => bytes.truncate(rng.random_range(0..bytes.len())),
            1 => {
                for _ in 0..rng.random_range(1..8) {
                    let at = rng.random_range(0..bytes.len());
                    bytes[at] = rng.random();
                }
            }
            _ => {
                // corrupt a length word
                let at = rng.random_range(0..bytes.len() / 4) * 4;
                bytes[at..at + 4].copy_from_slice(&rng.random::<u32>().to_le_bytes());
            }
        }
        std::fs::write(&fuzz, &bytes).unwrap();
        let mut reader = RecordReader::open(&fuzz).unwrap();
        let mut n = 0;
        loop {
            match reader.read() {
                Ok(Some(_)) => n += 1,
                Ok(None) => break,
                Err(e) => {
                    assert!(e.to_string().contains("fuzz.rec"), "{e}");
                    break;
                }
            }
            assert!(n <= 20 + good.len(), "round {round}: the reader does not stop");
        }
    }
}
