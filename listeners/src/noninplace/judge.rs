//! Judging one op: what each input looked like before, what changed after,
//! and the replays that say which elements changed.

use serde_json::{json, Value};
use vigil_engine::exec::OpEvent;
use vigil_engine::tensor::overlap::tensors_share_memory;
use vigil_engine::tensor::region::Region;
use vigil_engine::Tensor;

use super::message::{base_of, changed_elements, locate, part_name, scratch_message};
use super::{Before, NonInplaceStats, NonInplaceValidationListener, Remember, Replay, Snap};
use crate::diff::Diff;
use crate::finding::{at_op, hex, Finding, Kind};
use crate::hash::Part;
use crate::replay::replay_in_copy_mode;

impl NonInplaceValidationListener {
    pub(super) fn exempt(&self, ev: &OpEvent) -> bool {
        ev.node.op.exempt_from_inplace_check() || self.config.exempt_ops.contains(ev.op_name())
    }

    pub(super) fn reused(&mut self, bytes: usize) {
        self.stats.hashes_reused += 1;
        self.stats.bytes_not_rehashed += bytes as u64;
    }

    pub(super) fn take(&mut self, t: &Tensor, part: Part, use_cache: bool) -> vigil_engine::Result<Snap> {
        match self.config.mode {
            Remember::Hash => {
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
            Remember::Copy => {
                let v = part.bytes(t)?;
                self.stats.bytes_copied += v.len() as u64;
                Ok(Snap::Copy(v))
            }
        }
    }

    /// Whether the outside of `t` is checked under the cost rule.
    pub(super) fn check_outside(&self, t: &Tensor, distinct: usize) -> bool {
        self.config.thorough || t.data_size() <= distinct.saturating_mul(self.config.outside_factor)
    }

    pub(super) fn before(
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
        let deferrable = self.config.mode == Remember::Hash
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
                destroy_shares_buffer: false,
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
            destroy_shares_buffer: destroyed
                .iter()
                .any(|&d| ev.inputs.get(d).is_some_and(|x| x.same_buffer(t))),
        })
    }

    pub(super) fn details(&self, ev: &OpEvent, b: &Before, t: &Tensor) -> serde_json::Map<String, Value> {
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
    pub(super) fn judge(&mut self, ev: &OpEvent, b: Before) -> vigil_engine::Result<Vec<Finding>> {
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
        // Borrowed for writing, content as it was: scratch space restored.
        let restored = view_changed == Some(false) && !outside_changed;
        if restored && !unchanged_version && !b.may_change && !b.destroy_shares_buffer {
            let d = self.details(ev, &b, t);
            out.push(
                at_op(
                    Kind::SCRATCH_WRITE,
                    ev,
                    scratch_message(b.index, &var(), b.version, t.version()),
                )
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
    pub(super) fn describe(
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
    pub(super) fn run_replays(&mut self) {
        let Some(snap) = self.snapshot.take() else {
            self.to_replay.clear();
            return;
        };
        // Deferred findings the replay splits (view and outside both
        // changed).
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
                    // Borrowed for writing, and the content is as it was:
                    // scratch space, restored before the op returned.
                    count_failed(&mut self.stats, &r);
                    let f = &mut self.findings[r.idx];
                    let (before, after) = (
                        f.details["version_before"].as_u64().unwrap_or_default(),
                        f.details["version_after"].as_u64().unwrap_or_default(),
                    );
                    let var = f.details["var"].as_str().unwrap_or_default().to_string();
                    f.kind = Kind::SCRATCH_WRITE;
                    f.message =
                        scratch_message(input.unwrap_or_default(), &format!("'{var}'"), before, after);
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
        if extra.is_empty() {
            return;
        }
        let mut out = Vec::with_capacity(self.findings.len() + extra.len());
        for (i, f) in std::mem::take(&mut self.findings).into_iter().enumerate() {
            out.push(f);
            out.extend(extra.iter().filter(|(j, _)| *j == i).map(|(_, f)| f.clone()));
        }
        self.findings = out;
    }
}
