//! A transform of an op's weight input kept between runs: a graph run many
//! times (a benchmark, the forward pass of each training step) transforms
//! its constant weights once. conv keeps its Winograd weights here.
//!
//! The entry is keyed by the weight's buffer, the buffer's version and the
//! view: every write to a buffer bumps its version (an optimizer's update
//! included), so a stale entry is never used. One entry per op: a node
//! whose weight changes every run recomputes it every run, as it would
//! without the cache.

use std::any::Any;
use std::sync::{Arc, Mutex};

use crate::dtype::DType;
use crate::tensor::storage::BufferId;
use crate::tensor::{Layout, Tensor};

type Key = (BufferId, u64, Layout, DType);

/// What a transform is made from: the buffer, its version, the view.
fn key(w: &Tensor) -> Key {
    (w.buffer_id(), w.version(), w.layout().clone(), w.dtype())
}

/// A transform, of whatever element type its op made it in.
type Entry = (Key, Arc<dyn Any + Send + Sync>);

/// One op's transformed weight (clones of the op share it).
#[derive(Clone, Default)]
pub struct WeightCache(Arc<Mutex<Option<Entry>>>);

impl std::fmt::Debug for WeightCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WeightCache")
    }
}

impl WeightCache {
    /// The transform of `w`: the kept one when `w` is the tensor it was
    /// made from, unchanged since; otherwise `make()`, kept for next time.
    pub fn get<T: Send + Sync + 'static>(&self, w: &Tensor, make: impl FnOnce() -> Vec<T>) -> Arc<Vec<T>> {
        let key = key(w);
        if let Some(v) = self.kept::<T>(&key) {
            return v;
        }
        self.keep(key, make())
    }

    /// Whether a transform of `w` as it is now is kept.
    #[cfg(test)]
    pub(crate) fn holds(&self, w: &Tensor) -> bool {
        let key = key(w);
        self.0
            .lock()
            .is_ok_and(|s| matches!(s.as_ref(), Some((k, _)) if *k == key))
    }

    /// The transform kept for `key`, if any.
    fn kept<T: Send + Sync + 'static>(&self, key: &Key) -> Option<Arc<Vec<T>>> {
        let slot = self.0.lock().ok()?;
        match slot.as_ref() {
            Some((k, v)) if k == key => Arc::clone(v).downcast::<Vec<T>>().ok(),
            _ => None,
        }
    }

    /// Keeps `v` as the transform for `key`.
    fn keep<T: Send + Sync + 'static>(&self, key: Key, v: Vec<T>) -> Arc<Vec<T>> {
        let v = Arc::new(v);
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some((key, Arc::clone(&v) as Arc<dyn Any + Send + Sync>));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The transform is made once per weight and version: a write to the
    /// weight, another view of it or another weight makes it again.
    #[test]
    fn a_transform_is_made_again_only_after_a_write() {
        let p = WeightCache::default();
        let w = Tensor::from_vec(&[2, 2], vec![1.0f32, 2.0, 3.0, 4.0]).unwrap();
        let made = std::cell::Cell::new(0u8);
        let make = || {
            made.set(made.get() + 1);
            vec![f32::from(made.get())]
        };
        assert_eq!(*p.get(&w, make), vec![1.0]);
        assert_eq!(*p.get(&w, make), vec![1.0]);
        w.write(|mut v: ndarray::ArrayViewMutD<'_, f32>| v[[0, 0]] = 5.0)
            .unwrap();
        assert_eq!(*p.get(&w, make), vec![2.0]);
        assert_eq!(*p.get(&w.t(None).unwrap(), make), vec![3.0]);
        let other = Tensor::from_vec(&[2, 2], vec![5.0f32, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(*p.get(&other, make), vec![4.0]);
        assert_eq!(*p.get(&other, make), vec![4.0]);
    }
}
