//! .npy files, through ndarray-npy.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use ndarray::ArrayD;
use ndarray_npy::{ReadNpyExt, WriteNpyExt};

use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

fn read_as<T: Element>(path: &Path) -> std::result::Result<Tensor, ndarray_npy::ReadNpyError> {
    let f = File::open(path)?;
    let a = ArrayD::<T>::read_npy(f)?;
    Ok(Tensor::from_array(&a))
}

pub fn read(path: &Path) -> Result<Tensor> {
    let mut last = None;
    for dt in DType::ALL {
        let r = crate::dispatch_all!(dt, T => read_as::<T>(path));
        match r {
            Ok(t) => return Ok(t),
            Err(ndarray_npy::ReadNpyError::WrongDescriptor(d)) => last = Some(d),
            Err(e) => return Err(Error::file(path, format!("cannot read .npy: {e}"))),
        }
    }
    let what = last.map(|d| format!("{d:?}")).unwrap_or_default();
    Err(Error::file(
        path,
        format!("unsupported .npy dtype {what} (supported: f32, f64, i64, i32, bool)"),
    ))
}

pub fn write(t: &Tensor, path: &Path) -> Result<()> {
    let f = File::create(path).map_err(|e| Error::file(path, e))?;
    let mut w = BufWriter::new(f);
    let r = crate::dispatch_all!(t.dtype(), T => t.to_array::<T>()?.write_npy(&mut w));
    r.map_err(|e| Error::file(path, e))
}
