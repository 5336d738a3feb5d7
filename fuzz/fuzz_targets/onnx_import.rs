//! The ONNX importer on arbitrary bytes: decoding and importing return a
//! case or an error, never panic; an imported graph loads or is refused.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use vigil_onnx::{decode_model, import, Options};

fuzz_target!(|data: &[u8]| {
    let Ok(model) = decode_model(data, Path::new("fuzz.onnx")) else { return };
    let Ok(imported) = import(&model, &Options::default()) else { return };
    let _ = serde_json::to_string(&imported.file);
});
