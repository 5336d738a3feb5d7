//! Text features: TfIdfVectorizer over integer pools.

use vigil_engine::ops::float_list;
use vigil_engine::Attrs;

use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

use super::emit::{input, out};
use super::Op;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[Op::new("TfIdfVectorizer", 9, tfidf_vectorizer)];

/// `tfidf_vectorizer` with the node's attrs; a string pool
/// (`pool_strings`) is refused, as Vigil has no string tensors.
fn tfidf_vectorizer(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    if c.attr("pool_strings").is_some_and(|a| !a.strings.is_empty()) {
        return Err(c.bad_attr(
            "pool_strings",
            "string pools are not supported (Vigil has no string tensors); pool_int64s is",
        ));
    }
    let pool = c
        .ints("pool_int64s")
        .ok_or_else(|| c.bad_attr("pool_int64s", "is required (string pools are not supported)"))?;
    let mode = c.s("mode").ok_or_else(|| c.bad_attr("mode", "is required"))?;
    let int = |k: &str| c.i(k).ok_or_else(|| c.bad_attr(k, "is required"));
    let mut a = Attrs::new()
        .with("mode", mode)
        .with("min_gram_length", int("min_gram_length")?)
        .with("max_gram_length", int("max_gram_length")?)
        .with("max_skip_count", int("max_skip_count")?)
        .with("ngram_counts", c.ints("ngram_counts").unwrap_or_default())
        .with("ngram_indexes", c.ints("ngram_indexes").unwrap_or_default())
        .with("pool_int64s", pool);
    if let Some(w) = c.attr("weights").filter(|w| !w.floats.is_empty()) {
        let w: Vec<f64> = w.floats.iter().map(|&f| f as f64).collect();
        a = a.with("weights", float_list(&w));
    }
    out(imp, c, "tfidf_vectorizer", a, &[x])
}
