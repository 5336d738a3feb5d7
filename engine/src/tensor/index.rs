//! Basic indexing in the CreateView encoding: each index is an i64 vector
//! `[type, n_offsets, stride_hint, ...]` with the type codes POINT=0,
//! INTERVAL=1, ALL=2, NEW_AXIS=3.
//!
//! | index    | vector                                 |
//! |----------|----------------------------------------|
//! | Point    | `[0, 1, 1, p, 1]`                       |
//! | Interval | `[1, 2, 1, start, end, stride, inclusive]` |
//! | All      | `[2, 0, 1, 1]`                          |
//! | NewAxis  | `[3, 1, 10, 1]` or `[3, 1, 1, 0, 1]`       |
//!
//! Negative values are resolved when the view is made, against the actual
//! shape (dynamic indexing), and the result equals numpy's basic indexing.

use crate::error::{index_encoding_err, index_err, layout_err, rank_err, Result};
use crate::tensor::layout::Layout;

pub const POINT: i64 = 0;
pub const INTERVAL: i64 = 1;
pub const ALL: i64 = 2;
pub const NEW_AXIS: i64 = 3;

/// One decoded index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexSpec {
    Point(i64),
    Interval {
        start: i64,
        end: i64,
        stride: i64,
        inclusive: bool,
    },
    All,
    NewAxis,
}

impl IndexSpec {
    /// An exclusive interval, like numpy's `start:end:stride`.
    pub fn range(start: i64, end: i64, stride: i64) -> IndexSpec {
        IndexSpec::Interval {
            start,
            end,
            stride,
            inclusive: false,
        }
    }

    /// Decodes one index vector. `position` is the index's place among the
    /// op's index inputs, for the error message. Every slot is checked
    /// against the encoding: a vector that only looks like an index (a
    /// wrong count, stride hint or flag) is more likely a bug in whatever
    /// produced it than a request we should guess at.
    pub fn decode(v: &[i64], position: usize) -> Result<IndexSpec> {
        let Some(&kind) = v.first() else {
            return index_encoding_err(format!("index {position}: empty index vector"));
        };
        let name = match kind {
            POINT => "point",
            INTERVAL => "interval",
            ALL => "all",
            NEW_AXIS => "new axis",
            t => {
                return index_encoding_err(format!(
                "index {position}: unknown index type {t} (expected 0 point, 1 interval, 2 all, 3 new axis)"
            ))
            }
        };
        let slots = Slots { v, position, name };
        match kind {
            POINT => {
                slots.len(&[5])?;
                slots.fixed(1, "offset count", 1)?;
                slots.fixed(2, "stride hint", 1)?;
                slots.flag(4)?;
                Ok(IndexSpec::Point(v[3]))
            }
            INTERVAL => {
                slots.len(&[7])?;
                slots.fixed(1, "offset count", 2)?;
                slots.fixed(2, "stride hint", 1)?;
                if v[5] == 0 {
                    return slots.err(5, "stride", "must not be 0");
                }
                Ok(IndexSpec::Interval {
                    start: v[3],
                    end: v[4],
                    stride: v[5],
                    inclusive: slots.flag(6)?,
                })
            }
            ALL => {
                slots.len(&[4])?;
                slots.fixed(1, "offset count", 0)?;
                slots.fixed(2, "stride hint", 1)?;
                slots.flag(3)?;
                Ok(IndexSpec::All)
            }
            _ => {
                slots.len(&[4, 5])?;
                slots.fixed(1, "offset count", 1)?;
                if v.len() == 4 {
                    slots.fixed(2, "stride hint", 10)?;
                    slots.flag(3)?;
                } else {
                    slots.fixed(2, "stride hint", 1)?;
                    slots.fixed(3, "offset", 0)?;
                    slots.flag(4)?;
                }
                Ok(IndexSpec::NewAxis)
            }
        }
    }

    /// The encoded vector of this index.
    pub fn encode(self) -> Vec<i64> {
        match self {
            IndexSpec::Point(p) => vec![POINT, 1, 1, p, 1],
            IndexSpec::Interval {
                start,
                end,
                stride,
                inclusive,
            } => vec![INTERVAL, 2, 1, start, end, stride, inclusive as i64],
            IndexSpec::All => vec![ALL, 0, 1, 1],
            IndexSpec::NewAxis => vec![NEW_AXIS, 1, 10, 1],
        }
    }
}

