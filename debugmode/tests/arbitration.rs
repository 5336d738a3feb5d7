//! fp64 arbitration: an in-place kernel that rounds differently from its
//! pure twin is accepted when it is no farther from the f64 result, and
//! still reported (with the arbitration's figures) when it is farther.

use std::collections::HashMap;
use std::sync::Arc;

use ndarray::{ArrayViewD, ArrayViewMutD};
use vigil_debugmode::{DebugConfig, DebugMode};
use vigil_engine::ops::{check_arity, Arity, InplaceVariant, Op, OpCtx, OpRegistry, TypeInfo};
use vigil_engine::{DType, GraphBuilder, Result, Tensor};

/// A running sum. The pure op accumulates in the element type; the in-place
/// variant accumulates in f64 (`accurate`) or returns twice the sum (a bug).
struct Cumsum {
    inplace: bool,
    accurate: bool,
}

// `Float` has no `AddAssign`.
#[allow(clippy::assign_op_pattern)]
fn cumsum<T: vigil_engine::Float>(x: &[T], wide: bool) -> Vec<T> {
    let (mut narrow, mut exact) = (<T as vigil_engine::Element>::from_f64(0.0), 0f64);
    x.iter()
        .map(|&v| {
            narrow = narrow + v;
            exact += vigil_engine::Element::to_f64(v);
            if wide {
                <T as vigil_engine::Element>::from_f64(exact)
            } else {
                narrow
            }
        })
        .collect()
}

impl Cumsum {
    fn run<T: vigil_engine::Float>(&self, x: &Tensor, ctx: &mut OpCtx) -> Result<Tensor> {
        let v: Vec<T> = x.read(|a: ArrayViewD<'_, T>| a.iter().copied().collect())?;
        let mut r = cumsum(&v, self.inplace && self.accurate);
        if self.inplace && !self.accurate {
            r.iter_mut().for_each(|e| *e = *e + *e);
        }
        let out = if self.inplace {
            x.clone()
        } else {
            ctx.output(0, x.dtype(), x.shape())?
        };
        out.write(|mut a: ArrayViewMutD<'_, T>| a.iter_mut().zip(&r).for_each(|(o, &e)| *o = e))?;
        Ok(out)
    }
}

impl Op for Cumsum {
    fn name(&self) -> &str {
        match (self.inplace, self.accurate) {
            (false, true) => "cumsum",
            (true, true) => "cumsum_inplace",
            (false, false) => "sloppy_cumsum",
            (true, false) => "sloppy_cumsum_inplace",
        }
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, i: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, i.len())?;
        Ok(vec![i[0].clone()])
    }
    fn compute(&self, i: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        Ok(vec![match i[0].dtype() {
            DType::F64 => self.run::<f64>(&i[0], ctx)?,
            _ => self.run::<f32>(&i[0], ctx)?,
        }])
    }
    fn destroy_map(&self) -> Vec<(usize, usize)> {
        if self.inplace {
            vec![(0, 0)]
        } else {
            Vec::new()
        }
    }
    fn inplace_variants(&self) -> Vec<InplaceVariant> {
        if self.inplace {
            return Vec::new();
        }
        vec![InplaceVariant {
            op: Arc::new(Cumsum {
                inplace: true,
                accurate: self.accurate,
            }),
            inputs: vec![0],
        }]
    }
    fn pure_twin(&self) -> Option<Arc<dyn Op>> {
        self.inplace.then(|| {
            Arc::new(Cumsum {
                inplace: false,
                accurate: self.accurate,
            }) as Arc<dyn Op>
        })
    }
}

/// `cumsum(neg(neg(x)))` on `[1e8, 1 × 16, -1e8]`: in f32 the ones vanish
/// into 1e8, so the pure sum ends at 0 where the exact one is 16.
fn check(op: &str, cfg: DebugConfig) -> vigil_debugmode::DebugReport {
    let mut r = OpRegistry::builtin();
    for accurate in [true, false] {
        r.register_op(Arc::new(Cumsum {
            inplace: false,
            accurate,
        }));
    }
    let b = GraphBuilder::with_registry("arbitration", r);
    let x = b.input("x", DType::F32, &[18]);
    let y = x
        .neg()
        .unwrap()
        .neg()
        .unwrap()
        .op(op, &[], Default::default())
        .unwrap();
    let g = b.build(&[&y]).unwrap();
    let mut v = vec![1e8f32];
    v.extend([1.0; 16]);
    v.push(-1e8);
    let feeds = HashMap::from([("x".to_string(), Tensor::from_vec(&[18], v).unwrap())]);
    DebugMode::new(cfg).check(&g, &feeds).unwrap()
}

#[test]
fn a_more_accurate_inplace_kernel_is_accepted() {
    let r = check("cumsum", DebugConfig::default());
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
    assert_eq!(r.stats.arbitrated, 1, "{:?}", r.stats);
    assert!(r.stats.tolerated >= 1);
}

#[test]
fn without_arbitration_the_difference_is_reported() {
    let cfg = DebugConfig::default()
        .with_checks("listeners,lockstep,poison")
        .unwrap();
    let r = check("cumsum", cfg);
    let kinds: Vec<&str> = r.findings.iter().map(|f| f.kind.as_str()).collect();
    assert_eq!(kinds, vec!["value_mismatch"], "{:#?}", r.findings);
    assert_eq!(r.stats.arbitrated, 0);
}

#[test]
fn a_wrong_inplace_kernel_is_still_reported_with_the_figures() {
    let r = check("sloppy_cumsum", DebugConfig::default());
    let m = r
        .findings
        .iter()
        .find(|f| f.kind.as_str() == "value_mismatch")
        .unwrap_or_else(|| panic!("{:#?}", r.findings));
    let a = &m.details["arbitration"];
    assert!(
        a["rmse_inplace"].as_f64().unwrap() > 2.0 * a["rmse_pure"].as_f64().unwrap(),
        "{a}"
    );
    assert_eq!(r.stats.arbitrated, 0);
}
