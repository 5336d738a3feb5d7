//! `tfidf_vectorizer(x)` (ONNX TfIdfVectorizer over integer pools): counts,
//! in each row of an i32/i64 `x` (`[C]`, or `[B, C]` a row per batch
//! entry; a 0-d x is one row of one item), how often each n-gram of the
//! pool occurs, and writes f32 `[out]` or `[B, out]`, `out` being
//! `max(ngram_indexes) + 1`.
//!
//! The pool (`pool_int64s`) holds the n-grams of each size one after the
//! other: size `k + 1` starts at `ngram_counts[k]` and ends where the next
//! size starts (the last at the pool's end). Numbered in pool order, n-gram
//! `g` counts into output column `ngram_indexes[g]` (of two equal n-grams
//! the later one's). Only sizes `min_gram_length..=max_gram_length` count.
//! An n-gram of size `n ≥ 2` at position `i` with skip `s` (1 to
//! `max_skip_count + 1`) is `(x[i], x[i + s], …, x[i + (n − 1)·s])`;
//! unigrams are counted once, not once per skip.
//!
//! `mode`: `TF` the counts, `IDF` `weights[col]` (1 without weights) where
//! the count is positive and 0 elsewhere, `TFIDF` `weights[col]·count`
//! (the count without weights). As ONNX's reference and onnxruntime do,
//! weights are read by output column.

use std::collections::HashMap;
use std::sync::Arc;

use crate::dtype::DType;
use crate::error::{attr_err, dtype_err, rank_err, Result};
use crate::ops::{check_arity, float_list, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

const NAME: &str = "tfidf_vectorizer";

/// What a row's counts become.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weighting {
    Tf,
    Idf,
    TfIdf,
}

impl Weighting {
    fn name(self) -> &'static str {
        match self {
            Weighting::Tf => "TF",
            Weighting::Idf => "IDF",
            Weighting::TfIdf => "TFIDF",
        }
    }
}

/// The `tfidf_vectorizer` op.
#[derive(Clone, Debug)]
pub struct TfIdfVectorizer {
    pub mode: Weighting,
    pub min_gram: usize,
    pub max_gram: usize,
    pub max_skip: usize,
    pub ngram_counts: Vec<i64>,
    pub ngram_indexes: Vec<i64>,
    pub pool: Vec<i64>,
    pub weights: Option<Vec<f64>>,
    /// Each counted n-gram of the pool, with its output column.
    grams: HashMap<Vec<i64>, usize>,
    out_size: usize,
}