/// Checks the slots of one index vector; errors name the index, its kind,
/// the slot and the whole vector, on one line.
struct Slots<'a> {
    v: &'a [i64],
    position: usize,
    name: &'static str,
}

impl Slots<'_> {
    fn err<T>(&self, slot: usize, field: &str, why: &str) -> Result<T> {
        index_encoding_err(format!(
            "index {} ({}): {field} (slot {slot}) is {}, {why}, in {:?}",
            self.position, self.name, self.v[slot], self.v
        ))
    }

    fn len(&self, allowed: &[usize]) -> Result<()> {
        if allowed.contains(&self.v.len()) {
            return Ok(());
        }
        let want = match allowed {
            [n] => n.to_string(),
            _ => format!("{} or {}", allowed[0], allowed[1]),
        };
        index_encoding_err(format!(
            "index {} ({}): needs {want} values, got {} in {:?}",
            self.position,
            self.name,
            self.v.len(),
            self.v
        ))
    }

    fn fixed(&self, slot: usize, field: &str, want: i64) -> Result<()> {
        if self.v[slot] == want {
            Ok(())
        } else {
            self.err(slot, field, &format!("must be {want}"))
        }
    }

    /// The inclusive flag: 0 or 1, nothing else counts as true.
    fn flag(&self, slot: usize) -> Result<bool> {
        match self.v[slot] {
            0 => Ok(false),
            1 => Ok(true),
            _ => self.err(slot, "inclusive flag", "must be 0 or 1"),
        }
    }
}

/// Start and length of an interval on an axis of length `d`, as numpy's
/// `slice.indices` plus the inclusive flag. Computed in i128, so extreme
/// bounds and strides cannot overflow.
pub fn resolve_interval(d: i64, start: i64, end: i64, stride: i64, inclusive: bool) -> (i64, i64) {
    let (d, stride) = (d as i128, stride as i128);
    let (mut s, mut e) = (start as i128, end as i128);
    if s < 0 {
        s += d;
    }
    if e < 0 {
        e += d;
    }
    if inclusive {
        e += stride.signum();
    }
    if stride > 0 {
        s = s.clamp(0, d);
        e = e.clamp(0, d);
    } else {
        s = s.clamp(-1, d - 1);
        e = e.clamp(-1, d - 1);
    }
    let len = if stride > 0 && e > s {
        (e - s - 1) / stride + 1
    } else if stride < 0 && s > e {
        (s - e - 1) / -stride + 1
    } else {
        0
    };
    (s as i64, len as i64)
}

