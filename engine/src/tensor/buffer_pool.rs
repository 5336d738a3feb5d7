//! The one buffer pool that every op allocates from, so that repeated runs
//! reuse allocations instead of paying page faults on fresh memory.
//!
//! Buffers return here when their last view drops. The pool keeps at most
//! [`MAX_POOLED_BYTES`] and a few buffers per (dtype, length).
//!
//! What a fresh buffer holds is a per-thread [`BufferPolicy`], set for the
//! span of one run (or one step of a run) with [`with_policy`]: reused
//! contents (fast), zeros, or a poison sentinel so that a kernel reading
//! memory it never wrote is caught.

use std::cell::Cell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::dtype::{DType, Element};
use crate::tensor::storage::AnyVec;

/// Upper bound of memory the pool holds on to.
pub const MAX_POOLED_BYTES: usize = 1 << 30;
const MAX_PER_SIZE: usize = 16;
/// Buffers below one page come from the allocator directly: its per-thread
/// caches serve them faster than the pool's lock and lookup, and they cost
/// no page faults to begin with.
pub const MIN_POOLED_BYTES: usize = 4096;

/// What [`take`] hands out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BufferPolicy {
    /// Pooled buffers with their stale contents (the fastest).
    #[default]
    Reuse,
    /// Every buffer zeroed.
    Zero,
    /// Every buffer filled with [`Element::POISON`].
    Poison,
    /// Never reuse a pooled buffer; fresh zeroed memory each time (the
    /// reference run of DebugMode, which must not share anything).
    Fresh,
}

thread_local! {
    static POLICY: Cell<BufferPolicy> = const { Cell::new(BufferPolicy::Reuse) };
}

/// The policy in force on this thread.
pub fn policy() -> BufferPolicy {
    POLICY.with(Cell::get)
}

/// Restores the previous policy when dropped.
pub struct PolicyGuard(BufferPolicy);

impl Drop for PolicyGuard {
    fn drop(&mut self) {
        POLICY.with(|p| p.set(self.0));
    }
}

/// Sets this thread's policy until the guard drops.
pub fn with_policy(policy: BufferPolicy) -> PolicyGuard {
    PolicyGuard(POLICY.with(|p| p.replace(policy)))
}

#[derive(Default)]
struct Free {
    lists: HashMap<(DType, usize), Vec<AnyVec>, BuildHasherDefault<KeyHasher>>,
    bytes: usize,
}

/// Hashes a free-list key with a multiply per word: keys are lengths and
/// dtypes chosen by graphs, not adversaries, and SipHash showed in the
/// per-op cost of tiny graphs.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
}

/// Whether buffers of `len` elements of `T` go through the pool.
fn pooled<T: Element>(len: usize) -> bool {
    len * T::DTYPE.size() >= MIN_POOLED_BYTES
}

fn free() -> &'static Mutex<Free> {
    static FREE: OnceLock<Mutex<Free>> = OnceLock::new();
    FREE.get_or_init(Default::default)
}

static HITS: AtomicU64 = AtomicU64::new(0);
static MISSES: AtomicU64 = AtomicU64::new(0);

/// Counters of the pool, for benches and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferPoolStats {
    pub hits: u64,
    /// Buffers of a pooled size (at least [`MIN_POOLED_BYTES`]) the pool
    /// could not supply: each is fresh memory, with its page faults.
    pub misses: u64,
    pub pooled_bytes: usize,
}

pub fn stats() -> BufferPoolStats {
    BufferPoolStats {
        hits: HITS.load(Ordering::Relaxed),
        misses: MISSES.load(Ordering::Relaxed),
        pooled_bytes: free().lock().map(|f| f.bytes).unwrap_or(0),
    }
}

/// Drops every pooled buffer.
pub fn clear() {
    if let Ok(mut f) = free().lock() {
        f.lists.clear();
        f.bytes = 0;
    }
}

fn pop<T: Element>(len: usize) -> Option<Vec<T>> {
    if !pooled::<T>(len) || policy() == BufferPolicy::Fresh {
        return None;
    }
    let mut f = free().lock().ok()?;
    let v = f.lists.get_mut(&(T::DTYPE, len))?.pop()?;
    f.bytes -= len * T::DTYPE.size();
    drop(f);
    T::from_any(v).ok()
}

