//! xxh3 hashes of a tensor's own elements and of the rest of its buffer.
//!
//! XXH3-64 (seed 0) from `twox-hash`, which picks its AVX2 kernel at run
//! time when the CPU has it (SSE2 otherwise), so a portable build hashes at
//! AVX2 speed; the values are the reference XXH3 values.
//!
//! Why a 64-bit non-cryptographic hash cannot hide a change in practice: the
//! listener compares the hash of the same bytes before and after one op.
//! A change goes unseen only if the changed bytes collide with the old ones.
//! Tensors are not adversarial inputs, and XXH3 passes SMHasher's
//! avalanche and collision tests, so for a given change the chance is about
//! 2^-64 (5.4e-20): a CI fleet running a billion op checks a day would
//! expect one missed change every ~5e10 years.
//!
//! A view's hash covers its distinct elements in logical order, so it equals
//! the hash of a contiguous copy of the view (broadcast axes are walked once).
//! A contiguous view hashes its byte slice in one call; any other view is fed
//! through the streaming hasher in runs, small runs gathered into a chunk.
//!
//! The *outside* hash covers every buffer element the view does not reach,
//! in offset order. View and outside partition the buffer, so the pair is a
//! whole-buffer hash that also says *where* a change happened.

use std::collections::HashMap;

use std::hash::Hasher;
use vigil_engine::tensor::storage::BufferId;
use vigil_engine::{Layout, Result, Tensor};

use twox_hash::XxHash3_64;

use vigil_engine::tensor::region::{Region, Sink};

/// A hash and how many bytes it covered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hashed {
    pub hash: u64,
    pub bytes: usize,
}

/// Runs at least this long go to the hasher directly; shorter ones are
/// gathered first (one `update` per 4-byte element would dominate).
const DIRECT: usize = 4096;
const CHUNK: usize = 64 * 1024;

/// A streaming xxh3 hasher with a gather buffer for short runs.
struct HashSink {
    h: XxHash3_64,
    buf: Vec<u8>,
    bytes: usize,
}

impl HashSink {
    fn new() -> HashSink {
        HashSink {
            h: XxHash3_64::with_seed(0),
            buf: Vec::with_capacity(CHUNK),
            bytes: 0,
        }
    }

    fn finish(mut self) -> Hashed {
        self.h.write(&self.buf);
        Hashed {
            hash: self.h.finish(),
            bytes: self.bytes,
        }
    }
}

