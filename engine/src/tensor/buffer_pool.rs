//! The one buffer pool that every op allocates from, so that repeated runs
//! reuse allocations instead of paying page faults on fresh memory.
//!
//! Buffers the pool handed out return here when their last view drops
//! (a tensor of a caller's own vector frees it). The pool keeps at most
//! [`MAX_POOLED_BYTES`] in at most [`MAX_RETURNED`] buffers, newest last,
//! and hands out the one most likely still in cache:
//! - the newest buffer of the exact length, if fewer than [`WARM_BYTES`]
//!   were handed out since it came back (no waste, and still warm);
//! - else the newest buffer at least as long and at most [`MAX_FIT`]
//!   times as long.
//!
//! A buffer is never cut: [`take`] hands out vectors at least as long as
//! asked, and the storage that holds one sees only its prefix (see
//! `storage::Buffer`). Cut buffers had to be grown back, writing their
//! tails: 2.4 MB of zeros a run on resnet18, whose stem output served the
//! next stage's planes and came back a quarter of its length.
//!
//! Matching exact lengths only, a model whose layers all differ in size
//! (efficientnet_b0) wrote every output into the buffer its layer used in
//! the previous run, long evicted: 14 MB a run of writes to cold memory,
//! with the buffers just freed by the layer before sitting unused.
//!
//! What a fresh buffer holds is a per-thread [`BufferPolicy`], set for the
//! span of one run (or one step of a run) with [`with_policy`]: reused
//! contents (fast), zeros, or a poison sentinel so that a kernel reading
//! memory it never wrote is caught.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::dtype::{DType, Element};
use crate::tensor::storage::AnyVec;

/// Upper bound of memory the pool holds on to.
pub const MAX_POOLED_BYTES: usize = 1 << 30;
/// Upper bound of buffers the pool holds on to; the oldest goes first. A
/// bound keeps the search for a buffer short.
pub const MAX_RETURNED: usize = 128;
/// A returned buffer counts as warm until this many bytes have been handed
/// out after it: an exact-length buffer then wins over a newer one that
/// fits. On efficientnet_b0 and resnet18, 4 and 16 MiB gave the same times.
pub const WARM_BYTES: u64 = 4 << 20;
/// A buffer serves lengths down to this fraction of its length: a stem's
/// output then serves the next stage's 4x smaller planes. Paired against
/// exact lengths only, efficientnet_b0 took 0.95x-0.97x of the time,
/// mobilenet_v3_small 0.93x-0.99x and resnet18 0.99x.
pub const MAX_FIT: usize = 4;
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

/// A buffer given back, waiting to be handed out again.
struct Returned {
    buf: AnyVec,
    dtype: DType,
    len: usize,
    /// Bytes it holds (its capacity), for the pool's bound.
    bytes: usize,
    /// The pool's handed-out byte count when it came back.
    at: u64,
}

/// Returned buffers, oldest first, and what they hold.
#[derive(Default)]
struct Pool {
    returned: Vec<Returned>,
    bytes: usize,
    /// Bytes handed out so far (pooled lengths only): the clock that says
    /// how long ago a buffer came back.
    handed: u64,
}

impl Pool {
    /// The buffer to hand out for `len` elements of `T`, if one is here:
    /// see the module's doc for which.
    fn pop<T: Element>(&mut self, len: usize) -> Option<Vec<T>> {
        let now = self.handed;
        self.handed += (len * T::DTYPE.size()) as u64;
        // Newest first: the first buffer that fits, unless a warm one of
        // the exact length follows. Buffers come back in clock order, so
        // the search stops at the first cold one once something fits.
        let mut pick = None;
        for (i, r) in self.returned.iter().enumerate().rev() {
            let warm = now - r.at < WARM_BYTES;
            if !warm && pick.is_some() {
                break;
            }
            if r.dtype != T::DTYPE || r.len < len || r.len / MAX_FIT > len {
                continue;
            }
            if r.len == len && (warm || pick.is_none()) {
                pick = Some(i);
                break;
            }
            pick = pick.or(Some(i));
        }
        let i = pick?;
        let r = self.returned.remove(i);
        self.bytes -= r.bytes;
        T::from_any(r.buf).ok()
    }

    /// Keeps `v` for later, unless the pool is full.
    fn push<T: Element>(&mut self, v: Vec<T>) {
        let len = v.len();
        let bytes = v.capacity() * T::DTYPE.size();
        if self.bytes + bytes > MAX_POOLED_BYTES {
            return;
        }
        if self.returned.len() >= MAX_RETURNED {
            let old = self.returned.remove(0);
            self.bytes -= old.bytes;
        }
        self.returned.push(Returned {
            buf: T::into_any(v),
            dtype: T::DTYPE,
            len,
            bytes,
            at: self.handed,
        });
        self.bytes += bytes;
    }
}