/// A vector of `len` elements whose contents the policy decides.
pub fn take<T: Element>(len: usize) -> Vec<T> {
    let policy = policy();
    let mut v = match pop::<T>(len) {
        Some(v) => {
            HITS.fetch_add(1, Ordering::Relaxed);
            if policy == BufferPolicy::Zero {
                let mut v = v;
                fill(&mut v, T::default());
                return v;
            }
            v
        }
        None => {
            if pooled::<T>(len) {
                MISSES.fetch_add(1, Ordering::Relaxed);
            }
            vec![T::default(); len]
        }
    };
    if policy == BufferPolicy::Poison {
        fill(&mut v, T::POISON);
    }
    v
}

/// `v.fill(x)`, split across the rayon pool for long vectors (zeroing and
/// poisoning are a memory-bound pass over every byte, as large as a kernel's).
fn fill<T: Element>(v: &mut [T], x: T) {
    use rayon::prelude::*;
    if !crate::parallel::split(v.len()) {
        return v.fill(x);
    }
    v.par_chunks_mut(crate::parallel::PASS_CHUNK)
        .for_each(|c| c.fill(x));
}

/// A vector of `len` default (zero / false) elements.
pub fn take_zeroed<T: Element>(len: usize) -> Vec<T> {
    match pop::<T>(len) {
        Some(mut v) => {
            HITS.fetch_add(1, Ordering::Relaxed);
            fill(&mut v, T::default());
            v
        }
        None => {
            if pooled::<T>(len) {
                MISSES.fetch_add(1, Ordering::Relaxed);
            }
            vec![T::default(); len]
        }
    }
}

/// Returns a vector to the pool, or frees it when the pool is full.
pub fn give<T: Element>(v: Vec<T>) {
    let len = v.len();
    let bytes = len * T::DTYPE.size();
    if !pooled::<T>(len) || bytes > MAX_POOLED_BYTES {
        return;
    }
    let Ok(mut f) = free().lock() else { return };
    if f.bytes + bytes > MAX_POOLED_BYTES {
        return;
    }
    let list = f.lists.entry((T::DTYPE, len)).or_default();
    if list.len() >= MAX_PER_SIZE {
        return;
    }
    list.push(T::into_any(v));
    f.bytes += bytes;
}

/// A kernel's temporary buffer from the pool, given back when dropped: a
/// kernel run many times then pays no page faults for its temporaries
/// (Winograd's 2 MiB per block cost 13% of a 3×3 conv in page faults when
/// allocated afresh). Its contents are whatever [`take`] gives: the kernel
/// writes before it reads.
pub struct Scratch<T: Element>(Vec<T>);

impl<T: Element> Scratch<T> {
    pub fn new(len: usize) -> Self {
        Scratch(take(len))
    }
}

impl<T: Element> std::ops::Deref for Scratch<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T: Element> std::ops::DerefMut for Scratch<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.0
    }
}

impl<T: Element> Drop for Scratch<T> {
    fn drop(&mut self) {
        give(std::mem::take(&mut self.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_decide_what_a_reused_buffer_holds() {
        // A distinctive length, so other tests' buffers are not involved.
        const N: usize = 7919;
        give(vec![3.0f32; N]);
        {
            let _g = with_policy(BufferPolicy::Poison);
            assert!(take::<f32>(N).iter().all(|x| x.is_nan()));
            assert!(take::<i32>(N).iter().all(|&x| x == 0x5A5A_5A5A));
            assert!(take::<bool>(N).iter().all(|&x| x));
        }
        give(vec![3.0f32; N]);
        {
            let _g = with_policy(BufferPolicy::Zero);
            assert!(take::<f32>(N).iter().all(|&x| x == 0.0));
        }
        give(vec![3.0f32; N]);
        {
            let _g = with_policy(BufferPolicy::Fresh);
            assert!(
                take::<f32>(N).iter().all(|&x| x == 0.0),
                "fresh memory, not the pooled buffer"
            );
        }
        assert_eq!(policy(), BufferPolicy::Reuse, "guards restore the policy");
        assert!(
            take::<f32>(N).iter().all(|&x| x == 3.0),
            "reuse hands out stale contents"
        );
    }

    #[test]
    fn buffers_under_a_page_skip_the_pool_but_follow_the_policy() {
        const N: usize = 13; // 52 bytes
        give(vec![3.0f32; N]);
        assert!(
            take::<f32>(N).iter().all(|&x| x == 0.0),
            "a small buffer is not pooled, so it comes back fresh"
        );
        let _g = with_policy(BufferPolicy::Poison);
        assert!(take::<f32>(N).iter().all(|x| x.is_nan()));
        assert!(take::<i64>(N).iter().all(|&x| x == i64::POISON));
    }
}
