//! `einsum(x₀, x₁, …)`: numpy's `einsum` for the attr `equation` (ONNX
//! Einsum), such as `"bij,bjk->bik"`, `"ii->i"` or `"...ij->...ji"`.
//!
//! - Spaces are ignored; labels are ASCII letters; `...` stands for the
//!   operand's leading unnamed axes, broadcast across operands as numpy
//!   broadcasts (right-aligned, length 1 stretches).
//! - Without `->` the output is numpy's implicit one: the `...` axes, then
//!   the labels used exactly once, in alphabetical order.
//! - A label repeated within one operand takes its diagonal; a label absent
//!   from the output is summed over (an empty sum is 0). Every axis a label
//!   names has one length.
//!
//! Numeric dtypes, one for every operand; integers wrap. The kernel walks
//! every combination of label values once, so its cost is the product of
//! all the label lengths: exact and simple, not a contraction planner.

use std::sync::Arc;

use crate::dtype::{DType, Num};
use crate::error::{attr_err, op_err, refuse_dtype, Result};
use crate::ops::widen;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// A parsed equation. Labels are numbered: letters first (by first use),
/// then one per broadcast `...` axis.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Plan {
    /// Per operand, the label of each axis.
    operands: Vec<Vec<usize>>,
    /// The label of each output axis.
    output: Vec<usize>,
    /// The length of every label.
    sizes: Vec<usize>,
}

/// One side of a term: its letters, and where `...` stands among them.
struct Term {
    letters: Vec<u8>,
    ellipsis: Option<usize>,
}

fn err<T>(eq: &str, msg: impl std::fmt::Display) -> Result<T> {
    op_err(format!("op 'einsum': equation '{eq}': {msg}"))
}

fn parse_term(eq: &str, s: &str) -> Result<Term> {
    let mut letters = Vec::new();
    let mut ellipsis = None;
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            c if c.is_ascii_alphabetic() => letters.push(c),
            b'.' if b[i..].starts_with(b"...") && ellipsis.is_none() => {
                ellipsis = Some(letters.len());
                i += 2;
            }
            c => return err(eq, format_args!("unexpected '{}' in term '{s}'", c as char)),
        }
        i += 1;
    }
    Ok(Term { letters, ellipsis })
}