/// Whether buffers of `len` elements of `T` go through the pool.
fn pooled<T: Element>(len: usize) -> bool {
    len * T::DTYPE.size() >= MIN_POOLED_BYTES
}

fn pool() -> &'static Mutex<Pool> {
    static POOL: OnceLock<Mutex<Pool>> = OnceLock::new();
    POOL.get_or_init(Default::default)
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
        pooled_bytes: pool().lock().map(|p| p.bytes).unwrap_or(0),
    }
}

/// Drops every pooled buffer.
pub fn clear() {
    if let Ok(mut p) = pool().lock() {
        p.returned.clear();
        p.bytes = 0;
    }
}

fn pop<T: Element>(pool: &Mutex<Pool>, len: usize, policy: BufferPolicy) -> Option<Vec<T>> {
    if !pooled::<T>(len) || policy == BufferPolicy::Fresh {
        return None;
    }
    pool.lock().ok()?.pop(len)
}

/// A vector of at least `len` elements whose first `len` the policy
/// decides (the rest are stale): a pooled buffer is handed out whole.
pub fn take<T: Element>(len: usize) -> Vec<T> {
    take_from(pool(), len, policy())
}

/// A vector of at least `len` elements whose first `len` are the default
/// (zero / false), whatever the policy.
pub fn take_zeroed<T: Element>(len: usize) -> Vec<T> {
    let policy = match policy() {
        BufferPolicy::Fresh => BufferPolicy::Fresh,
        _ => BufferPolicy::Zero,
    };
    take_from(pool(), len, policy)
}

fn take_from<T: Element>(pool: &Mutex<Pool>, len: usize, policy: BufferPolicy) -> Vec<T> {
    let mut v = match pop::<T>(pool, len, policy) {
        Some(v) => {
            HITS.fetch_add(1, Ordering::Relaxed);
            v
        }
        None => {
            if pooled::<T>(len) {
                MISSES.fetch_add(1, Ordering::Relaxed);
            }
            // Fresh memory is already zero: no fill for `Zero`.
            return match policy {
                BufferPolicy::Poison => vec![T::POISON; len],
                _ => vec![T::default(); len],
            };
        }
    };
    match policy {
        BufferPolicy::Zero => fill(&mut v[..len], T::default()),
        BufferPolicy::Poison => fill(&mut v[..len], T::POISON),
        BufferPolicy::Reuse | BufferPolicy::Fresh => {}
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

/// Returns a vector to the pool, or frees it when the pool is full.
pub fn give<T: Element>(v: Vec<T>) {
    give_to(pool(), v)
}

fn give_to<T: Element>(pool: &Mutex<Pool>, v: Vec<T>) {
    if !pooled::<T>(v.capacity()) {
        return;
    }
    if let Ok(mut p) = pool.lock() {
        p.push(v);
    }
}

/// A kernel's temporary buffer from the pool, given back when dropped: a
/// kernel run many times then pays no page faults for its temporaries
/// (Winograd's 2 MiB per block cost 13% of a 3×3 conv in page faults when
/// allocated afresh). Its contents are whatever [`take`] gives: the kernel
/// writes before it reads.
pub struct Scratch<T: Element> {
    buf: Vec<T>,
    len: usize,
}

impl<T: Element> Scratch<T> {
    pub fn new(len: usize) -> Self {
        Scratch { buf: take(len), len }
    }
}

impl<T: Element> std::ops::Deref for Scratch<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.buf[..self.len]
    }
}

impl<T: Element> std::ops::DerefMut for Scratch<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.buf[..self.len]
    }
}

