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
//! and which elements (a write of the values it already held gives no
//! finding, as a hash would). Inputs that share a buffer with a declared
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
//! [`Mode::Hash`] keeps no copies. [`Mode::Copy`] keeps copies of the inputs
//! and reports the first differing elements with old and new values. A
//! Hash-mode run can get the same details by replay: see
//! [`NonInplaceValidationListener::replay_from`] and
//! [`crate::replay_in_copy_mode`].

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use vigil_engine::exec::{At, Listener, OpEvent, SweepEvent, SweepWatch};
use vigil_engine::graph::Graph;
use vigil_engine::Tensor;

use crate::diff::Diff;
use crate::finding::{at_op, fmt_index, hex, unravel, Finding, Kind, Validator};
use crate::hash::{HashCache, Hashed, Part};
use crate::replay::{replay_in_copy_mode, Snapshot};
use vigil_engine::tensor::overlap::tensors_share_memory;
use vigil_engine::tensor::region::Region;

/// How inputs are remembered across an op.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// xxh3 hashes; no copies.
    #[default]
    Hash,
    /// Copies of the inputs; findings list the changed elements.
    Copy,
}

#[derive(Clone, Debug)]
pub struct NonInplaceConfig {
    pub mode: Mode,
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
            mode: Mode::Hash,
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

