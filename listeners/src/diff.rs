//! Element-wise differences between two byte copies of the same elements,
//! for Copy-mode reports.

use serde_json::{json, Value};
use vigil_engine::DType;

use crate::finding::json_f64;

/// Differing positions reported in full.
pub const SHOWN: usize = 10;

/// One element as a JSON value (exact for integers) and as f64.
fn decode(dtype: DType, b: &[u8]) -> (Value, f64) {
    fn arr<const N: usize>(b: &[u8]) -> [u8; N] {
        let mut a = [0u8; N];
        a.copy_from_slice(&b[..N]);
        a
    }
    fn int<T: Into<Value> + vigil_engine::Element>(v: T) -> (Value, f64) {
        (v.into(), v.to_f64())
    }
    match dtype {
        DType::F32 => {
            let v = f32::from_ne_bytes(arr(b)) as f64;
            (json_f64(v), v)
        }
        DType::F64 => {
            let v = f64::from_ne_bytes(arr(b));
            (json_f64(v), v)
        }
        DType::F16 => {
            let v = vigil_engine::f16::from_ne_bytes(arr(b)).to_f64();
            (json_f64(v), v)
        }
        DType::BF16 => {
            let v = vigil_engine::bf16::from_ne_bytes(arr(b)).to_f64();
            (json_f64(v), v)
        }
        d @ (DType::I4 | DType::U4 | DType::I2 | DType::U2) => {
            let v = vigil_engine::small::value_of(d, b[0]).unwrap_or(f64::NAN);
            (json!(v as i64), v)
        }
        d @ (DType::F8E4M3FN
        | DType::F8E4M3FNUZ
        | DType::F8E5M2
        | DType::F8E5M2FNUZ
        | DType::F4E2M1
        | DType::F8E8M0) => {
            let v = vigil_engine::small::value_of(d, b[0]).unwrap_or(f64::NAN);
            (json_f64(v), v)
        }
        DType::I64 => int(i64::from_ne_bytes(arr(b))),
        DType::I32 => int(i32::from_ne_bytes(arr(b))),
        DType::U8 => int(b[0]),
        DType::I8 => int(i8::from_ne_bytes(arr(b))),
        DType::U16 => int(u16::from_ne_bytes(arr(b))),
        DType::I16 => int(i16::from_ne_bytes(arr(b))),
        DType::U32 => int(u32::from_ne_bytes(arr(b))),
        DType::U64 => int(u64::from_ne_bytes(arr(b))),
        DType::Bool => {
            let v = b[0] != 0;
            (json!(v), if v { 1.0 } else { 0.0 })
        }
    }
}

/// Differences found so far.
pub struct Diff {
    dtype: DType,
    changed: usize,
    first: Vec<Value>,
    min_change: Option<f64>,
    max_change: Option<f64>,
}

impl Diff {
    pub fn new(dtype: DType) -> Diff {
        Diff {
            dtype,
            changed: 0,
            first: Vec::new(),
            min_change: None,
            max_change: None,
        }
    }

    /// Records element `old` → `new` when they differ; `place` says where
    /// (a flat index or a buffer offset), built only for shown entries.
    pub fn note(&mut self, old: &[u8], new: &[u8], place: impl FnOnce() -> Value) {
        if old == new {
            return;
        }
        self.changed += 1;
        let (ov, of) = decode(self.dtype, old);
        let (nv, nf) = decode(self.dtype, new);
        let change = nf - of;
        if change.is_finite() {
            self.min_change = Some(self.min_change.map_or(change, |m| m.min(change)));
            self.max_change = Some(self.max_change.map_or(change, |m| m.max(change)));
        }
        if self.first.len() < SHOWN {
            let mut e = place();
            if let Value::Object(m) = &mut e {
                m.insert("old".into(), ov);
                m.insert("new".into(), nv);
            }
            self.first.push(e);
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "changed": self.changed,
            "first": self.first,
            "min_change": self.min_change,
            "max_change": self.max_change,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_first_entries_and_change_range() {
        let old: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0]
            .iter()
            .flat_map(|x| x.to_ne_bytes())
            .collect();
        let new: Vec<u8> = [1.0f32, 5.0, 3.0, -4.0]
            .iter()
            .flat_map(|x| x.to_ne_bytes())
            .collect();
        let mut d = Diff::new(DType::F32);
        for k in 0..4 {
            d.note(
                &old[k * 4..k * 4 + 4],
                &new[k * 4..k * 4 + 4],
                || json!({ "flat": k }),
            );
        }
        let j = d.to_json();
        assert_eq!(j["changed"], 2);
        assert_eq!(j["first"][0], json!({"flat": 1, "old": 2.0, "new": 5.0}));
        assert_eq!(j["min_change"], -8.0);
        assert_eq!(j["max_change"], 3.0);
    }

    #[test]
    fn f16_elements_decode_from_two_bytes() {
        let h = |v: f32| vigil_engine::f16::from_f32(v).to_ne_bytes();
        let mut d = Diff::new(DType::F16);
        d.note(&h(0.5), &h(0.5), || json!({ "flat": 0 }));
        d.note(&h(0.5), &h(-65504.0), || json!({ "flat": 1 }));
        let j = d.to_json();
        assert_eq!(j["changed"], 1);
        assert_eq!(j["first"][0], json!({"flat": 1, "old": 0.5, "new": -65504.0}));
    }
}