/// The layout that `indices` select from `l`. Missing trailing axes are All.
pub fn apply(l: &Layout, indices: &[IndexSpec]) -> Result<Layout> {
    let consumed = indices.iter().filter(|i| **i != IndexSpec::NewAxis).count();
    if consumed > l.ndim() {
        return rank_err(format!(
            "{consumed} indices for an array of {} dimensions",
            l.ndim()
        ));
    }
    let mut shape = Vec::with_capacity(l.ndim() + indices.len());
    let mut strides = Vec::with_capacity(l.ndim() + indices.len());
    let mut offset = l.offset() as i64;
    let mut axis = 0usize;
    for (pos, ix) in indices.iter().enumerate() {
        match *ix {
            IndexSpec::NewAxis => {
                shape.push(1);
                strides.push(0);
            }
            IndexSpec::All => {
                shape.push(l.shape()[axis]);
                strides.push(l.strides()[axis]);
                axis += 1;
            }
            IndexSpec::Point(p) => {
                let d = l.shape()[axis] as i64;
                let q = if p < 0 { p + d } else { p };
                if q < 0 || q >= d {
                    return index_err(format!(
                        "index {pos}: point {p} is out of range for axis {axis} of length {d}"
                    ));
                }
                offset += q * l.strides()[axis] as i64;
                axis += 1;
            }
            IndexSpec::Interval {
                start,
                end,
                stride,
                inclusive,
            } => {
                if stride == 0 {
                    return layout_err(format!("index {pos}: interval stride is 0"));
                }
                let d = l.shape()[axis] as i64;
                let st = l.strides()[axis] as i64;
                let (s, len) = resolve_interval(d, start, end, stride, inclusive);
                // numpy points an empty slice at the axis start with step 1.
                let (s, step) = if len > 0 { (s, stride) } else { (0, 1) };
                // numpy's stride is the axis stride times the step; on an
                // axis of one element it never matters, so an overflowing
                // product (a huge step) keeps the axis stride there.
                let new_stride = match st.checked_mul(step) {
                    Some(x) if isize::try_from(x).is_ok() => x,
                    _ if len <= 1 => st,
                    _ => return layout_err(format!("index {pos}: stride {stride} overflows the layout")),
                };
                offset += s * st;
                shape.push(len as usize);
                strides.push(new_stride as isize);
                axis += 1;
            }
        }
    }
    for ax in axis..l.ndim() {
        shape.push(l.shape()[ax]);
        strides.push(l.strides()[ax]);
    }
    if offset < 0 {
        return layout_err(format!("view starts at element {offset}, before its buffer"));
    }
    if shape.len() > crate::tensor::limit::MAX_RANK {
        return rank_err(format!(
            "a view of rank {} ({} new axes) is above the limit of {} dimensions",
            shape.len(),
            indices.len() - consumed,
            crate::tensor::limit::MAX_RANK
        ));
    }
    Ok(Layout::new(shape, strides, offset as usize))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_cause;

    fn view(shape: &[usize], idx: &[IndexSpec]) -> Layout {
        apply(&Layout::contiguous(shape), idx).unwrap()
    }

    /// Found by the create_view fuzz target: 68 new axes made a layout no
    /// tensor may have, which `apply` accepted and `with_layout` refused.
    #[test]
    fn too_many_new_axes_are_refused_by_apply() {
        let idx = vec![IndexSpec::NewAxis; 64];
        let e = apply(&Layout::contiguous(&[2]), &idx).unwrap_err();
        assert_cause!(e, Rank, "rank 65 (64 new axes)");
        let idx = vec![IndexSpec::NewAxis; 63];
        assert_eq!(apply(&Layout::contiguous(&[2]), &idx).unwrap().ndim(), 64);
    }

    #[test]
    fn decode_reads_point_from_slot_three() {
        assert_eq!(
            IndexSpec::decode(&[0, 1, 1, 7, 1], 0).unwrap(),
            IndexSpec::Point(7)
        );
        assert_eq!(
            IndexSpec::decode(&[3, 1, 1, 0, 1], 0).unwrap(),
            IndexSpec::NewAxis
        );
        assert_cause!(
            IndexSpec::decode(&[9, 0, 1, 1], 2).unwrap_err(),
            IndexEncoding,
            "index 2"
        );
        assert_cause!(IndexSpec::decode(&[0, 1, 1, 7], 0).unwrap_err(), IndexEncoding);
        assert_cause!(
            IndexSpec::decode(&[1, 2, 1, 0, 3, 0, 0], 0).unwrap_err(),
            IndexEncoding
        );
    }

    #[test]
    fn every_slot_is_checked_against_the_encoding() {
        // (vector, the field the error must name)
        let bad: [(&[i64], &str); 15] = [
            (&[0, 9, 9, 1, 9], "offset count (slot 1) is 9"),
            (&[0, 1, 9, 1, 1], "stride hint (slot 2) is 9"),
            (&[0, 1, 1, 1, 5], "inclusive flag (slot 4) is 5"),
            (&[0, 1, 1, 1, -1], "inclusive flag (slot 4) is -1"),
            (&[1, 3, 1, 0, 3, 1, 0], "offset count (slot 1) is 3"),
            (&[1, 2, 0, 0, 3, 1, 0], "stride hint (slot 2) is 0"),
            (&[1, 2, 1, 0, 3, 0, 0], "stride (slot 5) is 0"),
            (&[1, 2, 1, 0, 3, 1, 5], "inclusive flag (slot 6) is 5"),
            (&[2, 1, 1, 1], "offset count (slot 1) is 1"),
            (&[2, 0, 2, 1], "stride hint (slot 2) is 2"),
            (&[2, 0, 1, 7], "inclusive flag (slot 3) is 7"),
            (&[3, 1, 99, 1], "stride hint (slot 2) is 99"),
            (&[3, 0, 10, 1], "offset count (slot 1) is 0"),
            (&[3, 1, 10, 2], "inclusive flag (slot 3) is 2"),
            (&[3, 1, 1, 4, 1], "offset (slot 3) is 4"),
        ];
        for (v, field) in bad {
            let e = IndexSpec::decode(v, 1).unwrap_err();
            assert_cause!(e, IndexEncoding, field, "index 1 (");
            assert!(!e.to_string().contains('\n'), "{v:?}: {e}");
        }
        let e = IndexSpec::decode(&[3, 1, 1, 0, 1, 0], 0).unwrap_err();
        assert_cause!(e, IndexEncoding, "4 or 5", "6");
        // Both flag values and both new-axis forms are accepted.
        let good: [(&[i64], IndexSpec); 7] = [
            (&[0, 1, 1, 2, 0], IndexSpec::Point(2)),
            (&[0, 1, 1, -2, 1], IndexSpec::Point(-2)),
            (
                &[1, 2, 1, 0, 3, -1, 1],
                IndexSpec::Interval {
                    start: 0,
                    end: 3,
                    stride: -1,
                    inclusive: true,
                },
            ),
            (&[2, 0, 1, 0], IndexSpec::All),
            (&[3, 1, 10, 0], IndexSpec::NewAxis),
            (&[3, 1, 10, 1], IndexSpec::NewAxis),
            (&[3, 1, 1, 0, 1], IndexSpec::NewAxis),
        ];
        for (v, want) in good {
            assert_eq!(IndexSpec::decode(v, 0).unwrap(), want, "{v:?}");
            assert_eq!(IndexSpec::decode(&want.encode(), 0).unwrap(), want);
        }
    }

    #[test]
    fn inclusive_minus_one_means_to_the_end() {
        let l = view(&[5], &[IndexSpec::decode(&[1, 2, 1, 0, -1, 1, 1], 0).unwrap()]);
        assert_eq!(l.shape(), &[5]);
    }

    #[test]
    fn reversed_interval_matches_numpy() {
        // numpy: np.arange(5)[::-1] -> shape (5,), strides (-1,), offset 4
        let l = view(&[5], &[IndexSpec::range(-1, i64::MIN / 2, -1)]);
        assert_eq!(
            (l.shape(), l.strides(), l.offset()),
            (&[5usize][..], &[-1isize][..], 4)
        );
        // np.arange(10)[7:2:-2] -> [7, 5, 3]
        let l = view(&[10], &[IndexSpec::range(7, 2, -2)]);
        assert_eq!(l.offsets().collect::<Vec<_>>(), vec![7, 5, 3]);
    }

    #[test]
    fn point_and_new_axis_change_rank() {
        // x[1, None, :, ::2] on shape (3, 4, 6)
        let l = view(
            &[3, 4, 6],
            &[
                IndexSpec::Point(-2),
                IndexSpec::NewAxis,
                IndexSpec::All,
                IndexSpec::range(0, 6, 2),
            ],
        );
        assert_eq!(l.shape(), &[1, 4, 3]);
        assert_eq!(l.strides(), &[0, 6, 2]);
        assert_eq!(l.offset(), 24);
    }

    #[test]
    fn errors_name_axis_value_and_dim() {
        let e = apply(
            &Layout::contiguous(&[2, 3]),
            &[IndexSpec::All, IndexSpec::Point(3)],
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "index 1: point 3 is out of range for axis 1 of length 3"
        );
        assert!(apply(&Layout::contiguous(&[2]), &[IndexSpec::All, IndexSpec::All]).is_err());
    }

    #[test]
    fn negative_stride_lengths_match_numpy() {
        // np.arange(10)[5:1:-2] -> [5, 3]; np.arange(4)[::-2] -> [3, 1]
        assert_eq!(
            view(&[10], &[IndexSpec::range(5, 1, -2)])
                .offsets()
                .collect::<Vec<_>>(),
            vec![5, 3]
        );
        assert_eq!(
            view(&[4], &[IndexSpec::range(-1, i64::MIN, -2)])
                .offsets()
                .collect::<Vec<_>>(),
            vec![3, 1]
        );
        assert_eq!(resolve_interval(5, 0, i64::MAX, 1, true), (0, 5));
        assert_eq!(resolve_interval(5, 0, 5, i64::MAX, false), (0, 1));
        assert_eq!(resolve_interval(5, 4, i64::MIN, i64::MIN, false), (4, 1));
    }

    #[test]
    fn empty_interval_has_zero_length() {
        let l = view(&[4], &[IndexSpec::range(3, 1, 1)]);
        assert_eq!(l.shape(), &[0]);
    }
}
