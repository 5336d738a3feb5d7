//! The .npy reader on arbitrary bytes: a tensor or an error naming the
//! file, never a panic or an allocation the header merely claims.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vigil_engine::Tensor;

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = Tensor::read_npy_bytes(data, "fuzz.npy") {
        // What was read can be read back element by element.
        let _ = t.to_f64_vec();
    }
});