impl TfIdfVectorizer {
    /// Checks the attrs and indexes the pool.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        mode: Weighting,
        min_gram: usize,
        max_gram: usize,
        max_skip: usize,
        ngram_counts: Vec<i64>,
        ngram_indexes: Vec<i64>,
        pool: Vec<i64>,
        weights: Option<Vec<f64>>,
    ) -> Result<TfIdfVectorizer> {
        if min_gram == 0 || max_gram < min_gram {
            return attr_err(format!(
                "op '{NAME}': need 1 ≤ min_gram_length ≤ max_gram_length, got {min_gram} and {max_gram}"
            ));
        }
        let ordered = ngram_counts.windows(2).all(|w| w[0] <= w[1]);
        let inside = ngram_counts
            .iter()
            .all(|&c| c >= 0 && c as u64 <= pool.len() as u64);
        if !ordered || !inside {
            return attr_err(format!(
                "op '{NAME}': attr 'ngram_counts' {ngram_counts:?} must rise from 0 within the pool of {} items",
                pool.len()
            ));
        }
        if ngram_indexes.iter().any(|&i| i < 0) {
            return attr_err(format!(
                "op '{NAME}': attr 'ngram_indexes' {ngram_indexes:?} must be non-negative"
            ));
        }
        let out_size = ngram_indexes.iter().map(|&i| i as usize + 1).max().unwrap_or(0);
        if let Some(w) = &weights {
            if w.len() < out_size {
                return attr_err(format!(
                    "op '{NAME}': attr 'weights' has {} values, the output has {out_size} columns",
                    w.len()
                ));
            }
        }
        let mut grams = HashMap::new();
        let mut id = 0usize;
        for (k, &start) in ngram_counts.iter().enumerate() {
            let size = k + 1;
            let end = ngram_counts.get(k + 1).map_or(pool.len(), |&e| e as usize);
            let items = &pool[start as usize..end];
            if !items.len().is_multiple_of(size) {
                return attr_err(format!(
                    "op '{NAME}': the pool's {size}-grams (items {start}..{end} of 'pool_int64s') are not a whole number of {size}-grams"
                ));
            }
            for g in items.chunks(size) {
                let Some(&col) = ngram_indexes.get(id) else {
                    return attr_err(format!(
                        "op '{NAME}': attr 'ngram_indexes' has {} values, fewer than the pool's n-grams",
                        ngram_indexes.len()
                    ));
                };
                if (min_gram..=max_gram).contains(&size) {
                    grams.insert(g.to_vec(), col as usize);
                }
                id += 1;
            }
        }
        if id != ngram_indexes.len() {
            return attr_err(format!(
                "op '{NAME}': attr 'ngram_indexes' has {} values, the pool holds {id} n-grams",
                ngram_indexes.len()
            ));
        }
        Ok(TfIdfVectorizer {
            mode,
            min_gram,
            max_gram,
            max_skip,
            ngram_counts,
            ngram_indexes,
            pool,
            weights,
            grams,
            out_size,
        })
    }

    /// The output shape for an input of rank `r` with `b` rows.
    fn out_shape(&self, r: usize, b: i64) -> Vec<i64> {
        if r == 2 {
            vec![b, self.out_size as i64]
        } else {
            vec![self.out_size as i64]
        }
    }

    fn check(&self, x: &TypeInfo) -> Result<()> {
        if !matches!(x.dtype, DType::I32 | DType::I64) {
            return dtype_err(format!("op '{NAME}': x must be i32 or i64, got {}", x.dtype));
        }
        if x.rank().is_some_and(|r| r > 2) {
            return rank_err(format!(
                "op '{NAME}': x must be [C] or [B, C], got {}",
                x.shape_string()
            ));
        }
        Ok(())
    }

    /// Adds one row's n-gram counts into `counts` (one per output column).
    fn count_row(&self, row: &[i64], counts: &mut [u64]) {
        let c = row.len();
        let mut gram = Vec::with_capacity(self.max_gram);
        for n in self.min_gram..=self.max_gram {
            let skips = if n == 1 { 1 } else { self.max_skip + 1 };
            for s in 1..=skips {
                let span = (n - 1) * s;
                for i in 0..c.saturating_sub(span) {
                    gram.clear();
                    gram.extend((0..n).map(|k| row[i + k * s]));
                    if let Some(&col) = self.grams.get(&gram) {
                        counts[col] += 1;
                    }
                }
            }
        }
    }

    /// The f32 output value of column `col` with count `n`.
    fn value(&self, col: usize, n: u64) -> f32 {
        let w = self.weights.as_ref().map_or(1.0, |w| w[col]);
        let v = match self.mode {
            Weighting::Tf => n as f64,
            Weighting::Idf if n > 0 => w,
            Weighting::Idf => 0.0,
            Weighting::TfIdf => w * n as f64,
        };
        v as f32
    }
}

/// Every row of `x` as i64s (the one monomorphized read per dtype).
fn rows_of<T: crate::dtype::Element + Into<i64>>(x: &Tensor) -> Result<Vec<i64>> {
    Ok(x.to_array::<T>()?.iter().map(|&v| v.into()).collect())
}

