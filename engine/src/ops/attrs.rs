//! Node attributes: a JSON object with typed getters whose errors name the
//! field.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::dtype::DType;
use crate::error::{attr_err, Result};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Attrs(pub Map<String, Value>);

impl Attrs {
    pub fn new() -> Attrs {
        Attrs::default()
    }

    pub fn with(mut self, key: &str, v: impl Into<Value>) -> Attrs {
        self.0.insert(key.to_string(), v.into());
        self
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    fn bad<T>(key: &str, want: &str, v: &Value) -> Result<T> {
        attr_err(format!("attr '{key}': expected {want}, got {v}"))
    }

    pub fn i64(&self, key: &str) -> Result<Option<i64>> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_i64()
                .map(Some)
                .map_or_else(|| Self::bad(key, "an integer", v), Ok),
        }
    }

    pub fn f64(&self, key: &str) -> Result<Option<f64>> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .map_or_else(|| Self::bad(key, "a number", v), Ok),
        }
    }

    pub fn bool(&self, key: &str) -> Result<Option<bool>> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Self::bad(key, "true or false", v),
        }
    }

    pub fn i64_list(&self, key: &str) -> Result<Option<Vec<i64>>> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| {
                    x.as_i64().map_or_else(
                        || Self::bad(key, "a list of integers", &Value::Array(a.clone())),
                        Ok,
                    )
                })
                .collect::<Result<Vec<_>>>()
                .map(Some),
            Some(v) => Self::bad(key, "a list of integers", v),
        }
    }

    /// A list of numbers. JSON has no NaN or infinities: those are the
    /// strings `"nan"`, `"inf"` and `"-inf"`, as [`float_list`] writes them.
    pub fn f64_list(&self, key: &str) -> Result<Option<Vec<f64>>> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| match x {
                    Value::String(s) if s == "nan" => Ok(f64::NAN),
                    Value::String(s) if s == "inf" => Ok(f64::INFINITY),
                    Value::String(s) if s == "-inf" => Ok(f64::NEG_INFINITY),
                    _ => x.as_f64().map_or_else(
                        || Self::bad(key, "a list of numbers", &Value::Array(a.clone())),
                        Ok,
                    ),
                })
                .collect::<Result<Vec<_>>>()
                .map(Some),
            Some(v) => Self::bad(key, "a list of numbers", v),
        }
    }

    /// A list of non-negative integers (a shape or a permutation).
    pub fn usize_list(&self, key: &str) -> Result<Option<Vec<usize>>> {
        match self.i64_list(key)? {
            None => Ok(None),
            Some(v) if v.iter().all(|&x| x >= 0) => Ok(Some(v.iter().map(|&x| x as usize).collect())),
            Some(v) => attr_err(format!("attr '{key}': expected non-negative integers, got {v:?}")),
        }
    }

    pub fn str(&self, key: &str) -> Result<Option<&str>> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Self::bad(key, "a string", v),
        }
    }

    pub fn dtype(&self, key: &str) -> Result<Option<DType>> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => DType::parse(s)
                .map(Some)
                .map_or_else(|| attr_err(format!("attr '{key}': unknown dtype '{s}'")), Ok),
            Some(v) => Self::bad(key, "a dtype name", v),
        }
    }

    /// Fails on attributes the op does not know, so typos are caught.
    pub fn only(&self, op: &str, known: &[&str]) -> Result<()> {
        for k in self.0.keys() {
            if !known.contains(&k.as_str()) {
                return attr_err(format!(
                    "op '{op}' has no attr '{k}' (known: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ));
            }
        }
        Ok(())
    }
}

/// `v` as an attr value that [`Attrs::f64_list`] reads back exactly: finite
/// values as JSON numbers, NaN and the infinities as strings.
pub fn float_list(v: &[f64]) -> Value {
    Value::Array(
        v.iter()
            .map(|&x| {
                if x.is_nan() {
                    Value::from("nan")
                } else if x.is_infinite() {
                    Value::from(if x > 0.0 { "inf" } else { "-inf" })
                } else {
                    Value::from(x)
                }
            })
            .collect(),
    )
}
