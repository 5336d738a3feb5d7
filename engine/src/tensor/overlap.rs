//! Do two views of one buffer share an element? numpy's `shares_memory`
//! question, answered exactly by a bounded search.
//!
//! Views `A` and `B` share an element when
//! `offA + Σ a_i·sA_i = offB + Σ b_j·sB_j` has a solution with
//! `0 ≤ a_i < dA_i`, `0 ≤ b_j < dB_j`. Flipping negative strides and the `B`
//! terms turns it into a bounded knapsack with positive coefficients,
//! `Σ c_k·z_k = hiB − loA`, `0 ≤ z_k ≤ u_k`, which a depth-first search
//! solves: largest coefficient first, pruned by the reachable maximum and by
//! divisibility (each `z_k` only takes the values that keep the rest
//! solvable modulo the gcd of the remaining coefficients).
//!
//! The problem is NP-hard in general, so the search counts its steps; past
//! the bound the answer is [`Sharing::Unknown`], which callers treat as
//! overlapping and report as inexact.

use crate::tensor::{Layout, Tensor};

/// Search steps allowed before giving up.
pub const DEFAULT_MAX_WORK: u64 = 100_000;

/// The answer for one pair of views.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    /// No common element (proved).
    Disjoint,
    /// Both views reach buffer element `offset` (a witness).
    Overlap { offset: usize },
    /// The search exceeded its work bound.
    Unknown,
}

impl Sharing {
    /// True unless proved disjoint: an unknown answer counts as sharing.
    pub fn shares(self) -> bool {
        self != Sharing::Disjoint
    }

    /// False when the answer came from giving up.
    pub fn exact(self) -> bool {
        self != Sharing::Unknown
    }

    /// The shared element, when one was found.
    pub fn witness(self) -> Option<usize> {
        match self {
            Sharing::Overlap { offset } => Some(offset),
            _ => None,
        }
    }
}

/// Whether two tensors share an element: different buffers never do.
pub fn tensors_share_memory(a: &Tensor, b: &Tensor) -> Sharing {
    tensors_share_memory_bounded(a, b, DEFAULT_MAX_WORK)
}

/// [`tensors_share_memory`] with a chosen work bound.
pub fn tensors_share_memory_bounded(a: &Tensor, b: &Tensor, max_work: u64) -> Sharing {
    if !a.same_buffer(b) {
        return Sharing::Disjoint;
    }
    layouts_share_memory(a.layout(), b.layout(), max_work)
}

/// Whether two layouts on one buffer reach a common element.
pub fn layouts_share_memory(a: &Layout, b: &Layout, max_work: u64) -> Sharing {
    let (Some((alo, ahi)), Some((blo, bhi))) = (a.span(), b.span()) else {
        return Sharing::Disjoint;
    };
    if ahi < blo || bhi < alo {
        return Sharing::Disjoint;
    }
    // Terms (coefficient, bound, bound contributed by A).
    let mut terms: Vec<Term> = Vec::new();
    for (l, from_a) in [(a, true), (b, false)] {
        for (&d, &s) in l.shape().iter().zip(l.strides()) {
            if d > 1 && s != 0 {
                let c = s.unsigned_abs() as i128;
                let u = d as i128 - 1;
                match terms.iter_mut().find(|t| t.c == c) {
                    Some(t) => {
                        t.u += u;
                        if from_a {
                            t.ua += u;
                        }
                    }
                    None => terms.push(Term {
                        c,
                        u,
                        ua: if from_a { u } else { 0 },
                    }),
                }
            }
        }
    }
    terms.sort_by_key(|t| std::cmp::Reverse(t.c));
    let n = terms.len();
    let mut gcds = vec![0i128; n + 1];
    let mut reach = vec![0i128; n + 1];
    for k in (0..n).rev() {
        gcds[k] = gcd(terms[k].c, gcds[k + 1]);
        reach[k] = reach[k + 1] + terms[k].c * terms[k].u;
    }
    let mut search = Search {
        terms: &terms,
        gcds: &gcds,
        reach: &reach,
        z: vec![0; n],
        work: 0,
        max_work,
    };
    match search.solve(0, bhi as i128 - alo as i128) {
        Found::Yes => {
            // z splits into A's part (up to ua) and B's part; A's part
            // locates the element from A's lowest offset.
            let from_a: i128 = terms.iter().zip(&search.z).map(|(t, &z)| t.c * z.min(t.ua)).sum();
            Sharing::Overlap {
                offset: (alo as i128 + from_a) as usize,
            }
        }
        Found::No => Sharing::Disjoint,
        Found::GaveUp => Sharing::Unknown,
    }
}

