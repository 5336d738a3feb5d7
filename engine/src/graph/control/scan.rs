//! `scan`: a body run once per slice of its scan inputs (ONNX `Scan`,
//! opset 9 on).
//!
//! Inputs `state…, xs…, captured…`. Iteration `t` gives the body
//! `(state…, x_t…, captured…)`, where `x_t` is slice `t` of each scan
//! input along its axis (counted from the end when its direction is 1),
//! and takes back `(state…, ys…)`: the state passes to the next
//! iteration, each `y` is stacked along its output axis (in reverse
//! order when its direction is 1). The node gives the last state, then
//! the stacked outputs. The attrs list one axis and one direction per
//! scan input (`scan_input_axes`, `scan_input_directions`) and per scan
//! output (`scan_output_axes`, `scan_output_directions`); their lengths
//! say how many there are.

use crate::error::{attr_err, dtype_err, shape_err, Error, Result};
use crate::ops::{Arity, Attrs, Op, OpCtx, TypeInfo};
use crate::tensor::Tensor;

use super::{check_inputs, join_shapes, owned, run_plain, slice_at, stack, Body, Control, RunBody};

/// The attrs of a `scan` node.
pub(super) const ATTRS: [&str; 5] = [
    "body",
    "scan_input_axes",
    "scan_input_directions",
    "scan_output_axes",
    "scan_output_directions",
];

/// The `scan` op.
#[derive(Clone, Debug)]
pub struct Scan {
    body: Body,
    input_axes: Vec<i64>,
    input_reversed: Vec<bool>,
    output_axes: Vec<i64>,
    output_reversed: Vec<bool>,
}

/// Directions as flags (`1` reversed), one per axis; absent means none.
fn directions(attrs: &Attrs, key: &str, n: usize) -> Result<Vec<bool>> {
    let d = attrs.i64_list(key)?.unwrap_or_else(|| vec![0; n]);
    if d.len() != n || d.iter().any(|&v| v != 0 && v != 1) {
        return attr_err(format!(
            "attr '{key}' must list {n} values, each 0 or 1; got {d:?}"
        ));
    }
    Ok(d.into_iter().map(|v| v == 1).collect())
}

/// `axis` of a rank-`rank` value, counted from the end when negative.
fn axis_of(axis: i64, rank: usize) -> Result<usize> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if (0..r).contains(&a) {
        Ok(a as usize)
    } else {
        shape_err(format!("op 'scan': axis {axis} is out of range for rank {rank}"))
    }
}

impl Scan {
    /// The op from its attrs (`body` already built).
    pub(super) fn from_attrs(body: Body, attrs: &Attrs) -> Result<Scan> {
        let list = |key: &str| {
            attrs
                .i64_list(key)?
                .ok_or_else(|| Error::Attr(format!("attr '{key}' is required")))
        };
        let input_axes = list("scan_input_axes")?;
        let output_axes = list("scan_output_axes")?;
        let input_reversed = directions(attrs, "scan_input_directions", input_axes.len())?;
        let output_reversed = directions(attrs, "scan_output_directions", output_axes.len())?;
        Scan::new(body, input_axes, input_reversed, output_axes, output_reversed)
    }

    /// Checks that the body's signature fits the scan inputs and outputs
    /// the axes name.
    pub fn new(
        body: Body,
        input_axes: Vec<i64>,
        input_reversed: Vec<bool>,
        output_axes: Vec<i64>,
        output_reversed: Vec<bool>,
    ) -> Result<Scan> {
        let (m, s) = (input_axes.len(), output_axes.len());
        if m == 0 {
            return attr_err("op 'scan': scan_input_axes must name at least one scan input");
        }
        if body.outputs.len() < s || body.inputs.len() < body.outputs.len() - s + m {
            return attr_err(format!(
                "op 'scan': a body with {s} scan outputs and {m} scan inputs takes its state and the slices \
                 (at least {} inputs) and gives the state and the scan outputs; it takes {} and gives {}",
                body.outputs.len().saturating_sub(s) + m,
                body.inputs.len(),
                body.outputs.len()
            ));
        }
        Ok(Scan {
            body,
            input_axes,
            input_reversed,
            output_axes,
            output_reversed,
        })
    }

    pub fn body(&self) -> &Body {
        &self.body
    }

    /// How many state values the body carries.
    fn states(&self) -> usize {
        self.body.outputs.len() - self.output_axes.len()
    }
}

