//! Serde for `f64` fields that may be NaN or infinite. JSON has no such
//! numbers (serde_json would write `null` and then fail to read it back), so
//! they are written as the strings `"NaN"`, `"inf"` and `"-inf"`, as the
//! listeners' findings do.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One `f64` in its JSON form.
#[derive(Clone, Copy)]
struct Num(f64);

impl Serialize for Num {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let x = self.0;
        if x.is_finite() {
            s.serialize_f64(x)
        } else if x.is_nan() {
            s.serialize_str("NaN")
        } else if x > 0.0 {
            s.serialize_str("inf")
        } else {
            s.serialize_str("-inf")
        }
    }
}

struct NumVisitor;

impl Visitor<'_> for NumVisitor {
    type Value = Num;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number or one of \"NaN\", \"inf\", \"-inf\"")
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Num, E> {
        Ok(Num(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Num, E> {
        Ok(Num(v as f64))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Num, E> {
        Ok(Num(v as f64))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Num, E> {
        match v {
            "NaN" | "nan" => Ok(Num(f64::NAN)),
            "inf" | "+inf" | "Infinity" => Ok(Num(f64::INFINITY)),
            "-inf" | "-Infinity" => Ok(Num(f64::NEG_INFINITY)),
            _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
        }
    }

    /// Plain serde_json writes NaN as `null`; read that back as NaN.
    fn visit_unit<E: de::Error>(self) -> Result<Num, E> {
        Ok(Num(f64::NAN))
    }
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Num, D::Error> {
        d.deserialize_any(NumVisitor)
    }
}

pub(crate) mod one {
    use super::*;

    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        Num(*x).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Num::deserialize(d).map(|n| n.0)
    }
}

pub(crate) mod opt {
    use super::*;

    pub fn serialize<S: Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        x.map(Num).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        Option::<Num>::deserialize(d).map(|n| n.map(|n| n.0))
    }
}

pub(crate) mod many {
    use super::*;

    pub fn serialize<S: Serializer>(xs: &[f64], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(xs.iter().map(|&x| Num(x)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        Vec::<Num>::deserialize(d).map(|v| v.into_iter().map(|n| n.0).collect())
    }
}
