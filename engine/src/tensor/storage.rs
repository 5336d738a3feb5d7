//! Shared element buffers. Every view of a tensor holds an `Rc` to the same
//! [`Buffer`]; a write through one view is visible through all of them.
//!
//! Access goes through a `RefCell`, so the aliasing rule of Rust (no `&mut`
//! while an overlapping `&` lives) is enforced at run time: a kernel that tries
//! to write a buffer it is also reading gets [`Error::Aliasing`] instead of
//! undefined behaviour. In-place kernels copy an overlapping operand first.

use std::cell::{Cell, Ref, RefCell, RefMut};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::tensor::{buffer_pool, small};

/// A stable identity for a buffer, unique in the process.
pub type BufferId = u64;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One allocation of elements, with an identity and a write version.
pub struct Buffer<T: Element> {
    id: BufferId,
    version: Cell<u64>,
    /// While above zero, writes fail with [`Error::ReadOnly`]: the buffer
    /// is lent to a run that promised not to write it (see
    /// `exec::Lent`). A count, so lending nests.
    frozen: Cell<u32>,
    data: RefCell<Vec<T>>,
    /// The elements in use: a prefix of `data`, which may be a longer
    /// pooled vector (the pool never cuts one; see `buffer_pool`).
    len: usize,
    /// Whether `data` came from the pool, and so goes back to it.
    pooled: bool,
}

impl<T: Element> Buffer<T> {
    /// A buffer of `v`, freed when it drops. Only vectors the pool handed
    /// out go back to it: vit_b_16's importer drops the weights it
    /// transposes while folding constants (41 of 9.4 MB among them), which
    /// no run asks for again, and a pool that kept them made a bench's
    /// peak RSS 1.17 GB against 0.48 with them freed.
    pub fn from_vec(v: Vec<T>) -> Rc<Self> {
        let len = v.len();
        Self::new(v, len, false)
    }

    /// A buffer of the first `len` elements of `v`, from
    /// [`buffer_pool::take`]; the whole vector goes back when it drops.
    pub fn from_pool(v: Vec<T>, len: usize) -> Rc<Self> {
        Self::new(v, len, true)
    }

    fn new(v: Vec<T>, len: usize, pooled: bool) -> Rc<Self> {
        assert!(len <= v.len(), "a prefix of {len} of a vector of {}", v.len());
        Rc::new(Buffer {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            version: Cell::new(0),
            frozen: Cell::new(0),
            data: RefCell::new(v),
            len,
            pooled,
        })
    }

    pub fn id(&self) -> BufferId {
        self.id
    }

    pub fn version(&self) -> u64 {
        self.version.get()
    }

    pub fn bump_version(&self) {
        self.version.set(self.version.get() + 1);
    }

    /// Refuses writes until a matching [`Buffer::thaw`].
    pub fn freeze(&self) {
        self.frozen.set(self.frozen.get() + 1);
    }

    pub fn thaw(&self) {
        self.frozen.set(self.frozen.get().saturating_sub(1));
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn borrow(&self) -> Result<Ref<'_, [T]>> {
        let r = self.data.try_borrow().map_err(|_| Error::Aliasing {
            node: None,
            msg: format!("buffer {} is being written", self.id),
        })?;
        Ok(Ref::map(r, |v| &v[..self.len]))
    }

    /// Mutable access; bumps the version, so every write is visible to
    /// listeners that reuse hashes of unchanged buffers.
    pub fn borrow_mut(&self) -> Result<RefMut<'_, [T]>> {
        if self.frozen.get() > 0 {
            return Err(Error::ReadOnly {
                node: None,
                buffer: self.id,
            });
        }
        let r = self.data.try_borrow_mut().map_err(|_| Error::Aliasing {
            node: None,
            msg: format!("buffer {} is in use", self.id),
        })?;
        self.bump_version();
        Ok(RefMut::map(r, |v| &mut v[..self.len]))
    }
}

impl<T: Element> Drop for Buffer<T> {
    fn drop(&mut self) {
        if self.pooled {
            buffer_pool::give(std::mem::take(self.data.get_mut()));
        }
    }
}

