//! Reading .npy files validates the header before allocating anything: the
//! dtype is chosen once from 'descr', the element count is checked
//! arithmetic, and the data must be in the file. Files are crafted by hand.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use vigil_engine::{DType, Error, NpyError, Tensor};

/// This process's scratch directory (no tempfile dev-dependency here).
fn scratch() -> PathBuf {
    std::env::temp_dir().join(format!("vigil-npy-validation-{}", std::process::id()))
}

/// Tests holding a [`Files`] guard.
static ACTIVE: Mutex<usize> = Mutex::new(0);

/// Held by each test that writes files: the last one to finish (or panic)
/// removes the scratch directory.
struct Files;

impl Files {
    fn new() -> Files {
        *ACTIVE.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        Files
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let mut n = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
        *n -= 1;
        if *n == 0 {
            let _ = std::fs::remove_dir_all(scratch());
        }
    }
}

/// A fresh path in the scratch directory.
fn temp_path(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = scratch();
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{tag}-{}.npy", N.fetch_add(1, Ordering::Relaxed)))
}

/// The bytes of a .npy file: magic, version, header length, `dict` padded
/// with spaces and a newline to a multiple of 64, then `data`.
fn npy_bytes(major: u8, dict: &str, data: &[u8]) -> Vec<u8> {
    let len_bytes = if major == 1 { 2 } else { 4 };
    let pre = 6 + 2 + len_bytes;
    let mut header = dict.as_bytes().to_vec();
    while !(pre + header.len() + 1).is_multiple_of(64) {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut out = b"\x93NUMPY".to_vec();
    out.extend_from_slice(&[major, 0]);
    if major == 1 {
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(&header);
    out.extend_from_slice(data);
    out
}

fn write(tag: &str, bytes: &[u8]) -> PathBuf {
    let p = temp_path(tag);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn dict(descr: &str, fortran: bool, shape: &str) -> String {
    let f = if fortran { "True" } else { "False" };
    format!("{{'descr': '{descr}', 'fortran_order': {f}, 'shape': {shape}, }}")
}

/// Why reading `p` fails, after checking that the error is one line
/// naming the file.
fn read_err(p: &PathBuf) -> NpyError {
    let err = Tensor::read_npy(p).expect_err("the file was accepted");
    let text = err.to_string();
    assert!(text.contains(&p.display().to_string()), "{text}");
    assert!(!text.contains('\n'), "{text}");
    match err {
        Error::Npy { path, source } if &path == p => source,
        other => panic!("not an error reading {}: {other:?}", p.display()),
    }
}

/// A reproduction: a 144-byte file declaring 2^40 f32 elements aborted
/// the process ("memory allocation of 4398046511104 bytes failed").
#[test]
fn a_header_declaring_more_data_than_the_file_holds_is_an_error() {
    let _files = Files::new();
    let bytes = npy_bytes(1, &dict("<f4", false, "(1099511627776,)"), &[0u8; 16]);
    assert_eq!(bytes.len(), 144);
    let p = write("huge", &bytes);
    let err = read_err(&p);
    assert!(matches!(err, NpyError::Truncated(_)), "{err:?}");
    let err = err.to_string();
    assert!(
        err.contains("1099511627776 elements")
            && err.contains("4398046511104 bytes")
            && err.contains("16 bytes"),
        "{err}"
    );
    // Truncated data of an ordinary array.
    let p = write("short", &npy_bytes(1, &dict("<f8", false, "(10,)"), &[0u8; 16]));
    let err = read_err(&p);
    assert!(matches!(err, NpyError::Truncated(_)), "{err:?}");
    let err = err.to_string();
    assert!(
        err.contains("10 elements") && err.contains("80 bytes") && err.contains("16 bytes"),
        "{err}"
    );
}

/// Each dtype used to be tried in turn, and ndarray-npy allocates the
/// declared length before it looks at the descriptor.
#[test]
fn an_unsupported_descr_is_refused_before_anything_is_allocated() {
    let _files = Files::new();
    for descr in ["<f16", "|S4", "<c16", ">c8", "<M8[s]"] {
        let p = write(
            "descr",
            &npy_bytes(1, &dict(descr, false, "(1099511627776,)"), &[]),
        );
        let err = read_err(&p);
        assert!(matches!(err, NpyError::DType(_)), "{err:?}");
        assert!(err.to_string().contains(&format!("'{descr}'")), "{err}");
    }
    // A structured dtype's descr is a list.
    let p = write(
        "struct",
        &npy_bytes(
            1,
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",
            &[0; 8],
        ),
    );
    let err = read_err(&p);
    assert!(matches!(err, NpyError::DType(_)), "{err:?}");
    assert!(err.to_string().contains("[('a', '<f4')]"), "{err}");
}

#[test]
fn overflowing_and_deep_shapes_are_errors() {
    let _files = Files::new();
    let p = write(
        "overflow",
        &npy_bytes(1, &dict("<f8", false, "(4294967296, 4294967296)"), &[]),
    );
    assert!(matches!(read_err(&p), NpyError::Shape(_)));
    // An empty array whose other dims overflow: numpy says "array is too big".
    let p = write(
        "zero_overflow",
        &npy_bytes(
            1,
            &dict(
                "<f4",
                false,
                "(0, 4294967296, 4294967296, 4294967296, 4294967296)",
            ),
            &[],
        ),
    );
    assert!(matches!(read_err(&p), NpyError::Shape(_)));
    // A dim beyond u64.
    let p = write(
        "bigdim",
        &npy_bytes(1, &dict("<f4", false, "(99999999999999999999999,)"), &[]),
    );
    assert!(matches!(read_err(&p), NpyError::Header(_)));
    let p = write("negdim", &npy_bytes(1, &dict("<f4", false, "(-1,)"), &[]));
    assert!(matches!(read_err(&p), NpyError::Header(_)));
    let deep = format!("({})", vec!["1"; 65].join(", "));
    let p = write("deep", &npy_bytes(1, &dict("<f4", false, &deep), &[0; 4]));
    let err = read_err(&p);
    assert!(matches!(err, NpyError::Shape(_)), "{err:?}");
    assert!(err.to_string().contains("64"), "{err}");
    let ok = format!("({})", vec!["1"; 64].join(", "));
    let p = write("deep_ok", &npy_bytes(1, &dict("<f4", false, &ok), &[0; 4]));
    assert_eq!(Tensor::read_npy(&p).unwrap().ndim(), 64);
}

#[test]
fn malformed_preambles_and_headers_are_errors() {
    let _files = Files::new();
    let good = npy_bytes(1, &dict("<f4", false, "(1,)"), &[0; 4]);
    let mut bad_magic = good.clone();
    bad_magic[1] = b'X';
    assert!(matches!(
        read_err(&write("magic", &bad_magic)),
        NpyError::Preamble(_)
    ));
    let mut bad_version = good.clone();
    bad_version[6] = 9;
    let err = read_err(&write("version", &bad_version));
    assert!(matches!(err, NpyError::Preamble(_)), "{err:?}");
    assert!(err.to_string().contains("9.0"), "{err}");
    assert!(matches!(
        read_err(&write("tiny", &good[..7])),
        NpyError::Preamble(_)
    ));
    assert!(matches!(read_err(&write("empty", &[])), NpyError::Preamble(_)));
    // A v2 header length far beyond the file.
    let mut v2 = npy_bytes(2, &dict("<f4", false, "(1,)"), &[0; 4]);
    v2[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(read_err(&write("hlen", &v2)), NpyError::Header(_)));
    for d in [
        "{'descr': '<f4', 'shape': (1,), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1, }",
        "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': [1], }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)",
        "['descr']",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } trailing",
    ] {
        let p = write("hdr", &npy_bytes(1, d, &[0; 4]));
        assert!(matches!(read_err(&p), NpyError::Header(_)), "{d}");
    }
    // Extra bytes after the data.
    let p = write("extra", &npy_bytes(1, &dict("<f4", false, "(1,)"), &[0; 8]));
    assert!(matches!(read_err(&p), NpyError::Data(_)));
    // A bool byte that is neither 0 nor 1.
    let p = write("bool", &npy_bytes(1, &dict("|b1", false, "(2,)"), &[1, 7]));
    assert!(matches!(read_err(&p), NpyError::Data(_)));
}

#[test]
fn every_supported_dtype_and_byte_order_reads_back() {
    let _files = Files::new();
    // Written by the engine, read back.
    let cases = [
        Tensor::from_vec(&[2, 3], vec![1.5f32, -2.0, 3.0, 4.0, 5.0, 6.25]).unwrap(),
        Tensor::from_vec(&[3], vec![1.0f64, f64::MAX, -0.0]).unwrap(),
        Tensor::from_vec(&[2, 1], vec![i64::MIN, 7]).unwrap(),
        Tensor::from_vec(&[0, 4], Vec::<i32>::new()).unwrap(),
        Tensor::from_vec(&[], vec![true]).unwrap(),
    ];
    for t in cases {
        let p = temp_path("rt");
        t.write_npy(&p).unwrap();
        let back = Tensor::read_npy(&p).unwrap();
        assert_eq!(back.dtype(), t.dtype());
        assert_eq!(back.shape(), t.shape());
        assert_eq!(back.to_f64_vec().unwrap(), t.to_f64_vec().unwrap());
    }
    // Big-endian forms.
    let be: Vec<u8> = [1.0f64, -2.5].iter().flat_map(|v| v.to_be_bytes()).collect();
    let t = Tensor::read_npy(write("be8", &npy_bytes(1, &dict(">f8", false, "(2,)"), &be))).unwrap();
    assert_eq!(
        (t.dtype(), t.to_f64_vec().unwrap()),
        (DType::F64, vec![1.0, -2.5])
    );
    let be: Vec<u8> = [3.0f32].iter().flat_map(|v| v.to_be_bytes()).collect();
    let t = Tensor::read_npy(write("be4", &npy_bytes(1, &dict(">f4", false, "(1,)"), &be))).unwrap();
    assert_eq!((t.dtype(), t.to_f64_vec().unwrap()), (DType::F32, vec![3.0]));
    let be: Vec<u8> = [-3i32, 9].iter().flat_map(|v| v.to_be_bytes()).collect();
    let t = Tensor::read_npy(write("bei4", &npy_bytes(1, &dict(">i4", false, "(2,)"), &be))).unwrap();
    assert_eq!(
        (t.dtype(), t.to_f64_vec().unwrap()),
        (DType::I32, vec![-3.0, 9.0])
    );
    let be: Vec<u8> = [5i64].iter().flat_map(|v| v.to_be_bytes()).collect();
    let t = Tensor::read_npy(write("bei8", &npy_bytes(1, &dict(">i8", false, "(1, 1)"), &be))).unwrap();
    assert_eq!((t.dtype(), t.shape()), (DType::I64, &[1usize, 1][..]));
    // Fortran order: the file holds columns.
    let col: Vec<u8> = [1i32, 4, 2, 5, 3, 6]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let t = Tensor::read_npy(write(
        "fortran",
        &npy_bytes(1, &dict("<i4", true, "(2, 3)"), &col),
    ))
    .unwrap();
    assert_eq!(t.to_f64_vec().unwrap(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    // Versions 2.0 and 3.0, double quotes, no trailing comma, an empty shape.
    let le: Vec<u8> = 2.0f32.to_le_bytes().to_vec();
    for major in [2, 3] {
        let d = "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": ()}";
        let t = Tensor::read_npy(write("v23", &npy_bytes(major, d, &le))).unwrap();
        assert_eq!((t.shape(), t.to_f64_vec().unwrap()), (&[][..], vec![2.0]));
    }
}
