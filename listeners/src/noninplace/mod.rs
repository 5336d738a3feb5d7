//! The non-in-place validation listener: an op may change only the inputs
//! its destroy_map declares, and only their own elements.
//!
//! Before each op every input is hashed twice with xxh3: over the view's own
//! elements (logical order) and over the rest of its buffer (the *outside*:
//! the elements the view does not reach). After the op both are hashed
//! again. The two parts partition the buffer, so a whole-buffer hash is never
//! needed and nothing is ambiguous: a changed view hash means the input was
//! changed (`destroyed_input` unless declared), a changed outside hash means
//! something wrote past the view (`out_of_view_write`, reported even for
//! declared destroyers), whatever the other hash did.
//!
//! # Cost
//!
//! The view hash costs the view's size. The outside hash costs the buffer's
//! size, which for a small view of a huge buffer would dwarf it; so the
//! whole outside is hashed only when the buffer holds at most
//! [`NonInplaceConfig::outside_factor`] (K, default 4) times the view's
//! distinct elements. [`NonInplaceConfig::thorough`] hashes the outside
//! always.
//!
//! Otherwise the *guard band* is hashed instead: the gaps inside the view's
//! span (the elements a strided view skips) and a band on each side of the
//! span, one innermost run or the largest stride wide (at most 16 KiB).
//! Off-by-one and wrong-stride stores land there, next to the view; a
//! store far away in a large buffer goes unseen unless `thorough` is set.
//! The band costs at most twice 16 KiB plus the span, so the work stays
//! proportional to what the view reaches.
//!
//! # Reuse
//!
//! Every mutable borrow of a buffer (`Tensor::write`, `set_at`,
//! `Buffer::borrow_mut`) bumps its version, so safe code cannot write
//! without it. A hash taken at (buffer id, version, layout) is reused while
//! the three stay the same: after an op that did not write, and by the next
//! op reading the same value. The view of an input the op may change (it
//! is declared destroyed, or shares memory with one that is) is not hashed
//! at all: its change is allowed, and a declared destroy that never wrote
//! shows as an unchanged version. A chain of in-place ops over dense
//! buffers so costs no hashing. Turn [`NonInplaceConfig::reuse`] off to
//! trust no version and hash every time.
//!
//! # Deferred checks
//!
//! With a replay snapshot at hand ([`NonInplaceValidationListener::replay_on`],
//! [`NonInplaceValidationListener::replay_from`]; validate and debug modes
//! always have one), an input the op must not change is not hashed at all:
//! its buffer's version before and after is the whole check on a clean run.
//! When the version moved, the op is replayed in Copy mode on the snapshot
//! at operation end, which says whether the view or the outside changed
//! and which elements; a write that leaves the values as they were (an op
//! computing in its input and restoring it) is `scratch_write`, as with
//! hashing, where the view hash stays but the version moved. Inputs that share a buffer with a declared
//! destroy are still hashed: that destroy moves their version on every run.
//! Like reuse, this trusts versions, so it is on only with reuse.
//!
//! # Sweeps
//!
//! Nodes that run as one fused sweep (`vigil_engine::exec::SweptOutput`)
//! are counted in [`NonInplaceStats::ops_swept`], not hashed: a sweep
//! reads its nodes' other operands through shared borrows of their
//! buffers, refused while any write is under way, and writes only the
//! swept value's own elements, so neither finding can arise there. Their
//! op kernels run node by node wherever a run does not sweep, and are
//! checked there.
//!
//! # Modes
//!
//! [`Remember::Hash`] keeps no copies. [`Remember::Copy`] keeps copies of the inputs
//! and reports the first differing elements with old and new values. A
//! Hash-mode run can get the same details by replay: see
//! [`NonInplaceValidationListener::replay_from`] and
//! [`crate::replay_in_copy_mode`].

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use vigil_engine::exec::{At, Listener, OpEvent, SweepEvent, SweepWatch};
use vigil_engine::graph::Graph;
use vigil_engine::Tensor;

use crate::finding::{Finding, Kind, Validator};
use crate::hash::{HashCache, Hashed, Part};
use crate::replay::Snapshot;

mod judge;
mod message;

/// How inputs are remembered across an op.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Remember {
    /// xxh3 hashes; no copies.
    #[default]
    Hash,
    /// Copies of the inputs; findings list the changed elements.
    Copy,
}

#[derive(Clone, Debug)]
pub struct NonInplaceConfig {
    pub mode: Remember,
    /// Check the outside of every input, however large its buffer.
    pub thorough: bool,
    /// K: check the outside when the buffer has at most K times the view's
    /// distinct elements.
    pub outside_factor: usize,
    /// Hash the guard band when the whole outside is not hashed. On by
    /// default; off only to measure what it costs.
    pub guard_band: bool,
    /// Reuse hashes while buffer id, version and layout are unchanged.
    pub reuse: bool,
    /// Ops not checked, besides those exempt by design (`create_view`).
    pub exempt_ops: BTreeSet<String>,
}

