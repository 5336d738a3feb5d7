//! The values a run holds right now, and which of them hold each buffer.
//!
//! The executor keeps this to free buffers and count live bytes; listeners
//! see it through [`crate::exec::OpEvent::live`], so that a check such as
//! "does this new output reuse a buffer something else still holds" is a
//! hash lookup by buffer id rather than a scan of every value.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use smallvec::SmallVec;

use crate::graph::VarId;
use crate::tensor::storage::BufferId;
use crate::tensor::Tensor;

/// Live values by variable, and their holders by buffer.
pub struct LiveValues {
    values: Vec<Option<Tensor>>,
    holders: HashMap<BufferId, Holders, BuildHasherDefault<IdHasher>>,
    bytes: usize,
    peak: usize,
}

/// The live variables on one buffer (most buffers have one or two, so
/// they stay inline: no allocation per op), and the buffer's size.
struct Holders {
    vars: SmallVec<[VarId; 2]>,
    bytes: usize,
}

/// Hashes a [`BufferId`] with one multiplication. Ids are unique counters
/// made in this process, not attacker-chosen keys, so the run-time cost of
/// the default SipHash (a lookup or two per value per op) buys nothing;
/// the multiplication spreads sequential ids into the high bits the table
/// probes with.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, id: u64) {
        self.0 = id.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

impl LiveValues {
    pub(crate) fn new(vars: usize) -> LiveValues {
        LiveValues {
            values: vec![None; vars],
            holders: HashMap::default(),
            bytes: 0,
            peak: 0,
        }
    }

    /// The live value of `v`.
    pub fn value(&self, v: VarId) -> Option<&Tensor> {
        self.values.get(v)?.as_ref()
    }

    /// The live variables whose values are views of buffer `id`.
    pub fn holders(&self, id: BufferId) -> &[VarId] {
        self.holders.get(&id).map_or(&[], |h| h.vars.as_slice())
    }

    /// Bytes of the distinct buffers live now.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The largest [`LiveValues::bytes`] so far.
    pub fn peak(&self) -> usize {
        self.peak
    }

    pub(crate) fn set(&mut self, v: VarId, t: Tensor) {
        if let Some(old) = self.values[v].take() {
            self.release(v, &old);
        }
        let e = self.holders.entry(t.buffer_id()).or_insert_with(|| Holders {
            vars: SmallVec::new(),
            bytes: t.storage().nbytes(),
        });
        if e.vars.is_empty() {
            self.bytes += e.bytes;
            self.peak = self.peak.max(self.bytes);
        }
        e.vars.push(v);
        self.values[v] = Some(t);
    }

    /// Takes `v`'s value out; with it, the buffer and its size when no live
    /// value holds that buffer any more.
    pub(crate) fn take(&mut self, v: VarId) -> Option<(Tensor, Option<(BufferId, usize)>)> {
        let t = self.values.get_mut(v)?.take()?;
        let freed = self.release(v, &t);
        Some((t, freed))
    }

    fn release(&mut self, v: VarId, t: &Tensor) -> Option<(BufferId, usize)> {
        let id = t.buffer_id();
        let e = self.holders.get_mut(&id)?;
        if let Some(k) = e.vars.iter().position(|&x| x == v) {
            e.vars.swap_remove(k);
        }
        if e.vars.is_empty() {
            let bytes = e.bytes;
            self.holders.remove(&id);
            self.bytes -= bytes;
            return Some((id, bytes));
        }
        None
    }
}