struct Term {
    c: i128,
    u: i128,
    ua: i128,
}

enum Found {
    Yes,
    No,
    GaveUp,
}

struct Search<'a> {
    terms: &'a [Term],
    /// gcd of the coefficients from `k` on (0 past the end).
    gcds: &'a [i128],
    /// Largest sum reachable with the terms from `k` on.
    reach: &'a [i128],
    z: Vec<i128>,
    work: u64,
    max_work: u64,
}

impl Search<'_> {
    fn solve(&mut self, k: usize, rem: i128) -> Found {
        if rem == 0 {
            self.z[k..].iter_mut().for_each(|z| *z = 0);
            return Found::Yes;
        }
        if k == self.terms.len() || rem < 0 || rem > self.reach[k] || rem % self.gcds[k] != 0 {
            return Found::No;
        }
        self.work += 1;
        if self.work > self.max_work {
            return Found::GaveUp;
        }
        let Term { c, u, .. } = self.terms[k];
        // z must keep `rem - c·z` divisible by the gcd of the rest:
        // z ≡ (rem/g)·(c/g)⁻¹ (mod g_rest/g).
        let g = self.gcds[k];
        let rest = self.gcds[k + 1];
        let (first, step) = if rest == 0 {
            (rem / c, 1)
        } else {
            let m = rest / g;
            ((rem / g).rem_euclid(m) * inverse(c / g, m) % m, m)
        };
        let lo = ((rem - self.reach[k + 1]).max(0) + c - 1) / c;
        let hi = u.min(rem / c);
        if hi < lo || first > hi {
            return Found::No;
        }
        // Largest z ≤ hi with z ≡ first (mod step), then down.
        let mut z = hi - (hi - first).rem_euclid(step);
        while z >= lo {
            self.z[k] = z;
            match self.solve(k + 1, rem - c * z) {
                Found::No => {}
                other => return other,
            }
            z -= step;
        }
        Found::No
    }
}

fn gcd(a: i128, b: i128) -> i128 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

