//! `tensor_scatter(cache, update, [write_indices])` (ONNX TensorScatter):
//! a KV-cache update. `update` has the cache's shape except along attr
//! `axis` (default -2; not the batch axis 0), where it is `len <=` the
//! cache's `max_len`. For every index of the axes before `axis`, with `b`
//! its batch index, the `len` slices of `update` along `axis` are written
//! at `write_indices[b] + s` (i64 `[batch]`, zeros when absent); with attr
//! `circular` the position wraps modulo `max_len`, else every write must
//! fit, which is checked before anything is written. Any dtype.
//!
//! `tensor_scatter_inplace` writes into the cache itself (destroys input
//! 0): the update ONNX describes as a functional model of an in-place one.

use std::sync::Arc;

use crate::dtype::{DType, Element};
use crate::error::{dtype_err, index_err, shape_err, Result};
use crate::ops::copy::axis_of;
use crate::ops::{check_arity, Arity, Attrs, InplaceVariant, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `tensor_scatter` op, or `tensor_scatter_inplace`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorScatter {
    pub axis: i64,
    pub circular: bool,
    pub inplace: bool,
}

impl TensorScatter {
    fn check(&self, ins: &[TypeInfo]) -> Result<()> {
        let op = self.name();
        let (c, u) = (&ins[0], &ins[1]);
        if u.dtype != c.dtype {
            return dtype_err(format!(
                "op '{op}': update is {}, the cache is {}",
                u.dtype, c.dtype
            ));
        }
        if let Some(w) = ins.get(2) {
            if w.dtype != DType::I64 {
                return dtype_err(format!("op '{op}': write_indices must be i64, got {}", w.dtype));
            }
        }
        let (Some(cs), Some(us)) = (&c.shape, &u.shape) else {
            return Ok(());
        };
        let ax = self.axis_in(cs.len())?;
        let fits = cs.len() == us.len()
            && cs
                .iter()
                .zip(us)
                .enumerate()
                .all(|(i, (&a, &b))| a < 0 || b < 0 || if i == ax { b <= a } else { a == b });
        if !fits {
            return shape_err(format!(
                "op '{op}': update {} must have the cache's shape {} except along axis {ax}, where it may be shorter",
                u.shape_string(),
                c.shape_string()
            ));
        }
        Ok(())
    }

    fn axis_in(&self, r: usize) -> Result<usize> {
        let ax = axis_of(self.name(), self.axis, r)?;
        if ax == 0 {
            return shape_err(format!("op '{}': axis must not be the batch axis 0", self.name()));
        }
        Ok(ax)
    }
}

/// Copies each update slice to its place in the C-order cache `o`.
fn scatter<T: Element>(
    u: &[T],
    starts: &[usize],
    shape: &[usize],
    ax: usize,
    len: usize,
    circular: bool,
    o: &mut [T],
) {
    let max = shape[ax];
    let inner: usize = shape[ax + 1..].iter().product();
    let per_batch: usize = shape[1..ax].iter().product();
    let outer: usize = shape[..ax].iter().product();
    for p in 0..outer {
        let start = starts[p / per_batch.max(1)];
        for s in 0..len {
            let at = if circular { (start + s) % max } else { start + s };
            let dst = (p * max + at) * inner;
            let src = (p * len + s) * inner;
            o[dst..dst + inner].copy_from_slice(&u[src..src + inner]);
        }
    }
}

fn run<T: Element>(
    p: &TensorScatter,
    cache: &Tensor,
    upd: &Tensor,
    starts: &[usize],
    ax: usize,
    out: &Tensor,
) -> Result<()> {
    let u = upd.to_array::<T>()?;
    let len = upd.shape()[ax];
    let shape = cache.shape().to_vec();
    out.write_c_order(|o: &mut [T]| {
        scatter(
            u.as_slice().unwrap_or_default(),
            starts,
            &shape,
            ax,
            len,
            p.circular,
            o,
        )
    })
}

impl Op for TensorScatter {
    fn name(&self) -> &str {
        if self.inplace {
            "tensor_scatter_inplace"
        } else {
            "tensor_scatter"
        }
    }
    fn arity(&self) -> Arity {
        Arity { min: 2, max: Some(3) }
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        self.check(inputs)?;
        Ok(vec![inputs[0].clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.check(&tys)?;
        let (cache, upd) = (&inputs[0], &inputs[1]);
        let ax = self.axis_in(cache.ndim())?;
        let (batch, max, len) = (cache.shape()[0], cache.shape()[ax], upd.shape()[ax]);
        // Every write position is checked before anything is written.
        let starts: Vec<usize> = match inputs.get(2) {
            None => vec![0; batch],
            Some(w) => {
                if w.shape() != [batch] {
                    return shape_err(format!(
                        "op '{}': write_indices {:?} must be [{batch}]",
                        self.name(),
                        w.shape()
                    ));
                }
                let w = w.to_array::<i64>()?;
                w.iter()
                    .map(|&i| {
                        let ok = usize::try_from(i)
                            .ok()
                            .filter(|&s| self.circular || s + len <= max)
                            .filter(|_| max > 0 || len == 0);
                        ok.map_or_else(
                            || {
                                index_err(format!(
                                    "op '{}': write index {i} with {len} updates does not fit the cache's {max} positions",
                                    self.name()
                                ))
                            },
                            Ok,
                        )
                    })
                    .collect::<Result<_>>()?
            }
        };
        let out = if self.inplace && cache.is_contiguous() {
            cache.clone()
        } else {
            let out = ctx.output(0, cache.dtype(), cache.shape())?;
            out.assign(cache)?;
            out
        };
        crate::dispatch_all!(cache.dtype(), T => run::<T>(self, cache, upd, &starts, ax, &out)?);
        if self.inplace && !out.same_buffer(cache) {
            // A strided cache: the result goes back through its own layout.
            cache.assign(&out)?;
            return Ok(vec![cache.clone()]);
        }
        Ok(vec![out])
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
            op: Arc::new(TensorScatter {
                inplace: true,
                ..self.clone()
            }),
            inputs: vec![0, 1],
        }]
    }
    fn pure_twin(&self) -> Option<Arc<dyn Op>> {
        self.inplace.then(|| {
            Arc::new(TensorScatter {
                inplace: false,
                ..self.clone()
            }) as Arc<dyn Op>
        })
    }
    fn attrs(&self) -> Attrs {
        Attrs::new()
            .with("axis", self.axis)
            .with("circular", self.circular)
    }
}

pub fn register(r: &mut OpRegistry) {
    for inplace in [false, true] {
        let name = if inplace {
            "tensor_scatter_inplace"
        } else {
            "tensor_scatter"
        };
        r.register(name, move |a: &Attrs| {
            a.only(name, &["axis", "circular"])?;
            Ok(Arc::new(TensorScatter {
                axis: a.i64("axis")?.unwrap_or(-2),
                circular: a.bool("circular")?.unwrap_or(false),
                inplace,
            }) as Arc<dyn Op>)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_cause;
    use crate::ops::testutil::{op, run_all, run_vec, t};

    fn ts(name: &str, circular: bool) -> Arc<dyn Op> {
        op(name, Attrs::new().with("circular", circular))
    }

    /// A cache `[2, 4, 1]` (batch 2, 4 positions): batch 0 writes two
    /// updates at 1, batch 1 at 3, which wraps to 0 when circular.
    #[test]
    fn writes_each_batch_at_its_index_linear_or_circular() {
        let cache = || t(&[2, 4, 1], vec![0i64; 8]);
        let upd = || t(&[2, 2, 1], vec![1i64, 2, 3, 4]);
        let (_, v) = run_vec::<i64>(
            &*ts("tensor_scatter", true),
            &[cache(), upd(), t(&[2], vec![1i64, 3])],
        )
        .unwrap();
        assert_eq!(v, [0, 1, 2, 0, 4, 0, 0, 3]);
        let e = run_vec::<i64>(
            &*ts("tensor_scatter", false),
            &[cache(), upd(), t(&[2], vec![1i64, 3])],
        )
        .unwrap_err();
        assert_cause!(e, Index, "3");
        // No indices: both at 0.
        let (_, v) = run_vec::<i64>(&*ts("tensor_scatter", false), &[cache(), upd()]).unwrap();
        assert_eq!(v, [1, 2, 0, 0, 3, 4, 0, 0]);
    }

    /// Axis 2 of a 4-D cache with a trailing dim: every head of a batch
    /// uses that batch's index.
    #[test]
    fn every_head_of_a_batch_shares_its_index() {
        let cache = t(&[1, 2, 3, 2], vec![0.0f32; 12]);
        let upd = t(&[1, 2, 1, 2], vec![1.0f32, 2.0, 3.0, 4.0]);
        let (_, v) =
            run_vec::<f32>(&*ts("tensor_scatter", false), &[cache, upd, t(&[1], vec![2i64])]).unwrap();
        assert_eq!(v, [0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 3.0, 4.0]);
    }

    #[test]
    fn the_inplace_twin_writes_the_cache_and_declares_it() {
        let pure = ts("tensor_scatter", false);
        let twins = pure.inplace_variants();
        assert_eq!(twins[0].op.name(), "tensor_scatter_inplace");
        assert_eq!(twins[0].op.destroy_map(), vec![(0, 0)]);
        assert_eq!(twins[0].op.pure_twin().unwrap().name(), "tensor_scatter");
        let cache = t(&[1, 3, 1], vec![0.0f64; 3]);
        let out = run_all(&*twins[0].op, &[cache.clone(), t(&[1, 1, 1], vec![5.0f64])]).unwrap();
        assert!(out[0].same_buffer(&cache));
        assert_eq!(
            cache.to_array::<f64>().unwrap().as_slice().unwrap(),
            &[5.0, 0.0, 0.0]
        );
        // A bad index leaves the cache alone.
        let e = run_all(
            &*twins[0].op,
            &[cache.clone(), t(&[1, 1, 1], vec![7.0f64]), t(&[1], vec![-1i64])],
        );
        assert_cause!(e.unwrap_err(), Index);
        assert_eq!(
            cache.to_array::<f64>().unwrap().as_slice().unwrap(),
            &[5.0, 0.0, 0.0]
        );
    }

    #[test]
    fn shapes_and_axis_are_checked() {
        let e = run_all(
            &*ts("tensor_scatter", false),
            &[t(&[1, 2, 1], vec![0i64; 2]), t(&[1, 3, 1], vec![0i64; 3])],
        );
        assert_cause!(e.unwrap_err(), Shape, "update");
        let a0 = op("tensor_scatter", Attrs::new().with("axis", 0));
        let e = run_all(&*a0, &[t(&[2, 1], vec![0i64; 2]), t(&[1, 1], vec![0i64])]);
        assert_cause!(e.unwrap_err(), Shape, "batch");
    }
}