    pub fn mode(mut self, mode: Mode) -> Self {
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

    fn exempt(&self, ev: &OpEvent) -> bool {
        ev.node.op.exempt_from_inplace_check() || self.config.exempt_ops.contains(ev.op_name())
    }

    fn reused(&mut self, bytes: usize) {
        self.stats.hashes_reused += 1;
        self.stats.bytes_not_rehashed += bytes as u64;
    }

    fn take(&mut self, t: &Tensor, part: Part, use_cache: bool) -> vigil_engine::Result<Snap> {
        match self.config.mode {
            Mode::Hash => {
                if use_cache {
                    if let Some(h) = self.cache.get(t, part) {
                        self.reused(h.bytes);
                        return Ok(Snap::Hash(h));
                    }
                }
                let h = part.hash(t)?;
                self.stats.hashes_computed += 1;
                self.stats.bytes_hashed += h.bytes as u64;
                if self.config.reuse {
                    self.cache.put(t, part, h);
                }
                Ok(Snap::Hash(h))
            }
            Mode::Copy => {
                let v = part.bytes(t)?;
                self.stats.bytes_copied += v.len() as u64;
                Ok(Snap::Copy(v))
            }
        }
    }

    /// Whether the outside of `t` is checked under the cost rule.
    fn check_outside(&self, t: &Tensor, distinct: usize) -> bool {
        self.config.thorough || t.data_size() <= distinct.saturating_mul(self.config.outside_factor)
    }

    fn before(
        &mut self,
        ev: &OpEvent,
        i: usize,
        destroyed: &[usize],
        replayable: bool,
    ) -> vigil_engine::Result<Before> {
        let t = &ev.inputs[i];
        let declared = destroyed.contains(&i);
        let may_change = declared
            || destroyed.iter().any(|&d| {
                ev.inputs
                    .get(d)
                    .is_some_and(|x| tensors_share_memory(t, x).shares())
            });
        // Another declared destroyer of a different region of this buffer
        // changes our outside legitimately; we cannot tell its writes apart.
        let shared = destroyed.iter().any(|&d| {
            d != i
                && ev
                    .inputs
                    .get(d)
                    .is_some_and(|x| x.same_buffer(t) && x.layout() != t.layout())
        });
        // With a replay snapshot at hand, an input the op must not change
        // needs no hash: an unchanged version proves it untouched, and a
        // new one is judged by replaying the op in Copy mode. An input
        // sharing its buffer with a declared destroy is hashed as before:
        // that destroy bumps its version on every run.
        let deferrable = self.config.mode == Mode::Hash
            && self.config.reuse
            && replayable
            && self.snapshot.is_some()
            && !may_change
            && !destroyed
                .iter()
                .any(|&d| ev.inputs.get(d).is_some_and(|x| x.same_buffer(t)));
        if deferrable {
            self.stats.inputs_deferred += 1;
            return Ok(Before {
                index: i,
                declared,
                may_change,
                version: t.version(),
                view: None,
                outside: None,
                covers_buffer: false,
                deferred: true,
            });
        }
        let view = if may_change && self.config.reuse {
            self.stats.hashes_skipped += 2;
            None
        } else {
            Some(self.take(t, Part::View, self.config.reuse)?)
        };
        // A dense view with as many elements as its buffer reaches all of it.
        let region = Region::new(t.layout());
        let distinct = region.len();
        let covers_buffer = distinct == t.data_size() && region.is_dense();
        let outside = if covers_buffer {
            self.stats.outside_checked += 1;
            None
        } else if shared || !(self.config.guard_band || self.check_outside(t, distinct)) {
            self.stats.outside_skipped += 1;
            None
        } else if self.check_outside(t, distinct) {
            self.stats.outside_checked += 1;
            Some((Part::Outside, self.take(t, Part::Outside, self.config.reuse)?))
        } else {
            self.stats.guard_checked += 1;
            Some((Part::Guard, self.take(t, Part::Guard, self.config.reuse)?))
        };
        Ok(Before {
            index: i,
            declared,
            may_change,
            version: t.version(),
            view,
            outside,
            covers_buffer,
            deferred: false,
        })
    }

    fn details(&self, ev: &OpEvent, b: &Before, t: &Tensor) -> serde_json::Map<String, Value> {
        let var = ev
            .node
            .inputs
            .get(b.index)
            .map(|&v| ev.graph.var(v).name.clone())
            .unwrap_or_default();
        let mut m = serde_json::Map::new();
        m.insert("mode".into(), json!(self.config.mode));
        m.insert("input".into(), json!(b.index));
        m.insert("var".into(), json!(var));
        m.insert("version_before".into(), json!(b.version));
        m.insert("version_after".into(), json!(t.version()));
        m.insert("dtype".into(), json!(t.dtype()));
        m.insert("shape".into(), json!(t.shape()));
        m.insert("strides".into(), json!(t.strides()));
        m.insert("offset".into(), json!(t.offset()));
        m.insert("buffer_elements".into(), json!(t.data_size()));
        let full = b.covers_buffer || matches!(b.outside, Some((Part::Outside, _)));
        m.insert("outside_checked".into(), json!(full));
        if let Some((Part::Guard, _)) = &b.outside {
            m.insert("guard_band".into(), json!(crate::hash::guard_band(t)));
        }
        m
    }

    /// Compares one input before and after; returns its findings.
    fn judge(&mut self, ev: &OpEvent, b: Before) -> vigil_engine::Result<Vec<Finding>> {
        let t = &ev.inputs[b.index];
        let unchanged_version = t.version() == b.version;
        // Named once something is wrong: the label walks the view chain.
        let index = b.index;
        let var = || {
            ev.node
                .inputs
                .get(index)
                .map_or_else(|| "'?'".to_string(), |&v| crate::finding::var_label(ev.graph, v))
        };
        if b.deferred {
            if unchanged_version {
                return Ok(Vec::new());
            }
            // Provisional: the replay at operation end says what changed,
            // or drops it when nothing did.
            let mut d = self.details(ev, &b, t);
            d.insert("detected_by".into(), json!("version"));
            let message = format!(
                "input {} ({}) was written, but the op's destroy_map does not declare it",
                b.index,
                var()
            );
            return Ok(vec![at_op(Kind::DESTROYED_INPUT, ev, message)
                .with_input(b.index)
                .with_details(Value::Object(d))]);
        }
        let trust = self.config.reuse && unchanged_version;
        // `None`: not hashed (the op may change it); a new version then
        // means it was written.
        let view_changed = match &b.view {
            Some(v) if trust => {
                self.reused(v.bytes());
                Some(false)
            }
            Some(v) => Some(!v.same(&self.take(t, Part::View, self.config.reuse)?)),
            None => unchanged_version.then_some(false),
        };
        let outside_changed = match &b.outside {
            Some((_, o)) if trust => {
                self.reused(o.bytes());
                false
            }
            Some((part, o)) => !o.same(&self.take(t, *part, self.config.reuse)?),
            None => false,
        };
        let mut out = Vec::new();
        if let (Some(true), false, Some(view)) = (view_changed, b.may_change, &b.view) {
            let mut d = self.details(ev, &b, t);
            self.describe(&mut d, t, view, Part::View, "view")?;
            let mut message = format!(
                "input {} ({}) changed, but the op's destroy_map does not declare it",
                b.index,
                var()
            );
            // Copy mode (and a replay) knows what changed: say it.
            if let Some(what) = d.get("view").and_then(|v| changed_elements(v, t.shape())) {
                message.push_str(&format!(": {what}"));
            }
            out.push(
                at_op(Kind::DESTROYED_INPUT, ev, message)
                    .with_input(b.index)
                    .with_details(Value::Object(d)),
            );
        }
        if outside_changed {
            let mut d = self.details(ev, &b, t);
            if let Some((part, o)) = &b.outside {
                self.describe(&mut d, t, o, *part, "outside")?;
            }
            // null: the view was not hashed (the op may change it).
            d.insert("view_changed".into(), json!(view_changed));
            let mut message = format!(
                "the op wrote into the buffer of input {} ({}) outside the input's own elements",
                b.index,
                var()
            );
            if let Some(first) = d.get_mut("outside").and_then(|o| o.get_mut("first_changed")) {
                let base = base_of(ev, b.index, t);
                let place = locate(first, t, base.as_ref());
                message.push_str(&format!(": {place}"));
            }
            out.push(
                at_op(Kind::OUT_OF_VIEW_WRITE, ev, message)
                    .with_input(b.index)
                    .with_details(Value::Object(d)),
            );
        }
        if b.declared && unchanged_version && view_changed == Some(false) && !outside_changed {
            let d = self.details(ev, &b, t);
            out.push(
                at_op(
                    Kind::DECLARED_DESTROY_UNUSED,
                    ev,
                    format!(
                        "the op declares it destroys input {} ({}) but never wrote it",
                        b.index,
                        var()
                    ),
                )
                .with_input(b.index)
                .with_details(Value::Object(d)),
            );
        }
        Ok(out)
    }

    /// Adds hashes (Hash mode) or the element diff (Copy mode) of `part`;
    /// for a diff outside the view, also the first changed element
    /// (`first_changed`).
    fn describe(
        &self,
        d: &mut serde_json::Map<String, Value>,
        t: &Tensor,
        before: &Snap,
        part: Part,
        label: &str,
    ) -> vigil_engine::Result<()> {
        match before {
            Snap::Hash(h) => {
                let after = part.hash(t)?;
                d.insert(format!("{label}_hash_before"), json!(hex(h.hash)));
                d.insert(format!("{label}_hash_after"), json!(hex(after.hash)));
                d.insert(format!("{label}_bytes"), json!(h.bytes));
                d.insert(format!("{label}_part"), json!(part_name(part)));
            }
            Snap::Copy(old) => {
                let es = t.dtype().size();
                let mut diff = Diff::new(t.dtype());
                let new = part.bytes(t)?;
                let pairs = old.chunks_exact(es).zip(new.chunks_exact(es));
                if part == Part::View {
                    let region = Region::new(t.layout());
                    let offsets = region.offsets();
                    for (k, (o, n)) in pairs.enumerate() {
                        diff.note(
                            o,
                            n,
                            || json!({ "flat": region.flat_index(k), "offset": offsets[k] }),
                        );
                    }
                    d.insert(label.into(), diff.to_json());
                } else {
                    let offsets = part.ranges(t).into_iter().flat_map(|(a, b)| a..b);
                    for (off, (o, n)) in offsets.zip(pairs) {
                        diff.note(o, n, || json!({ "offset": off }));
                    }
                    let mut j = diff.to_json();
                    let first = j["first"].get(0).cloned();
                    if let (Value::Object(m), Some(first)) = (&mut j, first) {
                        m.insert("first_changed".into(), first);
                    }
                    j["part"] = json!(part_name(part));
                    d.insert(label.into(), j);
                }
            }
        }
        Ok(())
    }

    /// Replays the recorded Hash-mode detections on the snapshot, and
    /// judges the deferred inputs that were written.
    fn run_replays(&mut self) {
        let Some(snap) = self.snapshot.take() else {
            self.to_replay.clear();
            return;
        };
        // Deferred findings the replay drops (nothing changed) or splits
        // (view and outside both changed).
        let mut dropped = Vec::new();
        let mut extra: Vec<(usize, Finding)> = Vec::new();
        // Ops a confirmed deferred finding has moved from passed to failed.
        let mut counted = std::collections::HashSet::new();
        let mut count_failed = |stats: &mut NonInplaceStats, r: &Replay| {
            if !r.op_failed && counted.insert(r.pos) {
                stats.failed += 1;
                stats.passed = stats.passed.saturating_sub(1);
            }
        };
        for r in std::mem::take(&mut self.to_replay) {
            let Some(f) = self.findings.get(r.idx) else {
                continue;
            };
            let (kind, input) = (f.kind.clone(), f.input);
            let found = replay_in_copy_mode(snap.graph(), snap.feeds(), r.pos, &self.config);
            if r.deferred {
                self.stats.deferred_replayed += 1;
                let judged = match found {
                    Ok(found) => found
                        .into_iter()
                        .filter(|x| x.input == input)
                        .filter(|x| x.kind == Kind::DESTROYED_INPUT || x.kind == Kind::OUT_OF_VIEW_WRITE)
                        .collect::<Vec<_>>(),
                    Err(e) => {
                        // Keep the provisional finding: the write happened.
                        let f = &mut self.findings[r.idx];
                        if let Value::Object(m) = &mut f.details {
                            m.insert("replay".into(), json!({ "error": e.to_string() }));
                        }
                        count_failed(&mut self.stats, &r);
                        continue;
                    }
                };
                if judged.is_empty() {
                    // Written with the values it already held.
                    dropped.push(r.idx);
                    continue;
                }
                count_failed(&mut self.stats, &r);
                let base = self.findings[r.idx].clone();
                for (k, x) in judged.into_iter().enumerate() {
                    let mut f = base.clone();
                    f.kind = x.kind;
                    f.message = x.message;
                    if let Value::Object(m) = &mut f.details {
                        m.insert("replay".into(), x.details);
                    }
                    if k == 0 {
                        self.findings[r.idx] = f;
                    } else {
                        extra.push((r.idx, f));
                    }
                }
                continue;
            }
            let (replay, message) = match found {
                Ok(found) => match found.into_iter().find(|x| x.kind == kind && x.input == input) {
                    Some(x) => (x.details, Some(x.message)),
                    None => (
                        json!({ "error": "the replay did not reproduce the finding" }),
                        None,
                    ),
                },
                Err(e) => (json!({ "error": e.to_string() }), None),
            };
            let Some(f) = self.findings.get_mut(r.idx) else {
                continue;
            };
            // The replay knows where the write landed; the message says so.
            if let Some(m) = message.filter(|m| m.starts_with(&f.message) && m.len() > f.message.len()) {
                f.message = m;
            }
            if let Value::Object(m) = &mut f.details {
                m.insert("replay".into(), replay);
            }
        }
        if dropped.is_empty() && extra.is_empty() {
            return;
        }
        let mut out = Vec::with_capacity(self.findings.len() + extra.len());
        for (i, f) in std::mem::take(&mut self.findings).into_iter().enumerate() {
            if !dropped.contains(&i) {
                out.push(f);
            }
            out.extend(extra.iter().filter(|(j, _)| *j == i).map(|(_, f)| f.clone()));
        }
        self.findings = out;
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
                        if replayable && self.config.mode == Mode::Hash && self.snapshot.is_some() {
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

/// "59 of 128 elements changed, first at [0, 2]: 0.4 → 0.38", from a
/// view diff (`changed`, `first[0].flat`, `old`, `new`) of a view of
/// `shape`.
fn changed_elements(diff: &Value, shape: &[usize]) -> Option<String> {
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

fn part_name(part: Part) -> &'static str {
    match part {
        Part::View => "view",
        Part::Outside => "outside",
        Part::Guard => "guard_band",
    }
}

/// The variable whose buffer input `i` is a view of, and its shape, when
/// the graph knows it and it spans the whole buffer: element offsets are
/// then named as its indices.
fn base_of(ev: &OpEvent, i: usize, t: &Tensor) -> Option<(String, Vec<usize>)> {
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
fn locate(first: &mut Value, t: &Tensor, base: Option<&(String, Vec<usize>)>) -> String {
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

fn d_insert(v: &mut Value, key: &str, x: Value) {
    if let Value::Object(m) = v {
        m.insert(key.into(), x);
    }
}