/// A buffer of any dtype.
#[derive(Clone)]
pub enum Storage {
    F32(Rc<Buffer<f32>>),
    F16(Rc<Buffer<half::f16>>),
    F64(Rc<Buffer<f64>>),
    I64(Rc<Buffer<i64>>),
    I32(Rc<Buffer<i32>>),
    Bool(Rc<Buffer<bool>>),
    U8(Rc<Buffer<u8>>),
    I8(Rc<Buffer<i8>>),
    U16(Rc<Buffer<u16>>),
    I16(Rc<Buffer<i16>>),
    U32(Rc<Buffer<u32>>),
    U64(Rc<Buffer<u64>>),
    BF16(Rc<Buffer<half::bf16>>),
    F8E4M3FN(Rc<Buffer<small::F8E4M3Fn>>),
    F8E4M3FNUZ(Rc<Buffer<small::F8E4M3Fnuz>>),
    F8E5M2(Rc<Buffer<small::F8E5M2>>),
    F8E5M2FNUZ(Rc<Buffer<small::F8E5M2Fnuz>>),
    F4E2M1(Rc<Buffer<small::F4E2M1>>),
    F8E8M0(Rc<Buffer<small::F8E8M0>>),
    I4(Rc<Buffer<small::I4>>),
    U4(Rc<Buffer<small::U4>>),
    I2(Rc<Buffer<small::I2>>),
    U2(Rc<Buffer<small::U2>>),
}

macro_rules! on_buffer {
    ($s:expr, $b:ident => $e:expr) => {
        match $s {
            Storage::F32($b) => $e,
            Storage::F16($b) => $e,
            Storage::F64($b) => $e,
            Storage::I64($b) => $e,
            Storage::I32($b) => $e,
            Storage::Bool($b) => $e,
            Storage::U8($b) => $e,
            Storage::I8($b) => $e,
            Storage::U16($b) => $e,
            Storage::I16($b) => $e,
            Storage::U32($b) => $e,
            Storage::U64($b) => $e,
            Storage::BF16($b) => $e,
            Storage::F8E4M3FN($b) => $e,
            Storage::F8E4M3FNUZ($b) => $e,
            Storage::F8E5M2($b) => $e,
            Storage::F8E5M2FNUZ($b) => $e,
            Storage::F4E2M1($b) => $e,
            Storage::F8E8M0($b) => $e,
            Storage::I4($b) => $e,
            Storage::U4($b) => $e,
            Storage::I2($b) => $e,
            Storage::U2($b) => $e,
        }
    };
}

impl Storage {
    pub fn dtype(&self) -> DType {
        match self {
            Storage::F32(_) => DType::F32,
            Storage::F16(_) => DType::F16,
            Storage::F64(_) => DType::F64,
            Storage::I64(_) => DType::I64,
            Storage::I32(_) => DType::I32,
            Storage::Bool(_) => DType::Bool,
            Storage::U8(_) => DType::U8,
            Storage::I8(_) => DType::I8,
            Storage::U16(_) => DType::U16,
            Storage::I16(_) => DType::I16,
            Storage::U32(_) => DType::U32,
            Storage::U64(_) => DType::U64,
            Storage::BF16(_) => DType::BF16,
            Storage::F8E4M3FN(_) => DType::F8E4M3FN,
            Storage::F8E4M3FNUZ(_) => DType::F8E4M3FNUZ,
            Storage::F8E5M2(_) => DType::F8E5M2,
            Storage::F8E5M2FNUZ(_) => DType::F8E5M2FNUZ,
            Storage::F4E2M1(_) => DType::F4E2M1,
            Storage::F8E8M0(_) => DType::F8E8M0,
            Storage::I4(_) => DType::I4,
            Storage::U4(_) => DType::U4,
            Storage::I2(_) => DType::I2,
            Storage::U2(_) => DType::U2,
        }
    }

    pub fn id(&self) -> BufferId {
        on_buffer!(self, b => b.id())
    }

    pub fn version(&self) -> u64 {
        on_buffer!(self, b => b.version())
    }

    pub fn bump_version(&self) {
        on_buffer!(self, b => b.bump_version())
    }

    /// Refuses writes (with [`Error::ReadOnly`]) until a matching
    /// [`Storage::thaw`].
    pub fn freeze(&self) {
        on_buffer!(self, b => b.freeze())
    }

    pub fn thaw(&self) {
        on_buffer!(self, b => b.thaw())
    }