impl Control for Scan {
    fn run(&self, inputs: &[Tensor], run_body: &mut RunBody<'_>) -> Result<Vec<Tensor>> {
        let (n, m) = (self.states(), self.input_axes.len());
        let xs = &inputs[n..n + m];
        let captured = &inputs[n + m..];
        let mut axes = Vec::with_capacity(m);
        let mut len = None;
        for (j, (x, &a)) in xs.iter().zip(&self.input_axes).enumerate() {
            let ax = axis_of(a, x.ndim())?;
            let l = x.shape()[ax];
            if len.is_some_and(|first| first != l) {
                return shape_err(format!(
                    "op 'scan': scan input {j} has {l} slices along axis {a}, scan input 0 has {}",
                    len.unwrap_or(0)
                ));
            }
            len = Some(l);
            axes.push(ax);
        }
        let len = len.unwrap_or(0);
        let g = self.body.graph()?;
        let mut state: Vec<Tensor> = inputs[..n].to_vec();
        let mut ys: Vec<Vec<Tensor>> = vec![Vec::with_capacity(len); self.output_axes.len()];
        for t in 0..len {
            let mut feeds = state.clone();
            for ((x, &ax), &rev) in xs.iter().zip(&axes).zip(&self.input_reversed) {
                feeds.push(slice_at(x, ax, if rev { len - 1 - t } else { t })?);
            }
            feeds.extend(captured.iter().cloned());
            let outs = run_body(&g, &feeds)?;
            if outs.len() != n + ys.len() {
                return Err(Error::Arity(format!(
                    "op 'scan': the body gave {} values, {} expected",
                    outs.len(),
                    n + ys.len()
                )));
            }
            state = outs[..n].to_vec();
            for (y, o) in ys.iter_mut().zip(&outs[n..]) {
                y.push(o.clone());
            }
        }
        let mut result = owned(&g, inputs, state)?;
        for (k, mut y) in ys.into_iter().enumerate() {
            if self.output_reversed[k] {
                y.reverse();
            }
            result.push(stack(
                "scan",
                k,
                &y,
                self.output_axes[k],
                &self.body.outputs[n + k],
            )?);
        }
        Ok(result)
    }
}

impl Op for Scan {
    fn name(&self) -> &str {
        "scan"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(self.body.inputs.len())
    }
    fn num_outputs(&self) -> usize {
        self.body.outputs.len()
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        crate::ops::check_arity(self, inputs.len())?;
        let n = self.states();
        let mut given = inputs.to_vec();
        let mut len: Option<i64> = None;
        for (j, &a) in self.input_axes.iter().enumerate() {
            let x = &inputs[n + j];
            let Some(s) = &x.shape else { continue };
            let ax = axis_of(a, s.len())?;
            if s[ax] >= 0 {
                if len.is_some_and(|l| l >= 0 && l != s[ax]) {
                    return shape_err(format!(
                        "op 'scan': scan input {j} has {} slices along axis {a}, an earlier one {}",
                        s[ax],
                        len.unwrap_or(0)
                    ));
                }
                len = Some(s[ax]);
            }
            let mut slice = s.clone();
            slice.remove(ax);
            given[n + j] = TypeInfo::new(x.dtype, Some(slice));
        }
        check_inputs("scan", &self.body, &given)?;
        let outs = &self.body.outputs;
        let mut result = Vec::with_capacity(outs.len());
        for k in 0..n {
            if inputs[k].dtype != outs[k].dtype {
                return dtype_err(format!(
                    "op 'scan': state {k} enters as {} and the body gives {}",
                    inputs[k].dtype, outs[k].dtype
                ));
            }
            result.push(join_shapes(&inputs[k], &outs[k]));
        }
        for (k, &a) in self.output_axes.iter().enumerate() {
            let out = &outs[n + k];
            let shape = match &out.shape {
                Some(s) => {
                    let r = s.len() as i64 + 1;
                    let ax = if a < 0 { a + r } else { a };
                    if !(0..r).contains(&ax) {
                        return attr_err(format!(
                            "op 'scan': scan output {k}'s axis {a} is out of range for rank {r}"
                        ));
                    }
                    let mut full = s.clone();
                    full.insert(ax as usize, len.unwrap_or(-1));
                    Some(full)
                }
                None => None,
            };
            result.push(TypeInfo::new(out.dtype, shape));
        }
        Ok(result)
    }
    fn compute(&self, inputs: &[Tensor], _ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        crate::ops::check_arity(self, inputs.len())?;
        self.run(inputs, &mut run_plain)
    }
    fn as_control(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn attrs(&self) -> Attrs {
        let flags = |v: &[bool]| v.iter().map(|&r| i64::from(r)).collect::<Vec<i64>>();
        Attrs::new()
            .with("body", self.body.attr())
            .with("scan_input_axes", self.input_axes.clone())
            .with("scan_input_directions", flags(&self.input_reversed))
            .with("scan_output_axes", self.output_axes.clone())
            .with("scan_output_directions", flags(&self.output_reversed))
    }
}
