//! Parameter files: round trips of both formats for every dtype, 0-d and
//! empty arrays, named and unnamed lists; hand-built MXNet records of every
//! version; and the errors corrupt files give.

use oxnet_core::half::{bf16, f16};
use oxnet_core::{DType, Device, NDArray};
use oxnet_nn::io::{self, mxnet_format, Format, ParamList};
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("oxnet-params-io-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// One array of every dtype with values that dtype holds exactly.
fn every_dtype() -> Vec<NDArray> {
    vec![
        NDArray::from_vec(vec![1.5f32, -2.25, 3.0e-7, f32::MAX, -0.0, 7.0], &[2, 3]).unwrap(),
        NDArray::from_vec(vec![1.0f64 / 3.0, -1e300], &[2]).unwrap(),
        NDArray::from_vec(vec![f16::from_f32(0.5), f16::from_f32(-65504.0), f16::from_f32(1e-3)], &[3, 1])
            .unwrap(),
        NDArray::from_vec(vec![0u8, 1, 128, 255], &[2, 2]).unwrap(),
        NDArray::from_vec(vec![i32::MIN, -1, 0, i32::MAX], &[4]).unwrap(),
        NDArray::from_vec(vec![-128i8, 0, 127], &[1, 3]).unwrap(),
        NDArray::from_vec(vec![i64::MIN, 1 << 40, i64::MAX], &[3]).unwrap(),
        NDArray::from_vec(vec![true, false, true], &[3]).unwrap(),
        NDArray::from_vec(vec![bf16::from_f32(1.0), bf16::from_f32(-3.5e10)], &[2]).unwrap(),
    ]
}

/// Raw bytes of an array (its elements, little-endian), for exact comparison.
fn raw(a: &NDArray) -> Vec<u8> {
    let c = a.contiguous().unwrap();
    oxnet_core::with_dtype!(c.dtype(), T => {
        let v = c.to_vec::<T>().unwrap();
        let n = v.len() * std::mem::size_of::<T>();
        // SAFETY: plain element values, read as bytes.
        unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), n) }.to_vec()
    })
}

fn assert_same(a: &NDArray, b: &NDArray) {
    assert_eq!(a.dtype(), b.dtype());
    assert_eq!(a.shape(), b.shape());
    assert_eq!(b.device(), Device::Cpu);
    assert_eq!(raw(a), raw(b), "values differ for {} {:?}", a.dtype(), a.shape());
}

fn assert_same_list(a: &ParamList, b: &ParamList) {
    assert_eq!(a.names(), b.names());
    assert_eq!(a.len(), b.len());
    for (x, y) in a.arrays().into_iter().zip(b.arrays()) {
        assert_same(x, y);
    }
}

