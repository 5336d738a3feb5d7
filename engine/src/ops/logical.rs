//! Logical ops on bool tensors: `not(x)`, and `and`, `or`, `xor` with
//! numpy broadcasting.

use std::sync::Arc;

use crate::dtype::DType;
use crate::error::{dtype_err, Result};
use crate::ops::elementwise::{map1, zip2};
use crate::ops::typeinfo::{broadcast_concrete, broadcast_shapes};
use crate::ops::{check_arity, Arity, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// Which logical op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogicKind {
    Not,
    And,
    Or,
    Xor,
}

impl LogicKind {
    pub const ALL: [LogicKind; 4] = [LogicKind::Not, LogicKind::And, LogicKind::Or, LogicKind::Xor];

    pub fn name(self) -> &'static str {
        match self {
            LogicKind::Not => "not",
            LogicKind::And => "and",
            LogicKind::Or => "or",
            LogicKind::Xor => "xor",
        }
    }

    fn pair(self) -> fn(bool, bool) -> bool {
        match self {
            LogicKind::And => |a, b| a & b,
            LogicKind::Or => |a, b| a | b,
            _ => |a, b| a ^ b,
        }
    }
}

/// A logical op.
#[derive(Clone, Debug)]
pub struct Logical {
    pub kind: LogicKind,
}

impl Op for Logical {
    fn name(&self) -> &str {
        self.kind.name()
    }
    fn arity(&self) -> Arity {
        Arity::exactly(if self.kind == LogicKind::Not { 1 } else { 2 })
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        if let Some(t) = inputs.iter().find(|t| t.dtype != DType::Bool) {
            return dtype_err(format!(
                "op '{}' takes bool inputs, got {} (compare first)",
                self.name(),
                t.dtype
            ));
        }
        let shape = match inputs {
            [a, b] => broadcast_shapes(&a.shape, &b.shape)?,
            _ => inputs[0].shape.clone(),
        };
        Ok(vec![TypeInfo::new(DType::Bool, shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        if inputs.iter().any(|t| t.dtype() != DType::Bool) {
            return dtype_err(format!("op '{}' takes bool inputs", self.name()));
        }
        if let [a, b] = inputs {
            let out = ctx.output(0, DType::Bool, &broadcast_concrete(a.shape(), b.shape())?)?;
            zip2::<bool, bool, bool>(a, b, &out, self.kind.pair())?;
            return Ok(vec![out]);
        }
        let x = &inputs[0];
        let out = ctx.output(0, DType::Bool, x.shape())?;
        map1::<bool>(x, &out, |v| !v)?;
        Ok(vec![out])
    }
}

pub fn register(r: &mut OpRegistry) {
    for kind in LogicKind::ALL {
        r.register_op(Arc::new(Logical { kind }));
    }
}
