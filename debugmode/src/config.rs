//! What DebugMode checks, and with which parameters. The defaults are the
//! documented ones (docs/debugmode.md).

use std::collections::BTreeSet;

use vigil_engine::compare::Tolerance;
use vigil_engine::DType;

use crate::error::DebugError;

/// One check DebugMode can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Check {
    /// The validation listeners on the in-place run.
    Listeners,
    /// The pure reference run, compared value by value.
    Lockstep,
    /// Bisection over the accepted rewrites when the in-place run diverges.
    Culprit,
    /// Poisoned fresh and released buffers, and read-after-destroy.
    Poison,
    /// Re-runs in other valid execution orders.
    Orders,
    /// Re-runs with dirty, oddly laid out pre-allocated outputs.
    Prealloc,
    /// Finite differences against `grad:<param>` outputs.
    Gradient,
    /// An f32 divergence is judged against the pure graph run in f64.
    Arbitrate,
    /// Each op called again with each input re-laid out (C, F, reversed,
    /// guarded by poison).
    Layouts,
    /// A run on a one-thread pool against one on a pool of several.
    Threads,
}

impl Check {
    pub const ALL: [Check; 10] = [
        Check::Listeners,
        Check::Lockstep,
        Check::Culprit,
        Check::Poison,
        Check::Orders,
        Check::Prealloc,
        Check::Gradient,
        Check::Arbitrate,
        Check::Layouts,
        Check::Threads,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Check::Listeners => "listeners",
            Check::Lockstep => "lockstep",
            Check::Culprit => "culprit",
            Check::Poison => "poison",
            Check::Orders => "orders",
            Check::Prealloc => "prealloc",
            Check::Gradient => "gradient",
            Check::Arbitrate => "arbitrate",
            Check::Layouts => "layouts",
            Check::Threads => "threads",
        }
    }

    pub fn names() -> Vec<&'static str> {
        Check::ALL.iter().map(|c| c.name()).collect()
    }

    pub fn parse(s: &str) -> Result<Check, DebugError> {
        Check::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| DebugError::UnknownCheck(s.to_string()))
    }
}

/// Finite-difference gradient check parameters (autodiff's gradcheck).
pub use vigil_autodiff::GradCheckConfig as GradConfig;

/// The autodiff (ops and gradient rules) the gradient check builds
/// gradients with.
#[derive(Clone, Default)]
pub struct GradRules(pub vigil_autodiff::Autodiff);

impl std::fmt::Debug for GradRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GradRules(..)")
    }
}

/// DebugMode's configuration.
#[derive(Clone, Debug)]
pub struct DebugConfig {
    pub checks: BTreeSet<Check>,
    /// Used where the in-place and pure kernels do different arithmetic.
    pub tolerance_f32: Tolerance,
    pub tolerance_f64: Tolerance,
    /// Extra valid orders to try, besides the reverse-most one.
    pub orders: usize,
    /// Seed of the random orders and directions.
    pub seed: u64,
    pub grad: GradConfig,
    /// Builds the gradients of a graph that has none as `grad:` outputs
    /// (the built-in ops and rules unless a user's are set).
    pub autodiff: GradRules,
    /// fp64 arbitration accepts an in-place f32 value whose RMSE to the
    /// f64 result is at most this times the pure f32 value's.
    pub arbitration_multiplier: f64,
    /// Threads of the several-thread pool of the `threads` check (at least
    /// 2, even on one core).
    pub threads: usize,
    /// The lockstep runs a fused elementwise chain of the in-place run
    /// and the same nodes of the reference as twin sweeps, tile by tile,
    /// comparing each node's tile in L1 (`vigil_engine::exec::Cursor::step_twin`),
    /// and steps node by node only where a tile differs. On by default;
    /// off, the lockstep steps node by node throughout (the same findings,
    /// at the cost of every value going through memory twice).
    pub sweeps: bool,
}

impl Default for DebugConfig {
    /// Every check but the costlier orders, pre-allocation and gradient
    /// checks, which are switched on by name. Arbitration costs nothing
    /// until an f32 value diverges.
    fn default() -> Self {
        DebugConfig {
            checks: [
                Check::Listeners,
                Check::Lockstep,
                Check::Culprit,
                Check::Poison,
                Check::Arbitrate,
            ]
            .into_iter()
            .collect(),
            tolerance_f32: Tolerance::new(1e-5, 1e-5),
            tolerance_f64: Tolerance::new(1e-5, 1e-8),
            orders: 3,
            seed: 0,
            grad: GradConfig::default(),
            autodiff: GradRules::default(),
            arbitration_multiplier: 2.0,
            threads: 2,
            sweeps: true,
        }
    }
}

impl DebugConfig {
    /// Every check on.
    pub fn all() -> DebugConfig {
        DebugConfig {
            checks: Check::ALL.into_iter().collect(),
            ..DebugConfig::default()
        }
    }

    /// Only the named checks (comma-separated names as `--checks` takes;
    /// `all` names every check).
    pub fn with_checks(mut self, names: &str) -> Result<DebugConfig, DebugError> {
        let mut checks = BTreeSet::new();
        for name in names.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if name == "all" {
                checks.extend(Check::ALL);
            } else {
                checks.insert(Check::parse(name)?);
            }
        }
        self.checks = checks;
        Ok(self)
    }

    pub fn has(&self, c: Check) -> bool {
        self.checks.contains(&c)
    }

    /// The tolerance for values of `dtype` (exact for integers and bools).
    pub fn tolerance(&self, dtype: DType) -> Tolerance {
        match dtype {
            DType::F32 => self.tolerance_f32,
            DType::F64 => self.tolerance_f64,
            DType::F16 | DType::BF16 => Tolerance::default_for(dtype),
            d if d.is_small_float() => Tolerance::default_for(d),
            _ => Tolerance::EXACT,
        }
    }
}
