//! `opcheck` from a kernel author's side: four broken kernels written
//! through the public API only, each with its correct twin. `opcheck`
//! names each broken one with the right kind, and the twins stay clean;
//! the harness binary's `opcheck` command does the same for this crate's
//! ops.

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use vigil::debugmode::{opcheck_with, OpcheckConfig, OpcheckReport};
use vigil::engine::error::{op_err, rank_err};
use vigil::engine::{Layout, Result};
use vigil::ndarray::{ArrayViewD, ArrayViewMutD};
use vigil::prelude::*;

fn values(t: &Tensor) -> Result<Vec<f32>> {
    t.read(|v: ArrayViewD<'_, f32>| v.iter().copied().collect())
}

fn put(t: &Tensor, v: &[f32]) -> Result<()> {
    t.write(|mut o: ArrayViewMutD<'_, f32>| o.iter_mut().zip(v).for_each(|(a, &b)| *a = b))
}

/// One f32 input, the output of its shape (1-D only with `vector`).
fn infer_f32(op: &dyn Op, inputs: &[TypeInfo], vector: bool) -> Result<Vec<TypeInfo>> {
    check_arity(op, inputs.len())?;
    if inputs[0].dtype != DType::F32 {
        return op_err(format!("op '{}' takes f32, got {}", op.name(), inputs[0].dtype));
    }
    if vector && inputs[0].rank() != Some(1) {
        return rank_err(format!("op '{}' takes a vector", op.name()));
    }
    Ok(vec![inputs[0].clone()])
}

/// `out[i] = (i + 1) * x[i]` in logical order. The broken one takes the
/// input's memory-order slice as if it were in logical order.
struct Ramp(&'static str, bool);

impl Op for Ramp {
    fn name(&self) -> &str {
        self.0
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        infer_f32(self, inputs, false)
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let x = &inputs[0];
        let bad = self.1;
        let flat: Vec<f32> = x.read(|v: ArrayViewD<'_, f32>| match v.as_slice_memory_order() {
            Some(s) if bad => s.to_vec(),
            _ => v.iter().copied().collect(),
        })?;
        let out = ctx.output(0, DType::F32, x.shape())?;
        put(
            &out,
            &flat
                .iter()
                .enumerate()
                .map(|(i, v)| (i + 1) as f32 * v)
                .collect::<Vec<_>>(),
        )?;
        Ok(vec![out])
    }
}

/// 1-D: `out[k] = x[k] + x[k + 1]` (0 past the end). The broken one's
/// loop bound is one too far: it reads the buffer's element after the
/// view whenever the buffer has one.
struct Neighbours(&'static str, bool);

impl Op for Neighbours {
    fn name(&self) -> &str {
        self.0
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        infer_f32(self, inputs, true)
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let x = &inputs[0];
        let n = x.shape()[0];
        let s = x.strides()[0];
        let end = x.offset() as isize + n as isize * s;
        let past = self.1 && end >= 0 && (end as usize) < x.data_size();
        let mut v = if past {
            values(&x.with_layout(Layout::new(vec![n + 1], vec![s], x.offset()))?)?
        } else {
            values(x)?
        };
        if !past {
            v.push(0.0);
        }
        let out = ctx.output(0, DType::F32, x.shape())?;
        put(&out, &(0..n).map(|k| v[k] + v[k + 1]).collect::<Vec<_>>())?;
        Ok(vec![out])
    }
}

static CALLS: AtomicU64 = AtomicU64::new(0);

/// `x + 0.25`. The broken one adds 0.26 on every other call.
struct Jitter(&'static str, bool);

impl Op for Jitter {
    fn name(&self) -> &str {
        self.0
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        infer_f32(self, inputs, false)
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let odd = CALLS.fetch_add(1, Ordering::SeqCst) % 2 == 1;
        let add = if self.1 && odd { 0.26 } else { 0.25 };
        let out = ctx.output(0, DType::F32, inputs[0].shape())?;
        put(
            &out,
            &values(&inputs[0])?.iter().map(|v| v + add).collect::<Vec<_>>(),
        )?;
        Ok(vec![out])
    }
}

/// `6 x`, declared pure. The broken one doubles its input in place,
/// computes `3 x` from it, and halves it back.
struct Scratch(&'static str, bool);

impl Op for Scratch {
    fn name(&self) -> &str {
        self.0
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        infer_f32(self, inputs, false)
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let x = &inputs[0];
        let out = ctx.output(0, DType::F32, x.shape())?;
        if !self.1 {
            put(&out, &values(x)?.iter().map(|v| 6.0 * v).collect::<Vec<_>>())?;
            return Ok(vec![out]);
        }
        x.write(|mut v: ArrayViewMutD<'_, f32>| v.mapv_inplace(|e| e * 2.0))?;
        put(&out, &values(x)?.iter().map(|v| 3.0 * v).collect::<Vec<_>>())?;
        x.write(|mut v: ArrayViewMutD<'_, f32>| v.mapv_inplace(|e| e * 0.5))?;
        Ok(vec![out])
    }
}

fn registry() -> OpRegistry {
    let mut r = OpRegistry::builtin();
    for bad in [true, false] {
        let pick = |b: &'static str, g: &'static str| if bad { b } else { g };
        r.register_op(Arc::new(Ramp(pick("ramp_bad", "ramp"), bad)));
        r.register_op(Arc::new(Neighbours(pick("neighbours_bad", "neighbours"), bad)));
        r.register_op(Arc::new(Jitter(pick("jitter_bad", "jitter"), bad)));
        r.register_op(Arc::new(Scratch(pick("scratch_bad", "scratch"), bad)));
    }
    r
}

fn check(op: &str) -> OpcheckReport {
    let cfg = OpcheckConfig {
        cases: 16,
        ..OpcheckConfig::default()
    };
    opcheck_with(&registry(), op, &cfg).unwrap()
}

#[test]
fn opcheck_names_each_broken_kernel_and_passes_its_twin() {
    for (bad, good, kind) in [
        ("ramp_bad", "ramp", Kind::LAYOUT_DEPENDENT),
        ("neighbours_bad", "neighbours", Kind::LAYOUT_DEPENDENT),
        ("jitter_bad", "jitter", Kind::NONDETERMINISTIC),
        ("scratch_bad", "scratch", Kind::SCRATCH_WRITE),
    ] {
        let r = check(bad);
        assert!(
            r.findings.iter().any(|f| f.kind == kind && f.op == bad),
            "{bad}: want {kind} in {:#?}",
            r.findings
        );
        let r = check(good);
        assert!(r.passed(), "{good}: {:#?} on {:?}", r.findings, r.failing);
        assert!(r.ran > r.errors, "{good}: no sample ran: {r:?}");
    }
    // Reading past the view shows only on a view with room after it: the
    // message says so.
    let r = check("neighbours_bad");
    assert!(
        r.findings
            .iter()
            .any(|f| f.message.contains("reads outside input 0")),
        "{:#?}",
        r.findings
    );
}

#[test]
fn the_harness_binary_opchecks_this_crates_ops() {
    let o = Command::new(env!("CARGO_BIN_EXE_kernel-vigil"))
        .args(["opcheck", "axpy", "fast_softmax", "--cases", "8"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("axpy: pass"), "{out}");
    // It writes its input: `destroyed_input` where the values change, or
    // `scratch_write` on a sample whose write leaves them as they were (an
    // empty one).
    assert!(
        out.contains("destroyed_input at op (fast_softmax)")
            || out.contains("scratch_write at op (fast_softmax)"),
        "{out}"
    );
    assert!(out.contains("1 of 2 ops pass, 1 fail"), "{out}");
}