fn err_text(r: oxnet_core::Result<ParamList>) -> String {
    match r {
        Ok(l) => panic!("expected an error, got {l:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn every_dtype_round_trips_in_both_formats() {
    let arrays = every_dtype();
    let named = ParamList::Named(
        arrays.iter().enumerate().map(|(i, a)| (format!("p{i}.{}", a.dtype()), a.clone())).collect(),
    );
    let unnamed = ParamList::Unnamed(arrays);
    for list in [&named, &unnamed] {
        let back = io::from_bytes(&io::to_bytes(list).unwrap()).unwrap();
        assert_same_list(list, &back);
        let st = io::safetensors_to_bytes(list).unwrap();
        assert_eq!(io::detect_format(&st), Some(Format::Safetensors));
        assert_same_list(list, &io::safetensors_from_bytes(&st).unwrap());
        // `from_bytes` recognises safetensors too
        assert_same_list(list, &io::from_bytes(&st).unwrap());
    }
}

#[test]
fn zero_d_and_empty_arrays_round_trip_as_version_3() {
    let list = ParamList::Named(vec![
        ("scalar".into(), NDArray::scalar(2.5f32)),
        ("empty".into(), NDArray::zeros(&[0, 3], DType::F32, Device::Cpu).unwrap()),
        ("none".into(), NDArray::zeros(&[0], DType::I64, Device::Cpu).unwrap()),
        ("m".into(), NDArray::from_vec(vec![1.0f64, 2.0], &[2]).unwrap()),
    ]);
    let bytes = io::to_bytes(&list).unwrap();
    assert_eq!(bytes[24..28], mxnet_format::V3_MAGIC.to_le_bytes());
    assert_same_list(&list, &io::from_bytes(&bytes).unwrap());
    assert_same_list(&list, &io::safetensors_from_bytes(&io::safetensors_to_bytes(&list).unwrap()).unwrap());
    // without such arrays the records are version 2, which MXNet reads by default
    let plain = ParamList::Unnamed(vec![NDArray::from_vec(vec![1.0f32], &[1]).unwrap()]);
    assert_eq!(io::to_bytes(&plain).unwrap()[24..28], mxnet_format::V2_MAGIC.to_le_bytes());
}

#[test]
fn empty_lists_and_non_contiguous_arrays() {
    for list in [ParamList::Unnamed(vec![]), ParamList::Named(vec![])] {
        let bytes = io::to_bytes(&list).unwrap();
        assert_eq!(bytes.len(), 32);
        // no arrays, no names: an empty unnamed list, as MXNet reads it
        assert!(matches!(io::from_bytes(&bytes).unwrap(), ParamList::Unnamed(v) if v.is_empty()));
    }
    let st =
        io::safetensors_from_bytes(&io::safetensors_to_bytes(&ParamList::Unnamed(vec![])).unwrap()).unwrap();
    assert!(matches!(st, ParamList::Unnamed(v) if v.is_empty()));

    let m = NDArray::from_vec((0..6).map(|i| i as f32).collect::<Vec<_>>(), &[2, 3]).unwrap();
    let t = m.transpose(None).unwrap();
    assert!(!t.is_contiguous());
    let back = io::from_bytes(&io::to_bytes(&ParamList::Unnamed(vec![t])).unwrap()).unwrap();
    let a = back.arrays()[0];
    assert_eq!(a.shape(), &[3, 2]);
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
}

#[test]
fn named_lists_keep_their_order_in_both_formats() {
    let names = ["zeta", "alpha", "1.weight", "0.bias", "mid"];
    let list = ParamList::Named(
        names.iter().enumerate().map(|(i, n)| (n.to_string(), NDArray::scalar(i as f32))).collect(),
    );
    for back in [
        io::from_bytes(&io::to_bytes(&list).unwrap()).unwrap(),
        io::safetensors_from_bytes(&io::safetensors_to_bytes(&list).unwrap()).unwrap(),
    ] {
        assert_eq!(back.names().unwrap(), names.to_vec());
        assert_eq!(back.get("mid").unwrap().to_scalar().unwrap(), 4.0);
    }
}

#[test]
fn files_are_written_atomically_and_read_back() {
    let path = tmp("model.params");
    let list = ParamList::Named(vec![("w".into(), NDArray::from_vec(vec![1i32, 2, 3], &[3]).unwrap())]);
    io::save(&path, &list).unwrap();
    io::save(&path, &list).unwrap(); // overwrites
    assert_same_list(&list, &io::load(&path).unwrap());
    let st = tmp("model.safetensors");
    io::save_safetensors(&st, &list).unwrap();
    assert_same_list(&list, &io::load_safetensors(&st).unwrap());
    assert_same_list(&list, &io::load(&st).unwrap());
    // no temporary file stays behind
    let dir = path.parent().unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // a failed save leaves the old file whole
    let dup =
        ParamList::Named(vec![("a".into(), NDArray::scalar(1.0f32)), ("a".into(), NDArray::scalar(2.0f32))]);
    let msg = io::save(&path, &dup).unwrap_err().to_string();
    assert!(msg.contains("duplicate parameter name `a`") && msg.contains("model.params"), "{msg}");
    assert_same_list(&list, &io::load(&path).unwrap());
    assert!(io::save_safetensors(&st, &dup).unwrap_err().to_string().contains("duplicate"));

    let missing = tmp("missing.params");
    let msg = io::load(&missing).unwrap_err().to_string();
    assert!(msg.contains("missing.params") && msg.contains("cannot read"), "{msg}");
    let msg = io::save(&tmp("no-such-dir").join("x.params"), &list).unwrap_err().to_string();
    assert!(msg.contains("x.params"), "{msg}");
}

/// Hand-built records: an MXNet list of `records` with `names`.
fn list_file(records: &[Vec<u8>], names: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend(0x112u64.to_le_bytes());
    out.extend(0u64.to_le_bytes());
    out.extend((records.len() as u64).to_le_bytes());
    for r in records {
        out.extend(r);
    }
    out.extend((names.len() as u64).to_le_bytes());
    for n in names {
        out.extend((n.len() as u64).to_le_bytes());
        out.extend(*n);
    }
    out
}

fn ctx_flag_data(dev_type: i32, flag: i32, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend(dev_type.to_le_bytes());
    out.extend(0i32.to_le_bytes());
    out.extend(flag.to_le_bytes());
    out.extend(data);
    out
}

fn v2_record(magic: u32, stype: i32, shape: &[i64], dev_type: i32, flag: i32, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend(magic.to_le_bytes());
    out.extend(stype.to_le_bytes());
    out.extend((shape.len() as i32).to_le_bytes());
    for d in shape {
        out.extend(d.to_le_bytes());
    }
    out.extend(ctx_flag_data(dev_type, flag, data));
    out
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn legacy_version_1_and_older_records_are_read() {
    // version 1: magic, i32 ndim + i64 extents, context, flag, data
    let mut v1 = Vec::new();
    v1.extend(mxnet_format::V1_MAGIC.to_le_bytes());
    v1.extend(2i32.to_le_bytes());
    v1.extend(1i64.to_le_bytes());
    v1.extend(2i64.to_le_bytes());
    v1.extend(ctx_flag_data(1, 0, &f32_bytes(&[1.0, 2.0])));
    // before version 1: u32 ndim (in place of a magic), u32 extents
    let mut v0 = Vec::new();
    v0.extend(1u32.to_le_bytes());
    v0.extend(3u32.to_le_bytes());
    v0.extend(ctx_flag_data(1, 4, &[7, 0, 0, 0, 8, 0, 0, 0, 9, 0, 0, 0]));
    let list = io::from_bytes(&list_file(&[v1, v0], &[b"old", b"older"])).unwrap();
    assert_eq!(list.names().unwrap(), vec!["old", "older"]);
    let old = list.get("old").unwrap();
    assert_eq!(old.shape(), &[1, 2]);
    assert_eq!(old.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
    let older = list.get("older").unwrap();
    assert_eq!((older.dtype(), older.shape()), (DType::I32, &[3usize][..]));
    assert_eq!(older.to_vec::<i32>().unwrap(), vec![7, 8, 9]);
}

#[test]
fn gpu_and_pinned_contexts_load_on_the_cpu_and_bool_bytes_normalise() {
    let rec = |dev| v2_record(mxnet_format::V2_MAGIC, 0, &[2], dev, 0, &f32_bytes(&[3.0, 4.0]));
    let bools = v2_record(mxnet_format::V2_MAGIC, 0, &[3], 1, 7, &[0, 1, 200]);
    let list = io::from_bytes(&list_file(&[rec(2), rec(3), rec(5), bools], &[])).unwrap();
    for a in &list.arrays()[..3] {
        assert_eq!(a.device(), Device::Cpu);
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![3.0, 4.0]);
    }
    assert_eq!(list.arrays()[3].to_vec::<bool>().unwrap(), vec![false, true, true]);
    assert_eq!(raw(list.arrays()[3]), vec![0, 1, 1]);
}

#[test]
fn corrupt_files_give_errors_that_say_what_is_wrong() {
    let good = v2_record(mxnet_format::V2_MAGIC, 0, &[2], 1, 0, &f32_bytes(&[3.0, 4.0]));
    let v2 = |stype, shape: &[i64], dev, flag, data: &[u8]| {
        v2_record(mxnet_format::V2_MAGIC, stype, shape, dev, flag, data)
    };
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"hello world, not params".to_vec(), "bad magic"),
        (vec![1, 2, 3], "not a parameter file"),
        (
            {
                let mut f = list_file(std::slice::from_ref(&good), &[]);
                f.truncate(60);
                f
            },
            "truncated at byte",
        ),
        (list_file(&[v2(1, &[2], 1, 0, &[])], &[]), "row_sparse storage is not supported"),
        (list_file(&[v2(2, &[2], 1, 0, &[])], &[]), "csr storage is not supported"),
        (list_file(&[v2(9, &[2], 1, 0, &[])], &[]), "unknown storage type 9"),
        (list_file(&[v2(0, &[2], 1, 8, &[0; 4])], &[]), "int16"),
        (list_file(&[v2(0, &[2], 1, 42, &[0; 4])], &[]), "unknown dtype flag 42"),
        (list_file(&[v2(0, &[2], 7, 0, &[0; 8])], &[]), "unknown device type 7"),
        (list_file(&[v2(0, &[-3], 1, 0, &[])], &[]), "invalid extent -3"),
        (list_file(&[v2(0, &[], 1, 0, &[0; 4])], &[]), "empty MXNet NDArray"),
        (list_file(&[v2(0, &[1 << 20, 1 << 20], 1, 0, &[])], &[]), "needs"),
        (list_file(&[v2(0, &[i64::MAX, i64::MAX, 0], 1, 0, &[])], &[]), "too large"),
        (list_file(std::slice::from_ref(&good), &[b"a", b"b"]), "2 names for 1 arrays"),
        (list_file(&[good.clone(), good.clone()], &[b"a", b"a"]), "duplicate name `a`"),
        (list_file(std::slice::from_ref(&good), &[b"\xff\xfe"]), "invalid UTF-8"),
        (
            list_file(&[[vec![0xde, 0xad, 0xbe, 0xef], vec![0; 20]].concat()], &[]),
            "unknown record magic 0xefbeadde",
        ),
        (
            {
                let mut f = list_file(std::slice::from_ref(&good), &[]);
                f[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
                f
            },
            "claims",
        ),
        (
            {
                let mut f = list_file(std::slice::from_ref(&good), &[b"name"]);
                let n = f.len();
                f[n - 12..n - 4].copy_from_slice(&(1u64 << 62).to_le_bytes());
                f
            },
            "exceeds",
        ),
    ];
    for (bytes, expect) in cases {
        let msg = err_text(io::from_bytes(&bytes));
        assert!(msg.contains(expect), "expected `{expect}` in: {msg}");
        assert!(msg.starts_with("parameter buffer"), "{msg}");
    }
    // loading from a file names the file
    let path = tmp("corrupt.params");
    let mut bytes = list_file(&[good], &[]);
    bytes.truncate(bytes.len() - 3);
    std::fs::write(&path, &bytes).unwrap();
    let msg = err_text(io::load(&path));
    assert!(msg.contains("corrupt.params") && msg.contains("truncated at byte"), "{msg}");
    // a safetensors loader refuses MXNet bytes and names the file
    let msg = err_text(io::load_safetensors(&path));
    assert!(msg.contains("corrupt.params") && msg.contains("safetensors"), "{msg}");
}

#[test]
fn safetensors_from_other_writers_read_in_file_order() {
    // a file without oxnet's notes: a named list in data order
    let header = br#"{"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"I64","shape":[],"data_offsets":[4,12]}}"#;
    let mut bytes = Vec::new();
    bytes.extend((header.len() as u64).to_le_bytes());
    bytes.extend(header);
    bytes.extend(2.0f32.to_le_bytes());
    bytes.extend(5i64.to_le_bytes());
    let list = io::from_bytes(&bytes).unwrap();
    assert_eq!(list.names().unwrap(), vec!["b", "a"]);
    assert_eq!(list.get("a").unwrap().to_vec::<i64>().unwrap(), vec![5]);
    assert_eq!(list.get("a").unwrap().ndim(), 0);

    let header = br#"{"x":{"dtype":"U16","shape":[1],"data_offsets":[0,2]}}"#;
    let mut bytes = Vec::new();
    bytes.extend((header.len() as u64).to_le_bytes());
    bytes.extend(header);
    bytes.extend([0u8, 0]);
    let msg = err_text(io::safetensors_from_bytes(&bytes));
    assert!(msg.contains("tensor `x`") && msg.contains("U16"), "{msg}");
}