impl Default for NonInplaceConfig {
    fn default() -> Self {
        NonInplaceConfig {
            mode: Remember::Hash,
            thorough: false,
            outside_factor: 4,
            guard_band: true,
            reuse: true,
            exempt_ops: BTreeSet::new(),
        }
    }
}

/// What the listener did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NonInplaceStats {
    pub ops_checked: usize,
    /// Nodes that ran inside fused sweeps: not hashed (see the module
    /// documentation).
    pub ops_swept: usize,
    pub ops_exempt: usize,
    /// Checked ops with no error finding.
    pub passed: usize,
    /// Checked ops with at least one error finding.
    pub failed: usize,
    pub inputs_checked: usize,
    /// Inputs whose whole outside was checked.
    pub outside_checked: usize,
    /// Inputs whose outside was checked in the guard band only (the buffer
    /// is larger than K views).
    pub guard_checked: usize,
    /// Inputs whose outside was not checked at all (another declared
    /// destroyer writes elsewhere in the same buffer).
    pub outside_skipped: usize,
    pub hashes_computed: usize,
    pub bytes_hashed: u64,
    /// Hashes (or copies) taken over instead of recomputed.
    pub hashes_reused: usize,
    pub bytes_not_rehashed: u64,
    /// Hashes not needed: views of inputs the op may change, before and
    /// after (see the module documentation).
    pub hashes_skipped: usize,
    /// Inputs not hashed at all because a replay snapshot is at hand: an
    /// unchanged version proves them untouched, and a changed one is
    /// judged by the replay (see "Deferred checks" in the module docs).
    pub inputs_deferred: usize,
    /// Deferred inputs whose version changed, replayed to judge them.
    pub deferred_replayed: usize,
    pub bytes_copied: u64,
    /// Inputs that could not be read (left unchecked).
    pub errors: usize,
}

/// An input as remembered before the op.
enum Snap {
    Hash(Hashed),
    /// View elements in walk order, or outside elements in offset order.
    Copy(Vec<u8>),
}

impl Snap {
    fn bytes(&self) -> usize {
        match self {
            Snap::Hash(h) => h.bytes,
            Snap::Copy(v) => v.len(),
        }
    }

    fn same(&self, other: &Snap) -> bool {
        match (self, other) {
            (Snap::Hash(a), Snap::Hash(b)) => a.hash == b.hash,
            (Snap::Copy(a), Snap::Copy(b)) => a == b,
            _ => false,
        }
    }
}

struct Before {
    index: usize,
    /// In the destroy_map.
    declared: bool,
    /// Declared, or shares memory with a declared input, so its elements
    /// may change.
    may_change: bool,
    version: u64,
    /// `None` for an input the op may change while versions are trusted:
    /// its view is allowed to change, and a declared destroy that never
    /// wrote shows as an unchanged version, so hashing it would be wasted.
    view: Option<Snap>,
    /// The outside or its guard band; `None` when not checked, or when the
    /// view covers the whole buffer.
    outside: Option<(Part, Snap)>,
    /// The view reaches every element of its buffer: nothing outside.
    covers_buffer: bool,
    /// Not hashed: judged by version, and by a replay if it was written.
    deferred: bool,
    /// A declared destroy writes the same buffer, so its version moves.
    destroy_shares_buffer: bool,
}

/// A finding to replay: its index, the op's position in the order, and
/// whether it is a deferred input's provisional finding.
struct Replay {
    idx: usize,
    pos: usize,
    deferred: bool,
    /// The op was already counted as failed by another finding.
    op_failed: bool,
}

/// The op between `pre_op` and `post_op`.
struct Pending {
    node_id: usize,
    inputs: Vec<Before>,
}

/// Checks that ops change only what their destroy_map declares. See the
/// module documentation for the scheme.
pub struct NonInplaceValidationListener {
    config: NonInplaceConfig,
    stats: NonInplaceStats,
    findings: Vec<Finding>,
    cache: HashCache,
    pending: Option<Pending>,
    snapshot: Option<Snapshot>,
    /// Findings to replay at operation end.
    to_replay: Vec<Replay>,
}

impl Default for NonInplaceValidationListener {
    fn default() -> Self {
        Self::new()
    }
}

impl NonInplaceValidationListener {
    /// Hash mode, K = 4, reuse on.
    pub fn new() -> Self {
        Self::with_config(NonInplaceConfig::default())
    }

    pub fn with_config(config: NonInplaceConfig) -> Self {
        NonInplaceValidationListener {
            config,
            stats: NonInplaceStats::default(),
            findings: Vec::new(),
            cache: HashCache::default(),
            pending: None,
            snapshot: None,
            to_replay: Vec::new(),
        }
    }