    /// Number of elements in the buffer (not in any one view of it).
    pub fn len(&self) -> usize {
        on_buffer!(self, b => b.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn nbytes(&self) -> usize {
        self.len() * self.dtype().size()
    }

    /// How many tensors hold this buffer right now.
    pub fn holders(&self) -> usize {
        on_buffer!(self, b => Rc::strong_count(b))
    }

    /// Calls `f` with the whole buffer as bytes (native byte order).
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        Ok(on_buffer!(self, b => f(bytemuck::cast_slice(&b.borrow()?))))
    }

    pub fn zeros(dtype: DType, len: usize) -> Storage {
        crate::dispatch_all!(dtype, T => T::wrap(Buffer::from_pool(buffer_pool::take_zeroed::<T>(len), len)))
    }

    /// A buffer with unspecified (but valid) contents, for kernels that
    /// overwrite every element.
    pub fn uninit(dtype: DType, len: usize) -> Storage {
        crate::dispatch_all!(dtype, T => T::wrap(Buffer::from_pool(buffer_pool::take::<T>(len), len)))
    }
}

/// A vector of any dtype, as the pool keeps them.
#[derive(Clone)]
pub enum AnyVec {
    F32(Vec<f32>),
    F16(Vec<half::f16>),
    F64(Vec<f64>),
    I64(Vec<i64>),
    I32(Vec<i32>),
    Bool(Vec<bool>),
    U8(Vec<u8>),
    I8(Vec<i8>),
    U16(Vec<u16>),
    I16(Vec<i16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    BF16(Vec<half::bf16>),
    F8E4M3FN(Vec<small::F8E4M3Fn>),
    F8E4M3FNUZ(Vec<small::F8E4M3Fnuz>),
    F8E5M2(Vec<small::F8E5M2>),
    F8E5M2FNUZ(Vec<small::F8E5M2Fnuz>),
    F4E2M1(Vec<small::F4E2M1>),
    F8E8M0(Vec<small::F8E8M0>),
    I4(Vec<small::I4>),
    U4(Vec<small::U4>),
    I2(Vec<small::I2>),
    U2(Vec<small::U2>),
}

impl AnyVec {
    pub fn dtype(&self) -> DType {
        match self {
            AnyVec::F32(_) => DType::F32,
            AnyVec::F16(_) => DType::F16,
            AnyVec::F64(_) => DType::F64,
            AnyVec::I64(_) => DType::I64,
            AnyVec::I32(_) => DType::I32,
            AnyVec::Bool(_) => DType::Bool,
            AnyVec::U8(_) => DType::U8,
            AnyVec::I8(_) => DType::I8,
            AnyVec::U16(_) => DType::U16,
            AnyVec::I16(_) => DType::I16,
            AnyVec::U32(_) => DType::U32,
            AnyVec::U64(_) => DType::U64,
            AnyVec::BF16(_) => DType::BF16,
            AnyVec::F8E4M3FN(_) => DType::F8E4M3FN,
            AnyVec::F8E4M3FNUZ(_) => DType::F8E4M3FNUZ,
            AnyVec::F8E5M2(_) => DType::F8E5M2,
            AnyVec::F8E5M2FNUZ(_) => DType::F8E5M2FNUZ,
            AnyVec::F4E2M1(_) => DType::F4E2M1,
            AnyVec::F8E8M0(_) => DType::F8E8M0,
            AnyVec::I4(_) => DType::I4,
            AnyVec::U4(_) => DType::U4,
            AnyVec::I2(_) => DType::I2,
            AnyVec::U2(_) => DType::U2,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            AnyVec::F32(v) => v.len(),
            AnyVec::F16(v) => v.len(),
            AnyVec::F64(v) => v.len(),
            AnyVec::I64(v) => v.len(),
            AnyVec::I32(v) => v.len(),
            AnyVec::Bool(v) => v.len(),
            AnyVec::U8(v) => v.len(),
            AnyVec::I8(v) => v.len(),
            AnyVec::U16(v) => v.len(),
            AnyVec::I16(v) => v.len(),
            AnyVec::U32(v) => v.len(),
            AnyVec::U64(v) => v.len(),
            AnyVec::BF16(v) => v.len(),
            AnyVec::F8E4M3FN(v) => v.len(),
            AnyVec::F8E4M3FNUZ(v) => v.len(),
            AnyVec::F8E5M2(v) => v.len(),
            AnyVec::F8E5M2FNUZ(v) => v.len(),
            AnyVec::F4E2M1(v) => v.len(),
            AnyVec::F8E8M0(v) => v.len(),
            AnyVec::I4(v) => v.len(),
            AnyVec::U4(v) => v.len(),
            AnyVec::I2(v) => v.len(),
            AnyVec::U2(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