/// `a⁻¹ mod m` for coprime `a`, `m` (0 when `m == 1`).
fn inverse(a: i128, m: i128) -> i128 {
    let (mut r0, mut r1) = (a.rem_euclid(m), m);
    let (mut s0, mut s1) = (1i128, 0i128);
    while r1 != 0 {
        let q = r0 / r1;
        (r0, r1) = (r1, r0 - q * r1);
        (s0, s1) = (s1, s0 - q * s1);
    }
    s0.rem_euclid(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    fn brute(a: &Layout, b: &Layout) -> bool {
        let sa: HashSet<usize> = a.offsets().collect();
        b.offsets().any(|o| sa.contains(&o))
    }

    fn l(shape: &[usize], strides: &[isize], offset: usize) -> Layout {
        Layout::new(shape.to_vec(), strides.to_vec(), offset)
    }

    #[test]
    fn interleaved_columns_do_not_overlap() {
        // x of shape (4, 6): x[:, ::2] and x[:, 1::2].
        let even = l(&[4, 3], &[6, 2], 0);
        let odd = l(&[4, 3], &[6, 2], 1);
        assert_eq!(
            layouts_share_memory(&even, &odd, DEFAULT_MAX_WORK),
            Sharing::Disjoint
        );
        // x[:, ::2] and x[:, ::3] share x[i, 0].
        let third = l(&[4, 2], &[6, 3], 0);
        let s = layouts_share_memory(&even, &third, DEFAULT_MAX_WORK);
        assert!(s.shares() && s.exact());
        assert_eq!(s.witness().map(|o| o % 6 == 0), Some(true));
    }

    #[test]
    fn a_view_and_its_transpose_overlap_and_rows_do_not() {
        let x = Layout::contiguous(&[3, 3]);
        assert!(layouts_share_memory(&x, &x.reversed(), DEFAULT_MAX_WORK).shares());
        let r0 = l(&[3], &[1], 0);
        let r1 = l(&[3], &[1], 3);
        assert_eq!(
            layouts_share_memory(&r0, &r1, DEFAULT_MAX_WORK),
            Sharing::Disjoint
        );
        let col = l(&[3], &[3], 1);
        assert_eq!(
            layouts_share_memory(&r1, &col, DEFAULT_MAX_WORK).witness(),
            Some(4)
        );
    }

    #[test]
    fn exhausted_work_bound_answers_unknown() {
        // Coprime strides and overlapping spans: no quick answer.
        let a = l(&[50, 50], &[97, 89], 0);
        let b = l(&[50, 50], &[83, 79], 1);
        let s = layouts_share_memory(&a, &b, 1);
        assert_eq!(s, Sharing::Unknown);
        assert!(s.shares() && !s.exact());
        assert_eq!(layouts_share_memory(&a, &b, u64::MAX).shares(), brute(&a, &b));
    }

    #[test]
    fn empty_views_share_nothing() {
        let a = l(&[0, 3], &[3, 1], 0);
        assert_eq!(
            layouts_share_memory(&a, &Layout::contiguous(&[9]), 10),
            Sharing::Disjoint
        );
    }

    #[test]
    fn matches_brute_force_on_every_small_vector_pair() {
        let n = 12;
        let mut all = Vec::new();
        for d in 0..=4usize {
            for s in -3isize..=3 {
                for pick in 0..n {
                    all.extend(fit(vec![d], vec![s], pick, n));
                }
            }
        }
        let (mut shared, mut disjoint) = (0, 0);
        for a in &all {
            for b in &all {
                let s = layouts_share_memory(a, b, u64::MAX);
                assert_eq!(s.shares(), brute(a, b), "{a:?} {b:?}");
                if s.shares() {
                    shared += 1;
                } else {
                    disjoint += 1;
                }
            }
        }
        assert!(shared > 1000 && disjoint > 1000);
    }

    /// A layout on a buffer of `n` elements, or `None` if it cannot fit.
    fn fit(shape: Vec<usize>, strides: Vec<isize>, pick: usize, n: usize) -> Option<Layout> {
        let mut neg = 0isize;
        let mut pos = 0isize;
        for (&d, &s) in shape.iter().zip(&strides) {
            let r = (d.max(1) as isize - 1) * s;
            if r < 0 {
                neg -= r;
            } else {
                pos += r;
            }
        }
        let room = n as isize - neg - pos;
        if room <= 0 {
            return None;
        }
        Some(Layout::new(shape, strides, (neg + pick as isize % room) as usize))
    }

    fn layout() -> impl Strategy<Value = (Vec<usize>, Vec<isize>, usize)> {
        (0usize..=3).prop_flat_map(|rank| {
            (
                proptest::collection::vec(0usize..=4, rank),
                proptest::collection::vec(-7isize..=7, rank),
                0usize..1000,
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn matches_brute_force_on_small_layouts(a in layout(), b in layout()) {
            let n = 64;
            let (Some(la), Some(lb)) = (fit(a.0, a.1, a.2, n), fit(b.0, b.1, b.2, n)) else {
                return Ok(());
            };
            let s = layouts_share_memory(&la, &lb, u64::MAX);
            prop_assert!(s.exact());
            prop_assert_eq!(s.shares(), brute(&la, &lb), "{:?} {:?}", la, lb);
            if let Some(w) = s.witness() {
                prop_assert!(la.offsets().any(|o| o == w), "witness {} not in {:?}", w, la);
                prop_assert!(lb.offsets().any(|o| o == w), "witness {} not in {:?}", w, lb);
            }
        }
    }
}
