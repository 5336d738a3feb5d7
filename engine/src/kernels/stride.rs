//! Strided gathers: every `step`-th element of a slice, as convolutions
//! with a stride read their input rows (im2col, the depthwise kernel's
//! phase buffers). An element loop with a run-time step stays scalar, one
//! bounds-checked load at a time; with the step a constant the compiler
//! turns it into vector loads and shuffles.

/// `dst[j] = src[j · step]` for every `j` of `dst`. Panics if `src` is
/// shorter than `(dst.len() - 1) · step + 1`.
#[inline(always)]
pub fn take_every<T: Copy>(src: &[T], step: usize, dst: &mut [T]) {
    match step {
        1 => dst.copy_from_slice(&src[..dst.len()]),
        2 => take_every_n::<T, 2>(src, dst),
        3 => take_every_n::<T, 3>(src, dst),
        4 => take_every_n::<T, 4>(src, dst),
        _ => {
            for (j, v) in dst.iter_mut().enumerate() {
                *v = src[j * step];
            }
        }
    }
}

/// [`take_every`] with the step `S` known when compiling: whole groups of
/// `S` first, then the last element, whose group `src` may cut short.
#[inline(always)]
fn take_every_n<T: Copy, const S: usize>(src: &[T], dst: &mut [T]) {
    let whole = dst.len().min(src.len() / S);
    let (head, tail) = dst.split_at_mut(whole);
    for (v, group) in head.iter_mut().zip(src.chunks_exact(S)) {
        *v = group[0];
    }
    for (j, v) in tail.iter_mut().enumerate() {
        *v = src[(whole + j) * S];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_step_takes_the_elements_the_definition_names() {
        let src: Vec<u32> = (0..61).collect();
        for step in 1..=6 {
            // Lengths whose last element ends a whole group and ones whose
            // group `src` cuts short.
            for n in 0..=(src.len() - 1) / step + 1 {
                let mut got = vec![u32::MAX; n];
                take_every(&src, step, &mut got);
                let want: Vec<u32> = (0..n).map(|j| (j * step) as u32).collect();
                assert_eq!(got, want, "step {step}, {n} elements");
            }
        }
    }
}
