//! DebugMode: runs a graph after the in-place pass beside a pure reference
//! run of the same graph, in lockstep, and explains every difference.
//!
//! ```text
//! graph ─┬─ in-place pass ─> in-place run (listeners, poisoned pool) ─┐
//!        └─ purify ────────> reference run (fresh buffers, private   ─┴─ compare each value
//!                            copies of every op's inputs and outputs)     as soon as both exist
//! ```
//!
//! The first node whose output differs while its inputs agreed is the root
//! cause; what it spoils downstream is counted, not listed. When the
//! in-place run diverges, bisection over the accepted rewrites names the one
//! that breaks it. Further checks re-run the graph in other valid orders,
//! with dirty pre-allocated outputs, and against finite differences.
//!
//! ```
//! use std::collections::HashMap;
//! use vigil_debugmode::{DebugConfig, DebugMode};
//! use vigil_engine::{DType, GraphBuilder, Tensor};
//!
//! let b = GraphBuilder::new("demo");
//! let x = b.input("x", DType::F32, &[4]);
//! let y = x.exp()?.neg()?.relu()?;
//! let graph = b.build(&[&y])?;
//! let feeds = HashMap::from([("x".to_string(), Tensor::from_vec(&[4], vec![0.5f32, -1.0, 2.0, 0.0])?)]);
//! let report = DebugMode::new(DebugConfig::default()).check(&graph, &feeds)?;
//! assert!(report.findings.is_empty());
//! assert_eq!(report.stats.rewrites, 2); // neg and relu ran in place
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

mod arbitrate;
mod bisect;
pub mod broken;
mod capture;
mod config;
mod digest;
mod error;
mod gradcheck;
mod guard;
mod layouts;
mod lockstep;
mod minimize;
mod mode;
pub mod opcheck;
mod orders;
mod prealloc;
mod reference_isolation;
mod report;
pub mod selftest;
mod threads;

pub use arbitrate::widen;
pub use config::{Check, DebugConfig, GradConfig, GradRules};
pub use error::DebugError;
pub use minimize::{minimize, Minimized};
pub use mode::DebugMode;
pub use opcheck::{opcheck, opcheck_with, OpcheckConfig, OpcheckReport};
pub use report::{DebugReport, DebugStats};
pub use vigil_findings::{Finding, Kind, Severity};