impl Sink for HashSink {
    fn push_strided(&mut self, data: &[u8], first: isize, n: usize, stride: isize, es: usize) {
        // In pieces that keep the gather buffer near one chunk.
        let per = (CHUNK / es).max(1);
        let mut done = 0;
        while done < n {
            let k = per.min(n - done);
            vigil_engine::tensor::region::gather(
                &mut self.buf,
                data,
                first + done as isize * stride,
                k,
                stride,
                es,
            );
            self.bytes += k * es;
            done += k;
            if self.buf.len() >= CHUNK {
                self.h.write(&self.buf);
                self.buf.clear();
            }
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.bytes += bytes.len();
        if bytes.len() >= DIRECT {
            self.h.write(&self.buf);
            self.buf.clear();
            self.h.write(bytes);
        } else {
            self.buf.extend_from_slice(bytes);
            if self.buf.len() >= CHUNK {
                self.h.write(&self.buf);
                self.buf.clear();
            }
        }
    }
}

fn layout_err(t: &Tensor) -> vigil_engine::Error {
    vigil_engine::Error::Op(format!(
        "layout {:?} does not fit its buffer of {} elements",
        t.layout(),
        t.data_size()
    ))
}

/// Hash of the view's own elements in logical order.
pub fn view_hash(t: &Tensor) -> Result<Hashed> {
    let r = Region::new(t.layout());
    let es = t.dtype().size();
    if !r.fits(t.data_size()) {
        return Err(layout_err(t));
    }
    t.storage().with_bytes(|data| match r.contiguous() {
        Some((start, n)) => {
            let bytes = &data[start * es..(start + n) * es];
            Hashed {
                hash: XxHash3_64::oneshot(bytes),
                bytes: bytes.len(),
            }
        }
        None => {
            let mut s = HashSink::new();
            r.feed_view(data, es, &mut s);
            s.finish()
        }
    })
}

/// Hash of the buffer elements the view does not reach, in offset order.
pub fn outside_hash(t: &Tensor) -> Result<Hashed> {
    outside_part_hash(t, None)
}

/// Hash of the view's guard band: the gaps inside its span and
/// [`guard_band`] elements on each side, in offset order.
pub fn guard_hash(t: &Tensor) -> Result<Hashed> {
    outside_part_hash(t, Some(guard_band(t)))
}

/// Elements on each side of `t`'s span that its guard band covers.
pub fn guard_band(t: &Tensor) -> usize {
    Region::new(t.layout()).band(t.dtype().size())
}

fn outside_part_hash(t: &Tensor, band: Option<usize>) -> Result<Hashed> {
    let r = Region::new(t.layout());
    let es = t.dtype().size();
    if !r.fits(t.data_size()) {
        return Err(layout_err(t));
    }
    t.storage().with_bytes(|data| {
        let mut s = HashSink::new();
        r.feed_outside(data, es, band, &mut s);
        s.finish()
    })
}

/// Hash of the whole underlying buffer.
pub fn buffer_hash(t: &Tensor) -> Result<Hashed> {
    t.storage().with_bytes(|data| Hashed {
        hash: XxHash3_64::oneshot(data),
        bytes: data.len(),
    })
}

/// The view's own elements as bytes, in logical order (what [`view_hash`]
/// hashes).
pub fn view_bytes(t: &Tensor) -> Result<Vec<u8>> {
    let r = Region::new(t.layout());
    if !r.fits(t.data_size()) {
        return Err(layout_err(t));
    }
    let es = t.dtype().size();
    t.storage().with_bytes(|data| {
        let mut out = Vec::with_capacity(r.len() * es);
        r.feed_view(data, es, &mut out);
        out
    })
}

/// The buffer elements the view does not reach, as bytes in offset order
/// (what [`outside_hash`] hashes).
pub fn outside_bytes(t: &Tensor) -> Result<Vec<u8>> {
    outside_part_bytes(t, None)
}

/// The guard band's elements as bytes in offset order (what
/// [`guard_hash`] hashes).
pub fn guard_bytes(t: &Tensor) -> Result<Vec<u8>> {
    outside_part_bytes(t, Some(guard_band(t)))
}

fn outside_part_bytes(t: &Tensor, band: Option<usize>) -> Result<Vec<u8>> {
    let r = Region::new(t.layout());
    if !r.fits(t.data_size()) {
        return Err(layout_err(t));
    }
    let es = t.dtype().size();
    t.storage().with_bytes(|data| {
        let mut out = Vec::new();
        r.feed_outside(data, es, band, &mut out);
        out
    })
}

/// Which part of a buffer a hash covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Part {
    View,
    /// Every element the view does not reach.
    Outside,
    /// The gaps inside the view's span and a band on each side.
    Guard,
}

impl Part {
    pub fn hash(self, t: &Tensor) -> Result<Hashed> {
        match self {
            Part::View => view_hash(t),
            Part::Outside => outside_hash(t),
            Part::Guard => guard_hash(t),
        }
    }

    pub fn bytes(self, t: &Tensor) -> Result<Vec<u8>> {
        match self {
            Part::View => view_bytes(t),
            Part::Outside => outside_bytes(t),
            Part::Guard => guard_bytes(t),
        }
    }

    /// The elements this part covers, as `(start, end)` ranges of buffer
    /// offsets in increasing order (not for [`Part::View`], which is walked
    /// in logical order).
    pub(crate) fn ranges(self, t: &Tensor) -> Vec<(usize, usize)> {
        let r = Region::new(t.layout());
        let band = match self {
            Part::Guard => Some(r.band(t.dtype().size())),
            _ => None,
        };
        let mut out = Vec::new();
        r.for_each_outside_range(t.data_size(), band, |a, b| out.push((a, b)));
        out
    }
}

/// Hashes by buffer, valid while the buffer's version stays the same. Every
/// write through `Tensor::write`/`set_at` bumps the version, so a hit means
/// the bytes were not written since the hash was taken.
#[derive(Default)]
pub(crate) struct HashCache {
    entries: HashMap<BufferId, Entry>,
}

struct Entry {
    version: u64,
    hashes: HashMap<(Part, Layout), Hashed>,
}

/// Entries kept before the cache starts over (ids are never reused, so old
/// entries are only memory).
const MAX_BUFFERS: usize = 4096;

impl HashCache {
    pub fn get(&self, t: &Tensor, part: Part) -> Option<Hashed> {
        let e = self.entries.get(&t.buffer_id())?;
        if e.version != t.version() {
            return None;
        }
        e.hashes.get(&(part, t.layout().clone())).copied()
    }