impl Plan {
    fn new(eq: &str, shapes: &[&[usize]]) -> Result<Plan> {
        let clean: String = eq.chars().filter(|c| !c.is_whitespace()).collect();
        let (lhs, rhs) = match clean.split_once("->") {
            Some((l, r)) => (l, Some(r)),
            None => (clean.as_str(), None),
        };
        let terms = lhs
            .split(',')
            .map(|t| parse_term(eq, t))
            .collect::<Result<Vec<_>>>()?;
        if terms.len() != shapes.len() {
            return err(
                eq,
                format_args!(
                    "{} operands in the equation, {} inputs",
                    terms.len(),
                    shapes.len()
                ),
            );
        }
        // Broadcast `...` axes: how many each operand has, and the most.
        let mut ell = Vec::with_capacity(terms.len());
        for (k, (t, s)) in terms.iter().zip(shapes).enumerate() {
            let n = s.len() as i64 - t.letters.len() as i64;
            if n < 0 || (n > 0 && t.ellipsis.is_none()) {
                return err(
                    eq,
                    format_args!(
                        "operand {k} has {} axes, its term names {}",
                        s.len(),
                        t.letters.len()
                    ),
                );
            }
            ell.push(n as usize);
        }
        let ell_rank = ell.iter().copied().max().unwrap_or(0);
        // Letters are numbered by first use, then the `...` axes follow.
        let mut letters: Vec<u8> = Vec::new();
        for &c in terms.iter().flat_map(|t| &t.letters) {
            if !letters.contains(&c) {
                letters.push(c);
            }
        }
        let base = letters.len();
        let mut sizes: Vec<Option<usize>> = vec![None; base];
        sizes.extend(std::iter::repeat_n(Some(1), ell_rank));
        let mut operands = Vec::with_capacity(terms.len());
        for (k, (t, s)) in terms.iter().zip(shapes).enumerate() {
            // The labels of operand k's axes, in order.
            let id = |c: u8| letters.iter().position(|&l| l == c).unwrap_or_default();
            let ell_ids = (ell_rank - ell[k]..ell_rank).map(|e| base + e);
            let at = t.ellipsis.unwrap_or(t.letters.len());
            let labels: Vec<usize> = t.letters[..at]
                .iter()
                .map(|&c| id(c))
                .chain(ell_ids)
                .chain(t.letters[at..].iter().map(|&c| id(c)))
                .collect();
            for (&l, &d) in labels.iter().zip(s.iter()) {
                sizes[l] = match sizes[l] {
                    None => Some(d),
                    Some(n) if n == d => Some(n),
                    // `...` axes broadcast; letters must agree.
                    Some(1) if l >= base => Some(d),
                    Some(n) if l >= base && d == 1 => Some(n),
                    Some(n) if l >= base => {
                        return err(
                            eq,
                            format_args!("'...' axes of lengths {n} and {d} do not broadcast"),
                        )
                    }
                    Some(n) => {
                        return err(
                            eq,
                            format_args!(
                                "label '{}' has length {n} and {d} (operand {k})",
                                letters[l] as char
                            ),
                        )
                    }
                };
            }
            operands.push(labels);
        }
        let sizes: Vec<usize> = sizes.into_iter().map(Option::unwrap_or_default).collect();
        let ell_labels: Vec<usize> = (base..base + ell_rank).collect();
        let output = match rhs {
            Some(r) => {
                let t = parse_term(eq, r)?;
                let mut out = Vec::new();
                for (j, c) in t.letters.iter().enumerate() {
                    if t.ellipsis == Some(j) {
                        out.extend_from_slice(&ell_labels);
                    }
                    let Some(id) = letters.iter().position(|l| l == c) else {
                        return err(eq, format_args!("output label '{}' is in no operand", *c as char));
                    };
                    if out.contains(&id) {
                        return err(eq, format_args!("output label '{}' is repeated", *c as char));
                    }
                    out.push(id);
                }
                if t.ellipsis == Some(t.letters.len()) {
                    out.extend_from_slice(&ell_labels);
                } else if t.ellipsis.is_none() && ell_rank > 0 {
                    return err(eq, "the operands have '...' axes, the output does not");
                }
                out
            }
            None => {
                let mut once: Vec<(u8, usize)> = letters
                    .iter()
                    .enumerate()
                    .filter(|&(id, _)| operands.iter().flatten().filter(|&&l| l == id).count() == 1)
                    .map(|(id, &c)| (c, id))
                    .collect();
                once.sort_unstable();
                ell_labels
                    .iter()
                    .copied()
                    .chain(once.into_iter().map(|(_, id)| id))
                    .collect()
            }
        };
        Ok(Plan {
            operands,
            output,
            sizes,
        })
    }

    fn out_shape(&self) -> Vec<usize> {
        self.output.iter().map(|&l| self.sizes[l]).collect()
    }
}

fn einsum_kernel<T: Num>(plan: &Plan, inputs: &[Tensor], out: &Tensor) -> Result<()> {
    let arrays = inputs
        .iter()
        .map(|t| t.to_array::<T>())
        .collect::<Result<Vec<_>>>()?;
    // Per operand and label, the stride it advances by (0 for a broadcast
    // axis of length 1; repeated labels add up, walking the diagonal).
    let n_labels = plan.sizes.len();
    let strides: Vec<Vec<usize>> = plan
        .operands
        .iter()
        .zip(inputs)
        .map(|(labels, t)| {
            let c = crate::tensor::layout::c_strides(t.shape());
            let mut s = vec![0usize; n_labels];
            for (ax, &l) in labels.iter().enumerate() {
                if t.shape()[ax] == plan.sizes[l] {
                    s[l] += c[ax] as usize;
                }
            }
            s
        })
        .collect();
    let summed: Vec<usize> = (0..n_labels).filter(|l| !plan.output.contains(l)).collect();
    let out_len: usize = plan.out_shape().iter().product();
    let sum_len: usize = summed.iter().map(|&l| plan.sizes[l]).product();
    let mut res = vec![T::zero(); out_len];
    let mut idx = vec![0usize; n_labels];
    let slices: Vec<&[T]> = arrays.iter().map(|a| a.as_slice().unwrap_or_default()).collect();
    for r in res.iter_mut() {
        let mut acc = T::zero();
        for _ in 0..sum_len {
            let mut p = T::one();
            for (k, s) in slices.iter().enumerate() {
                let off: usize = idx.iter().zip(&strides[k]).map(|(i, st)| i * st).sum();
                p = T::mul_w(p, s[off]);
            }
            acc = T::add_w(acc, p);
            // The next summed combination (the last label fastest).
            for &l in summed.iter().rev() {
                idx[l] += 1;
                if idx[l] < plan.sizes[l] {
                    break;
                }
                idx[l] = 0;
            }
        }
        *r = acc;
        for &l in plan.output.iter().rev() {
            idx[l] += 1;
            if idx[l] < plan.sizes[l] {
                break;
            }
            idx[l] = 0;
        }
    }
    out.write(|mut o: ndarray::ArrayViewMutD<'_, T>| o.iter_mut().zip(res).for_each(|(o, v)| *o = v))
}

/// The `einsum` op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Einsum {
    pub equation: String,
}

