//! A strided view copied into C order: what [`super::Tensor::deep_copy`]
//! and everything that makes a view contiguous run on.

/// A strided view of a flat buffer: element `i` at
/// `offset + Σ i[k] · strides[k]` of `data` (a strided layout that fits
/// the buffer, as [`super::Layout`] keeps).
#[derive(Clone, Copy, Debug)]
pub struct StridedView<'a, T> {
    pub data: &'a [T],
    pub offset: usize,
    pub shape: &'a [usize],
    pub strides: &'a [isize],
}

/// Side of the square tiles [`gather_c_order`] transposes by.
const TILE: usize = 32;

/// Copies `v` into `dst` (its size) in C order. A view whose last axis
/// is not its unit-stride one (a transposed or permuted buffer: NHWC
/// data seen as NCHW) is copied by square tiles of that axis and the last,
/// so a tile's reads and writes each stay within a few cache lines; an
/// element-by-element walk in C order would read one line per element.
pub fn gather_c_order<T: Copy>(v: StridedView<'_, T>, dst: &mut [T]) {
    let n = v.shape.len();
    if v.shape.contains(&0) {
        return;
    }
    if n == 0 {
        dst[0] = v.data[v.offset];
        return;
    }
    let last = n - 1;
    let mut cs = vec![1usize; n];
    for k in (0..last).rev() {
        cs[k] = cs[k + 1] * v.shape[k + 1];
    }
    let tile_axis = (0..last)
        .find(|&k| v.strides[k] == 1 && v.shape[k] > 1)
        .filter(|_| v.strides[last] != 1 && v.shape[last] > 1);
    let outer: Vec<usize> = (0..last).filter(|&k| Some(k) != tile_axis).collect();
    let at = |base: isize, k: usize, i: usize| (base + i as isize * v.strides[k]) as usize;
    let mut idx = vec![0usize; outer.len()];
    loop {
        let so = outer
            .iter()
            .zip(&idx)
            .fold(v.offset as isize, |o, (&k, &i)| o + i as isize * v.strides[k]);
        let d0: usize = outer.iter().zip(&idx).map(|(&k, &i)| i * cs[k]).sum();
        let nl = v.shape[last];
        match tile_axis {
            None if v.strides[last] == 1 => {
                let s = so as usize;
                dst[d0..d0 + nl].copy_from_slice(&v.data[s..s + nl]);
            }
            None => {
                for (j, x) in dst[d0..d0 + nl].iter_mut().enumerate() {
                    *x = v.data[at(so, last, j)];
                }
            }
            Some(a) => {
                for i0 in (0..v.shape[a]).step_by(TILE) {
                    for j0 in (0..nl).step_by(TILE) {
                        let j1 = (j0 + TILE).min(nl);
                        for i in i0..(i0 + TILE).min(v.shape[a]) {
                            let row = so + i as isize;
                            let d = d0 + i * cs[a];
                            for (j, x) in (j0..j1).zip(&mut dst[d + j0..d + j1]) {
                                *x = v.data[at(row, last, j)];
                            }
                        }
                    }
                }
            }
        }
        // The next index of the outer axes, last fastest.
        let mut k = outer.len();
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < v.shape[outer[k]] {
                break;
            }
            idx[k] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The element at `i` of a view, by the definition.
    fn element(v: &StridedView<'_, u32>, i: &[usize]) -> u32 {
        let off = i
            .iter()
            .zip(v.strides)
            .fold(v.offset as isize, |o, (&i, &s)| o + i as isize * s);
        v.data[off as usize]
    }

    #[test]
    fn strided_views_copy_in_c_order() {
        let data: Vec<u32> = (0..5000).collect();
        // (shape, strides, offset): permuted, sliced, reversed, broadcast,
        // tall and wide transposes across several tiles, 0-d.
        let cases: Vec<(Vec<usize>, Vec<isize>, usize)> = vec![
            (vec![2, 3, 4], vec![12, 4, 1], 0),
            (vec![2, 4, 3], vec![12, 1, 4], 0),
            (vec![70, 45], vec![1, 70], 0),
            (vec![3, 40, 33], vec![1, 99, 3], 5),
            (vec![4, 33, 35], vec![1155, 1, 33], 0),
            (vec![5, 6], vec![-6, 1], 30),
            (vec![5, 6], vec![6, -1], 5),
            (vec![3, 4], vec![0, 1], 7),
            (vec![3, 4], vec![1, 0], 7),
            (vec![6, 1, 5], vec![1, 9, 6], 0),
            (vec![], vec![], 42),
            (vec![3, 0, 2], vec![2, 1, 1], 0),
        ];
        for (shape, strides, offset) in cases {
            let v = StridedView {
                data: &data,
                offset,
                shape: &shape,
                strides: &strides,
            };
            let size: usize = shape.iter().product();
            let mut got = vec![u32::MAX; size];
            gather_c_order(v, &mut got);
            let mut want = Vec::with_capacity(size);
            let mut i = vec![0usize; shape.len()];
            for _ in 0..size {
                want.push(element(&v, &i));
                for k in (0..shape.len()).rev() {
                    i[k] += 1;
                    if i[k] < shape[k] {
                        break;
                    }
                    i[k] = 0;
                }
            }
            assert_eq!(got, want, "shape {shape:?} strides {strides:?}");
        }
    }
}
