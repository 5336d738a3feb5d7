//! What goes back to the buffer pool when a tensor drops. A file of its
//! own: the pool is one per process, and these tests read what it holds.

use vigil_engine::tensor::buffer_pool;
use vigil_engine::{DType, Tensor};

/// A length no other test in this process uses.
const N: usize = 7907;

#[test]
fn only_buffers_the_pool_handed_out_go_back_to_it() {
    // A tensor of the caller's own vector: freed when it drops, so the
    // pool cannot serve it again.
    let foreign = Tensor::from_vec(&[N], vec![7.0f32; N]).unwrap();
    drop(foreign);
    let after_foreign = buffer_pool::stats().pooled_bytes;
    assert!(
        !buffer_pool::take::<f32>(N)[..N].iter().all(|&x| x == 7.0),
        "a foreign vector was pooled"
    );

    // A tensor the pool made goes back whole, and serves the next request.
    let made = Tensor::from_array(&ndarray::ArrayD::from_elem(ndarray::IxDyn(&[N]), 7.0f32));
    assert_eq!(made.dtype(), DType::F32);
    drop(made);
    assert!(buffer_pool::stats().pooled_bytes > after_foreign);
    assert!(buffer_pool::take::<f32>(N)[..N].iter().all(|&x| x == 7.0));
}