    pub fn put(&mut self, t: &Tensor, part: Part, h: Hashed) {
        if self.entries.len() >= MAX_BUFFERS && !self.entries.contains_key(&t.buffer_id()) {
            self.entries.clear();
        }
        let e = self.entries.entry(t.buffer_id()).or_insert_with(|| Entry {
            version: t.version(),
            hashes: HashMap::new(),
        });
        if e.version != t.version() {
            e.version = t.version();
            e.hashes.clear();
        }
        e.hashes.insert((part, t.layout().clone()), h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_engine::IndexSpec;

    fn t(n: usize) -> Tensor {
        Tensor::from_vec(&[n], (0..n).map(|x| x as f32).collect()).unwrap()
    }

    #[test]
    fn hashes_are_the_reference_xxh3_values() {
        // XXH3_64 with seed 0 of the empty input and of b"a" (the values of
        // the reference implementation, whichever kernel the CPU gets).
        assert_eq!(XxHash3_64::oneshot(b""), 0x2D06_8005_38D3_94C2);
        assert_eq!(XxHash3_64::oneshot(b"a"), 0xE6C6_32B6_1E96_4E1F);
        // Streaming over a long input gives the one-shot value.
        let big: Vec<u8> = (0..300_000u32).map(|i| (i * 31 % 251) as u8).collect();
        let mut h = XxHash3_64::with_seed(0);
        for c in big.chunks(4099) {
            h.write(c);
        }
        assert_eq!(h.finish(), XxHash3_64::oneshot(&big));
    }

    #[test]
    fn strided_view_hash_equals_hash_of_its_contiguous_copy() {
        let x = t(24).reshape(&[4, 6]).unwrap();
        for v in [
            x.t(None).unwrap(),
            x.slice(&[IndexSpec::All, IndexSpec::range(0, 6, 2)]).unwrap(),
            x.slice(&[IndexSpec::range(3, -5, -1)]).unwrap(),
            x.slice(&[IndexSpec::Point(2)]).unwrap(),
        ] {
            let copy = v.deep_copy().unwrap();
            assert_eq!(view_hash(&v).unwrap(), view_hash(&copy).unwrap());
        }
    }

    #[test]
    fn streaming_in_runs_matches_one_shot_for_large_views() {
        // Rows of 2000 f32 (8000 bytes, direct updates) and of 3 (gathered).
        let x = t(2000 * 7).reshape(&[7, 2000]).unwrap();
        let rows = x.slice(&[IndexSpec::range(0, 7, 2)]).unwrap();
        assert!(!rows.is_contiguous());
        assert_eq!(
            view_hash(&rows).unwrap(),
            view_hash(&rows.deep_copy().unwrap()).unwrap()
        );
        let cols = x.slice(&[IndexSpec::All, IndexSpec::range(0, 3, 1)]).unwrap();
        assert_eq!(
            view_hash(&cols).unwrap(),
            view_hash(&cols.deep_copy().unwrap()).unwrap()
        );
    }

    #[test]
    fn outside_hash_sees_only_writes_outside_the_view() {
        let x = t(10);
        let v = x.slice(&[IndexSpec::range(2, 8, 2)]).unwrap();
        let (v0, o0) = (view_hash(&v).unwrap(), outside_hash(&v).unwrap());
        assert_eq!(o0.bytes, 7 * 4);
        x.set_at(&[3], vigil_engine::Scalar::F32(-1.0)).unwrap(); // a gap
        assert_eq!(view_hash(&v).unwrap(), v0);
        assert_ne!(outside_hash(&v).unwrap(), o0);
        let o1 = outside_hash(&v).unwrap();
        v.set_at(&[0], vigil_engine::Scalar::F32(-1.0)).unwrap(); // inside
        assert_ne!(view_hash(&v).unwrap(), v0);
        assert_eq!(outside_hash(&v).unwrap(), o1);
    }

    #[test]
    fn cache_forgets_a_buffer_when_its_version_moves() {
        let x = t(4);
        let mut c = HashCache::default();
        let h = view_hash(&x).unwrap();
        c.put(&x, Part::View, h);
        assert_eq!(c.get(&x, Part::View), Some(h));
        assert_eq!(c.get(&x.slice(&[IndexSpec::Point(0)]).unwrap(), Part::View), None);
        x.set_at(&[0], vigil_engine::Scalar::F32(5.0)).unwrap();
        assert_eq!(c.get(&x, Part::View), None);
    }
}