    pub fn mode(mut self, mode: Remember) -> Self {
        self.config.mode = mode;
        self
    }

    pub fn thorough(mut self, on: bool) -> Self {
        self.config.thorough = on;
        self
    }

    pub fn outside_factor(mut self, k: usize) -> Self {
        self.config.outside_factor = k;
        self
    }

    pub fn guard_band(mut self, on: bool) -> Self {
        self.config.guard_band = on;
        self
    }

    pub fn reuse(mut self, on: bool) -> Self {
        self.config.reuse = on;
        self
    }

    pub fn exempt_op(mut self, name: &str) -> Self {
        self.config.exempt_ops.insert(name.to_string());
        self
    }

    pub fn config(&self) -> &NonInplaceConfig {
        &self.config
    }

    pub fn stats(&self) -> &NonInplaceStats {
        &self.stats
    }

    /// Snapshots `graph`'s values and `feeds` (deep copies) for the run
    /// that follows. When that run ends, every Hash-mode `destroyed_input`
    /// or `out_of_view_write` is replayed in Copy mode on the snapshot and
    /// the element diff lands in the finding's `details.replay`. Call
    /// before each run that should have replays; the snapshot is used once.
    pub fn replay_from(
        &mut self,
        graph: &Graph,
        feeds: &HashMap<String, Tensor>,
    ) -> vigil_engine::Result<()> {
        self.snapshot = Some(Snapshot::take(graph, feeds)?);
        Ok(())
    }

    /// Like [`NonInplaceValidationListener::replay_from`], with a snapshot
    /// the caller already holds (DebugMode shares its untouched originals).
    pub fn replay_on(mut self, snapshot: Snapshot) -> Self {
        self.snapshot = Some(snapshot);
        self
    }
}

impl Listener for NonInplaceValidationListener {
    fn watches_sweeps(&self) -> SweepWatch {
        SweepWatch::Edges
    }

    fn post_sweep(&mut self, _at: &At, ev: &SweepEvent) {
        self.stats.ops_swept += ev.nodes.len();
    }

    fn operation_end(&mut self, _at: &At, _graph: &Graph) {
        if !self.to_replay.is_empty() || self.snapshot.is_some() {
            self.run_replays();
        }
    }

    fn pre_op(&mut self, at: &At, ev: &OpEvent) {
        self.pending = None;
        if self.exempt(ev) {
            self.stats.ops_exempt += 1;
            return;
        }
        let destroyed = ev.destroyed_inputs();
        let mut inputs = Vec::with_capacity(ev.inputs.len());
        for i in 0..ev.inputs.len() {
            match self.before(ev, i, &destroyed, at.node_index.is_some()) {
                Ok(b) => inputs.push(b),
                Err(e) => {
                    self.stats.errors += 1;
                    tracing::warn!(node = %ev.node.name, input = i, "non-in-place check skipped: {e}");
                }
            }
        }
        self.pending = Some(Pending {
            node_id: ev.node_id,
            inputs,
        });
    }

    fn post_op(&mut self, at: &At, ev: &OpEvent) {
        let Some(p) = self.pending.take().filter(|p| p.node_id == ev.node_id) else {
            return;
        };
        self.stats.ops_checked += 1;
        let mut failed = false;
        let first_replay = self.to_replay.len();
        for b in p.inputs {
            self.stats.inputs_checked += 1;
            let index = b.index;
            let deferred = b.deferred;
            match self.judge(ev, b) {
                Ok(found) => {
                    for f in found {
                        // A deferred input's finding fails the op once the
                        // replay confirms it.
                        failed |= f.is_error() && !deferred;
                        let replayable = f.kind == Kind::DESTROYED_INPUT || f.kind == Kind::OUT_OF_VIEW_WRITE;
                        if replayable && self.config.mode == Remember::Hash && self.snapshot.is_some() {
                            if let Some(pos) = at.node_index {
                                self.to_replay.push(Replay {
                                    idx: self.findings.len(),
                                    pos,
                                    deferred,
                                    op_failed: false,
                                });
                            }
                        }
                        self.findings.push(f);
                    }
                }
                Err(e) => {
                    self.stats.errors += 1;
                    tracing::warn!(node = %ev.node.name, input = index, "non-in-place check skipped: {e}");
                }
            }
        }
        for r in &mut self.to_replay[first_replay..] {
            r.op_failed = failed;
        }
        if failed {
            self.stats.failed += 1;
        } else {
            self.stats.passed += 1;
        }
    }
}

impl Validator for NonInplaceValidationListener {
    fn findings(&self) -> &[Finding] {
        &self.findings
    }

    fn take_findings(&mut self) -> Vec<Finding> {
        std::mem::take(&mut self.findings)
    }
}
