//! Vigil's engine: tensors whose views share buffers, ops that declare their
//! views and destroys, graphs of such ops, the destroy handler that orders and
//! validates them, and an executor that emits hooks to listeners.

#![forbid(unsafe_code)]

/// Element types live in the tensor layer; `crate::dtype` is their short path.
pub use tensor::dtype;
pub mod error;
pub mod kernels;
pub mod ops;
pub mod tensor;

pub use dtype::{DType, Element, Float, Num, Scalar};
pub use error::{Error, FeedFault, NpyError, Result};
/// The f16 element type, for code outside the engine that names it.
pub use half::{bf16, f16};
/// The kernel layer's comparison and summary, at the paths the harness
/// crates name.
pub use kernels::{compare, summary};
pub use ops::{Arity, Attrs, InplaceVariant, Op, OpCtx, OpRegistry, TypeInfo, ViewKind};
pub use tensor::small;
pub use tensor::{IndexSpec, Layout, Tensor};
pub mod destroy;
pub mod exec;
pub mod graph;
pub mod inplace;
pub mod memory;
pub mod parallel;

pub use destroy::{DestroyHandler, Rule, Violation};
pub use exec::{
    At, Cursor, Executor, Feeds, Listener, OpEvent, Operation, Prepared, RunOptions, RunOutput, Snapshot,
    Step,
};
pub use graph::{Graph, GraphBuilder, Sym};
pub use tensor::buffer_pool::BufferPolicy;