impl Op for TfIdfVectorizer {
    fn name(&self) -> &str {
        NAME
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        self.check(x)?;
        let shape = x
            .shape
            .as_ref()
            .map(|s| self.out_shape(s.len(), s.first().copied().unwrap_or(1)));
        Ok(vec![TypeInfo::new(DType::F32, shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        self.check(&TypeInfo::of(x))?;
        let flat = match x.dtype() {
            DType::I32 => rows_of::<i32>(x)?,
            _ => rows_of::<i64>(x)?,
        };
        let shape = x.shape();
        let (b, c) = match shape {
            [b, c] => (*b, *c),
            [c] => (1, *c),
            _ => (1, 1),
        };
        let out_shape: Vec<usize> = self
            .out_shape(shape.len(), b as i64)
            .iter()
            .map(|&d| d as usize)
            .collect();
        let out = ctx.output(0, DType::F32, &out_shape)?;
        let mut counts = vec![0u64; self.out_size];
        out.write_c_order(|o: &mut [f32]| {
            for r in 0..b {
                counts.fill(0);
                self.count_row(&flat[r * c..(r + 1) * c], &mut counts);
                let dst = &mut o[r * self.out_size..(r + 1) * self.out_size];
                for (col, (d, &n)) in dst.iter_mut().zip(&counts).enumerate() {
                    *d = self.value(col, n);
                }
            }
        })?;
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        let a = Attrs::new()
            .with("mode", self.mode.name())
            .with("min_gram_length", self.min_gram as i64)
            .with("max_gram_length", self.max_gram as i64)
            .with("max_skip_count", self.max_skip as i64)
            .with("ngram_counts", self.ngram_counts.clone())
            .with("ngram_indexes", self.ngram_indexes.clone())
            .with("pool_int64s", self.pool.clone());
        match &self.weights {
            Some(w) => a.with("weights", float_list(w)),
            None => a,
        }
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register(NAME, |a: &Attrs| {
        a.only(
            NAME,
            &[
                "mode",
                "min_gram_length",
                "max_gram_length",
                "max_skip_count",
                "ngram_counts",
                "ngram_indexes",
                "pool_int64s",
                "weights",
            ],
        )?;
        let mode = match a.str("mode")? {
            Some("TF") => Weighting::Tf,
            Some("IDF") => Weighting::Idf,
            Some("TFIDF") => Weighting::TfIdf,
            other => {
                return attr_err(format!(
                    "op '{NAME}': attr 'mode' must be TF, IDF or TFIDF, got {other:?}"
                ))
            }
        };
        let size = |k: &str| -> Result<usize> {
            match a.i64(k)? {
                Some(v) if v >= 0 => Ok(v as usize),
                v => attr_err(format!(
                    "op '{NAME}': attr '{k}' is required (non-negative), got {v:?}"
                )),
            }
        };
        let list = |k: &str| -> Result<Vec<i64>> {
            a.i64_list(k)?
                .map_or_else(|| attr_err(format!("op '{NAME}': attr '{k}' is required")), Ok)
        };
        let op = TfIdfVectorizer::new(
            mode,
            size("min_gram_length")?,
            size("max_gram_length")?,
            size("max_skip_count")?,
            list("ngram_counts")?,
            list("ngram_indexes")?,
            list("pool_int64s")?,
            a.f64_list("weights")?,
        )?;
        Ok(Arc::new(op) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_cause;
    use crate::ops::testutil::{op, run_vec, t};

    fn attrs(
        mode: &str,
        min: i64,
        max: i64,
        skip: i64,
        counts: &[i64],
        indexes: &[i64],
        pool: &[i64],
    ) -> Attrs {
        Attrs::new()
            .with("mode", mode)
            .with("min_gram_length", min)
            .with("max_gram_length", max)
            .with("max_skip_count", skip)
            .with("ngram_counts", counts.to_vec())
            .with("ngram_indexes", indexes.to_vec())
            .with("pool_int64s", pool.to_vec())
    }

    /// The counts by brute force: every (start, skip) tuple of each
    /// length compared with every pool n-gram of that length.
    fn brute(
        row: &[i64],
        pool: &[Vec<i64>],
        cols: &[usize],
        min: usize,
        max: usize,
        skip: usize,
    ) -> Vec<f32> {
        let width = cols.iter().max().map_or(0, |m| m + 1);
        let mut out = vec![0f32; width];
        for (g, &col) in pool.iter().zip(cols) {
            let n = g.len();
            if n < min || n > max {
                continue;
            }
            let skips: Vec<usize> = if n == 1 { vec![1] } else { (1..=skip + 1).collect() };
            for s in skips {
                for i in 0..row.len() {
                    let idx: Vec<usize> = (0..n).map(|k| i + k * s).collect();
                    if idx.iter().all(|&j| j < row.len()) && idx.iter().zip(g).all(|(&j, &v)| row[j] == v) {
                        out[col] += 1.0;
                    }
                }
            }
        }
        out
    }

    #[test]
    fn counts_unigrams_and_skip_bigrams_as_enumerated() {
        let row = vec![1i64, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8];
        let pool_flat = [2i64, 3, 5, 4, 5, 6, 7, 8, 6, 7];
        let pool: Vec<Vec<i64>> = vec![
            vec![2],
            vec![3],
            vec![5],
            vec![4],
            vec![5, 6],
            vec![7, 8],
            vec![6, 7],
        ];
        let cols: Vec<usize> = (0..7).collect();
        for (min, max, skip) in [(1, 1, 0), (1, 2, 0), (2, 2, 0), (1, 2, 5), (2, 2, 5), (2, 2, 2)] {
            let a = attrs("TF", min, max, skip, &[0, 4], &[0, 1, 2, 3, 4, 5, 6], &pool_flat);
            let (shape, got) = run_vec::<f32>(&*op(NAME, a), &[t(&[12], row.clone())]).unwrap();
            assert_eq!(shape, [7]);
            assert_eq!(
                got,
                brute(&row, &pool, &cols, min as usize, max as usize, skip as usize),
                "min {min} max {max} skip {skip}"
            );
        }
    }

    #[test]
    fn batch_rows_are_counted_apart_and_columns_follow_ngram_indexes() {
        let x = t(&[2, 4], vec![5i32, 6, 5, 6, 7, 7, 7, 9]);
        // Two bigrams; the second goes to column 0, the first to column 2.
        let a = attrs("TF", 2, 2, 0, &[0, 0], &[2, 0], &[5, 6, 7, 7]);
        let (shape, got) = run_vec::<f32>(&*op(NAME, a), &[x]).unwrap();
        assert_eq!(shape, [2, 3]);
        // Row 0 holds (5, 6) twice; row 1 holds (7, 7) twice.
        assert_eq!(got, [0.0, 0.0, 2.0, 2.0, 0.0, 0.0]);
    }

    #[test]
    fn idf_and_tfidf_weigh_by_column() {
        let x = t(&[5], vec![4i64, 4, 4, 9, 2]);
        let base = attrs("IDF", 1, 1, 0, &[0], &[0, 1, 2], &[4, 9, 3]);
        let w = vec![0.5, 2.0, 3.0];
        let (_, idf) = run_vec::<f32>(
            &*op(NAME, base.clone().with("weights", float_list(&w))),
            std::slice::from_ref(&x),
        )
        .unwrap();
        // 4 thrice, 9 once, 3 never.
        assert_eq!(idf, [0.5, 2.0, 0.0]);
        let (_, idf1) = run_vec::<f32>(&*op(NAME, base.clone()), std::slice::from_ref(&x)).unwrap();
        assert_eq!(idf1, [1.0, 1.0, 0.0]);
        let tfidf = base.clone().with("mode", "TFIDF").with("weights", float_list(&w));
        let (_, got) = run_vec::<f32>(&*op(NAME, tfidf), std::slice::from_ref(&x)).unwrap();
        assert_eq!(got, [1.5, 2.0, 0.0]);
        let (_, plain) = run_vec::<f32>(&*op(NAME, base.with("mode", "TFIDF")), &[x]).unwrap();
        assert_eq!(plain, [3.0, 1.0, 0.0]);
    }

    #[test]
    fn bad_attrs_and_inputs_are_errors() {
        let r = OpRegistry::builtin();
        let ok = attrs("TF", 1, 2, 0, &[0, 2], &[0, 1, 2], &[1, 2, 3, 4]);
        assert!(r.make(NAME, &ok).is_ok());
        assert_cause!(
            r.make(NAME, &ok.clone().with("mode", "BM25")).unwrap_err(),
            Attr,
            "mode"
        );
        assert_cause!(
            r.make(NAME, &ok.clone().with("min_gram_length", 3)).unwrap_err(),
            Attr,
            "min_gram_length"
        );
        // Three bigram items are not whole bigrams.
        let odd = attrs("TF", 1, 2, 0, &[0, 2], &[0, 1, 2], &[1, 2, 3, 4, 5]);
        assert_cause!(r.make(NAME, &odd).unwrap_err(), Attr, "pool_int64s");
        let short = attrs("TF", 1, 2, 0, &[0, 2], &[0, 1], &[1, 2, 3, 4]);
        assert_cause!(r.make(NAME, &short).unwrap_err(), Attr, "ngram_indexes");
        let w = ok.clone().with("weights", float_list(&[1.0]));
        assert_cause!(r.make(NAME, &w).unwrap_err(), Attr, "weights");
        let v = op(NAME, ok);
        let e = run_vec::<f32>(&*v, &[t(&[2], vec![1.0f32, 2.0])]).unwrap_err();
        assert_cause!(e, DType, "i32 or i64");
        let e = run_vec::<f32>(&*v, &[t(&[1, 1, 2], vec![1i64, 2])]).unwrap_err();
        assert_cause!(e, Rank, "[B, C]");
    }
}