impl Op for Einsum {
    fn name(&self) -> &str {
        "einsum"
    }
    fn arity(&self) -> Arity {
        Arity::at_least(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let d = TypeInfo::common_dtype("einsum", inputs, "numeric", DType::is_numeric)?;
        let shapes: Option<Vec<Vec<usize>>> = inputs.iter().map(TypeInfo::static_shape).collect();
        let shape = match shapes {
            Some(s) => {
                let refs: Vec<&[usize]> = s.iter().map(Vec::as_slice).collect();
                let p = Plan::new(&self.equation, &refs)?;
                Some(p.out_shape().iter().map(|&d| d as i64).collect())
            }
            None => None,
        };
        Ok(vec![TypeInfo::new(d, shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if widen::wants_f32(inputs) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.infer(&tys)?;
        let refs: Vec<&[usize]> = inputs.iter().map(Tensor::shape).collect();
        let plan = Plan::new(&self.equation, &refs)?;
        let out = ctx.output(0, inputs[0].dtype(), &plan.out_shape())?;
        crate::dispatch_num!(inputs[0].dtype(), T => einsum_kernel::<T>(&plan, inputs, &out)?,
            return refuse_dtype("einsum", inputs[0].dtype()));
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("equation", self.equation.clone())
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("einsum", |a: &Attrs| {
        a.only("einsum", &["equation"])?;
        match a.0.get("equation").and_then(|v| v.as_str()) {
            Some(eq) => Ok(Arc::new(Einsum {
                equation: eq.to_string(),
            }) as Arc<dyn Op>),
            None => attr_err("op 'einsum' needs attr 'equation' (a string)"),
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};

    fn einsum(eq: &str, inputs: &[Tensor]) -> Result<(Vec<usize>, Vec<f64>)> {
        run_vec::<f64>(&*op("einsum", Attrs::new().with("equation", eq)), inputs)
    }

    /// [[1, 2, 3], [4, 5, 6]]
    fn a() -> Tensor {
        t(&[2, 3], vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0])
    }

    #[test]
    fn matmul_transpose_sums_and_outer_products() {
        let b = t(&[3, 2], vec![1.0f64, 0.0, 0.0, 1.0, 1.0, 1.0]);
        assert_eq!(
            einsum("ij,jk->ik", &[a(), b.clone()]).unwrap(),
            (vec![2, 2], vec![4.0, 5.0, 10.0, 11.0])
        );
        // Implicit output: the labels used once, alphabetically.
        assert_eq!(einsum("ij,jk", &[a(), b]).unwrap().1, [4.0, 5.0, 10.0, 11.0]);
        assert_eq!(
            einsum("ij->ji", &[a()]).unwrap(),
            (vec![3, 2], vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0])
        );
        assert_eq!(einsum("ba", &[a()]).unwrap().1, [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        assert_eq!(einsum("ij -> i", &[a()]).unwrap(), (vec![2], vec![6.0, 15.0]));
        assert_eq!(einsum("ij->", &[a()]).unwrap(), (vec![], vec![21.0]));
        let v = t(&[2], vec![1.0f64, 2.0]);
        assert_eq!(
            einsum("i,i", &[v.clone(), v.clone()]).unwrap(),
            (vec![], vec![5.0])
        );
        assert_eq!(
            einsum("i,j->ij", &[v.clone(), v]).unwrap().1,
            [1.0, 2.0, 2.0, 4.0]
        );
        assert_eq!(
            einsum("->", &[t(&[], vec![7.0f64])]).unwrap(),
            (vec![], vec![7.0])
        );
    }

    #[test]
    fn diagonals_traces_ellipsis_and_views() {
        let m = t(&[2, 2], vec![1.0f64, 2.0, 3.0, 4.0]);
        assert_eq!(einsum("ii->i", std::slice::from_ref(&m)).unwrap().1, [1.0, 4.0]);
        assert_eq!(
            einsum("ii", std::slice::from_ref(&m)).unwrap(),
            (vec![], vec![5.0])
        );
        // A batch of two 2x2 matrices times one broadcast 2x1.
        let x = t(&[2, 2, 2], vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
        let y = t(&[1, 2, 1], vec![1.0f64, 1.0]);
        assert_eq!(
            einsum("...ij,...jk->...ik", &[x.clone(), y]).unwrap(),
            (vec![2, 2, 1], vec![3.0, 7.0, 11.0, 15.0])
        );
        assert_eq!(
            einsum("...ii->...i", std::slice::from_ref(&x)).unwrap().1,
            [1.0, 4.0, 5.0, 8.0]
        );
        assert_eq!(einsum("i...->...", &[x]).unwrap().1, [6.0, 8.0, 10.0, 12.0]);
        // A transposed view reads like its copy.
        let mt = m.transpose(None).unwrap();
        assert_eq!(einsum("ij->ij", &[mt]).unwrap().1, [1.0, 3.0, 2.0, 4.0]);
    }

    #[test]
    fn integers_wrap_empty_sums_are_zero_and_nan_propagates() {
        let big = t(&[2], vec![i64::MAX, 1]);
        let ones = t(&[2], vec![1i64, 1]);
        let (_, v) =
            run_vec::<i64>(&*op("einsum", Attrs::new().with("equation", "i,i")), &[big, ones]).unwrap();
        assert_eq!(v, [i64::MIN]);
        let e0 = t::<f64>(&[2, 0], vec![]);
        let e1 = t::<f64>(&[0, 3], vec![]);
        assert_eq!(
            einsum("ij,jk->ik", &[e0, e1]).unwrap(),
            (vec![2, 3], vec![0.0; 6])
        );
        let n = t(&[2], vec![f64::NAN, 1.0]);
        assert!(einsum("i->", &[n]).unwrap().1[0].is_nan());
    }

    #[test]
    fn bad_equations_are_errors_naming_the_problem() {
        let m = t(&[2, 3], vec![0.0f64; 6]);
        let cases = [
            (
                "ij,jk->ik",
                vec![m.clone(), m.clone()],
                "label 'j' has length 3 and 2",
            ),
            (
                "ij,jk->ik",
                vec![m.clone()],
                "2 operands in the equation, 1 inputs",
            ),
            (
                "ijk->i",
                vec![m.clone()],
                "operand 0 has 2 axes, its term names 3",
            ),
            ("i->i", vec![m.clone()], "operand 0 has 2 axes, its term names 1"),
            ("ij->k", vec![m.clone()], "output label 'k' is in no operand"),
            ("ij->ii", vec![m.clone()], "output label 'i' is repeated"),
            ("i1->i", vec![m.clone()], "unexpected '1'"),
            (
                "...->",
                vec![m.clone()],
                "the operands have '...' axes, the output does not",
            ),
        ];
        for (eq, inputs, want) in cases {
            let e = einsum(eq, &inputs).unwrap_err().to_string();
            assert!(e.contains(want), "{eq}: {e}");
        }
        let x = t(&[2, 3], vec![0.0f64; 6]);
        let y = t(&[3, 3], vec![0.0f64; 9]);
        let e = einsum("...j,...j->...", &[x, y]).unwrap_err().to_string();
        assert!(e.contains("do not broadcast"), "{e}");
        assert!(einsum("i", &[t(&[1], vec![true])]).is_err());
    }
}
