//! Reading a .npy file respects the allocation limit. The limit is
//! process-global, so this is its own test binary with a single test.

use vigil_engine::tensor::limit::set_alloc_limit;
use vigil_engine::{Error, NpyError, Tensor};

/// Restores the default limit and removes the scratch directory, even when
/// an assertion fails.
struct Restore(std::path::PathBuf);
impl Drop for Restore {
    fn drop(&mut self) {
        set_alloc_limit(0);
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_complete_file_over_the_allocation_limit_is_an_error_naming_it() {
    let dir = std::env::temp_dir().join(format!("vigil-npy-alloc-limit-{}", std::process::id()));
    let _restore = Restore(dir.clone());
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("big.npy");
    Tensor::from_vec(&[200], vec![1.0f64; 200])
        .unwrap()
        .write_npy(&p)
        .unwrap();
    set_alloc_limit(1000);
    let err = Tensor::read_npy(&p).expect_err("read over the limit");
    match &err {
        Error::Npy {
            path,
            source: NpyError::Alloc(e),
        } if path == &p => assert!(
            matches!(
                **e,
                Error::AllocTooLarge {
                    bytes: 1600,
                    limit: 1000,
                    ..
                }
            ),
            "{e:?}"
        ),
        other => panic!("not refused by the allocation limit: {other:?}"),
    }
    assert!(err.to_string().contains(&p.display().to_string()), "{err}");
    set_alloc_limit(1600);
    assert_eq!(Tensor::read_npy(&p).unwrap().shape(), &[200]);
}
