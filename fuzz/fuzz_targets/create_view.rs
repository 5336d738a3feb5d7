//! create_view index resolution on arbitrary index vectors and shapes: a
//! valid layout inside its buffer or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vigil_engine::tensor::index::apply;
use vigil_engine::{IndexSpec, Layout, Tensor};

fuzz_target!(|data: &[u8]| {
    // Byte 0: rank (0-4); then one byte per dimension (0-7); the rest are
    // little-endian i16 words, widened to i64 so that small and negative
    // values are common, cut into index vectors whose length follows the
    // kind in their first word (point 5, interval 7, all and new axis 4).
    let Some((&rank, rest)) = data.split_first() else { return };
    let rank = (rank % 5) as usize;
    if rest.len() < rank {
        return;
    }
    let shape: Vec<usize> = rest[..rank].iter().map(|&d| (d % 8) as usize).collect();
    let words: Vec<i64> = rest[rank..]
        .chunks_exact(2)
        .map(|c| i16::from_le_bytes([c[0], c[1]]) as i64)
        .collect();
    let mut specs = Vec::new();
    let mut at = 0;
    while at < words.len() {
        let len = [5, 7, 4, 4][words[at].rem_euclid(4) as usize];
        let Some(v) = words.get(at..at + len) else { return };
        match IndexSpec::decode(v, specs.len()) {
            Ok(s) => specs.push(s),
            Err(_) => return,
        }
        at += len;
    }
    let n: usize = shape.iter().product();
    let base = Tensor::from_vec(&shape, (0..n).map(|i| i as f32).collect::<Vec<_>>()).unwrap();
    let Ok(layout) = apply(&Layout::contiguous(&shape), &specs) else { return };
    // The view must stay inside its buffer and read back the base's values.
    let view = base.with_layout(layout).expect("a resolved view lies inside its buffer");
    let _ = view.to_f64_vec().expect("a view reads");
    let sliced = base.slice(&specs).expect("slice agrees with apply");
    assert_eq!(sliced.shape(), view.shape());
});
