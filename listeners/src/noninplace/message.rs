//! The words of a finding: where a changed element is, in the view and in
//! its base, and the rule a scratch write breaks.

use serde_json::{json, Value};
use vigil_engine::exec::OpEvent;
use vigil_engine::tensor::region::Region;
use vigil_engine::Tensor;

use crate::finding::{fmt_index, unravel};
use crate::hash::Part;

/// The `scratch_write` message: the rule, since the content is unchanged.
pub(super) fn scratch_message(input: usize, var: &str, before: u64, after: u64) -> String {
    format!(
        "input {input} ({var}) was borrowed for writing (buffer version {before} → {after}) and holds its old values again: \
         the op computes in its input's buffer and restores it, but does not declare the destroy. \
         Anyone reading that buffer meanwhile (another thread, a parallel executor, a caller's view) sees the scratch values; \
         an op that does temporary calculations in an input must declare it in its destroy_map, or compute in its own buffer"
    )
}

/// "59 of 128 elements changed, first at [0, 2]: 0.4 → 0.38", from a
/// view diff (`changed`, `first[0].flat`, `old`, `new`) of a view of
/// `shape`.
pub(super) fn changed_elements(diff: &Value, shape: &[usize]) -> Option<String> {
    let changed = diff["changed"].as_u64()?;
    let first = diff["first"].get(0)?;
    let index = unravel(first["flat"].as_u64()? as usize, shape);
    let total: usize = shape.iter().product();
    let noun = if total == 1 { "element" } else { "elements" };
    Some(format!(
        "{changed} of {total} {noun} changed, first at {}: {} → {}",
        fmt_index(&index),
        first["old"],
        first["new"]
    ))
}

pub(super) fn part_name(part: Part) -> &'static str {
    match part {
        Part::View => "view",
        Part::Outside => "outside",
        Part::Guard => "guard_band",
    }
}

/// The variable whose buffer input `i` is a view of, and its shape, when
/// the graph knows it and it spans the whole buffer: element offsets are
/// then named as its indices.
pub(super) fn base_of(ev: &OpEvent, i: usize, t: &Tensor) -> Option<(String, Vec<usize>)> {
    let v = *ev.node.inputs.get(i)?;
    let root = vigil_engine::destroy::DestroyHandler::new(ev.graph).root(v);
    let var = ev.graph.var(root);
    let shape: Vec<usize> = var
        .ty
        .shape
        .as_ref()?
        .iter()
        .map(|&d| usize::try_from(d).ok())
        .collect::<Option<_>>()?;
    (shape.iter().product::<usize>() == t.data_size()).then(|| (var.name.clone(), shape))
}

/// Says where buffer element `first["offset"]` lies relative to the view's
/// span, adds that as `first["where"]` (and `first["base_index"]`), and
/// returns it as a phrase for the message.
pub(super) fn locate(first: &mut Value, t: &Tensor, base: Option<&(String, Vec<usize>)>) -> String {
    let Some(o) = first["offset"].as_u64().map(|o| o as usize) else {
        return String::new();
    };
    let Some((lo, hi)) = Region::new(t.layout()).span() else {
        return format!("buffer element {o}");
    };
    let plural = |n: usize| if n == 1 { "element" } else { "elements" };
    let mut place = if o > hi {
        format!("{} {} past the end of the view", o - hi, plural(o - hi))
    } else if o < lo {
        format!("{} {} before the start of the view", lo - o, plural(lo - o))
    } else {
        format!(
            "in a gap of the view, {} {} after its first element",
            o - lo,
            plural(o - lo)
        )
    };
    d_insert(first, "where", json!(place));
    if let Some((name, shape)) = base {
        let index = unravel(o, shape);
        d_insert(first, "base_index", json!(index));
        place.push_str(&format!(", at {name}{}", fmt_index(&index)));
        if shape.len() == 2 {
            place.push_str(&format!(" (row {})", index[0]));
        }
    }
    format!(
        "buffer element {o}, {place}, went from {} to {}",
        first["old"], first["new"]
    )
}

pub(super) fn d_insert(v: &mut Value, key: &str, x: Value) {
    if let Value::Object(m) = v {
        m.insert(key.into(), x);
    }
}