impl<T: Element> Drop for Scratch<T> {
    fn drop(&mut self) {
        give(std::mem::take(&mut self.buf));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool of the test's own: the process-wide one is shared with
    /// every test running at the same time.
    fn own() -> Mutex<Pool> {
        Mutex::new(Pool::default())
    }

    fn take_in<T: Element>(pool: &Mutex<Pool>, len: usize) -> Vec<T> {
        take_from(pool, len, policy())
    }

    #[test]
    fn policies_decide_what_a_reused_buffer_holds() {
        const N: usize = 7919;
        let pool = own();
        give_to(&pool, vec![3.0f32; N]);
        {
            let _g = with_policy(BufferPolicy::Poison);
            assert!(take_in::<f32>(&pool, N).iter().all(|x| x.is_nan()));
            assert!(take_in::<i32>(&pool, N).iter().all(|&x| x == 0x5A5A_5A5A));
            assert!(take_in::<bool>(&pool, N).iter().all(|&x| x));
        }
        give_to(&pool, vec![3.0f32; N]);
        {
            let _g = with_policy(BufferPolicy::Zero);
            assert!(take_in::<f32>(&pool, N).iter().all(|&x| x == 0.0));
        }
        give_to(&pool, vec![3.0f32; N]);
        {
            let _g = with_policy(BufferPolicy::Fresh);
            assert!(
                take_in::<f32>(&pool, N).iter().all(|&x| x == 0.0),
                "fresh memory, not the pooled buffer"
            );
        }
        assert_eq!(policy(), BufferPolicy::Reuse, "guards restore the policy");
        assert!(
            take_in::<f32>(&pool, N).iter().all(|&x| x == 3.0),
            "reuse hands out stale contents"
        );
    }

    #[test]
    fn buffers_under_a_page_skip_the_pool_but_follow_the_policy() {
        const N: usize = 13; // 52 bytes
        let pool = own();
        give_to(&pool, vec![3.0f32; N]);
        assert!(
            take_in::<f32>(&pool, N).iter().all(|&x| x == 0.0),
            "a small buffer is not pooled, so it comes back fresh"
        );
        let _g = with_policy(BufferPolicy::Poison);
        assert!(take_in::<f32>(&pool, N).iter().all(|x| x.is_nan()));
        assert!(take_in::<i64>(&pool, N).iter().all(|&x| x == i64::POISON));
    }

    #[test]
    fn a_warm_buffer_of_the_exact_length_wins_over_a_newer_one_that_fits() {
        let pool = own();
        let exact = vec![1.0f32; 4096];
        let (at, newer) = (exact.as_ptr(), vec![2.0f32; 5000]);
        give_to(&pool, exact);
        give_to(&pool, newer);
        let v = take_in::<f32>(&pool, 4096);
        assert_eq!((v.as_ptr(), v.len()), (at, 4096));
        assert!(v.iter().all(|&x| x == 1.0));
    }

    #[test]
    fn a_cold_exact_buffer_loses_to_the_newest_one_that_fits() {
        let pool = own();
        give_to(&pool, vec![1.0f32; 4096]);
        // Hand out more than `WARM_BYTES` after it: the exact buffer is
        // no longer likely in cache.
        drop(take_in::<u8>(&pool, WARM_BYTES as usize));
        let newer = vec![2.0f32; 6000];
        let at = newer.as_ptr();
        give_to(&pool, newer);
        let v = take_in::<f32>(&pool, 4096);
        assert_eq!((v.as_ptr(), v.len()), (at, 6000), "the newer buffer, whole");
        assert!(v.iter().all(|&x| x == 2.0));
        // The exact one is still there for the next request.
        assert!(take_in::<f32>(&pool, 4096).iter().all(|&x| x == 1.0));
    }

    #[test]
    fn a_buffer_serves_down_to_its_fit_and_comes_back_whole() {
        let pool = own();
        let v = vec![2.0f32; 4 * 5000];
        let at = v.as_ptr();
        give_to(&pool, v);
        // 20000 is more than `MAX_FIT` times 4000: a buffer that large
        // stays pooled.
        let small = take_in::<f32>(&pool, 4000);
        assert_ne!(small.as_ptr(), at);
        let v = {
            let _g = with_policy(BufferPolicy::Zero);
            take_in::<f32>(&pool, 5000)
        };
        assert_eq!((v.as_ptr(), v.len()), (at, 20000));
        assert!(
            v[..5000].iter().all(|&x| x == 0.0) && v[5000..].iter().all(|&x| x == 2.0),
            "the policy fills what was asked for, no more"
        );
        // Given back uncut, it serves its whole length again.
        give_to(&pool, v);
        let whole = take_in::<f32>(&pool, 20000);
        assert_eq!(whole.as_ptr(), at);
        // A buffer of another dtype never serves.
        give_to(&pool, vec![1i32; 5000]);
        assert!(take_in::<f32>(&pool, 5000).iter().all(|&x| x == 0.0));
    }

    #[test]
    fn the_pool_keeps_the_newest_buffers_up_to_its_bound() {
        let pool = own();
        for i in 0..MAX_RETURNED + 1 {
            give_to(&pool, vec![i as f32; 1024 + i]);
        }
        let p = pool.lock().unwrap();
        assert_eq!(p.returned.len(), MAX_RETURNED);
        assert_eq!(p.returned[0].len, 1025, "the oldest went first");
        let bytes: usize = p.returned.iter().map(|r| r.bytes).sum();
        assert_eq!(p.bytes, bytes);
    }
}
