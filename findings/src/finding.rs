//! One defect, usually at one node.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Kind;

/// How bad a finding is. Errors fail a run; warnings do not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    /// The serialized name.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One defect seen at one node (or about a whole run when `node` is
/// empty). The serialized form is part of the report format.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub kind: Kind,
    pub severity: Severity,
    /// The test case or run this came from, when a runner sets one. Reports
    /// hold findings inside their case and leave it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    /// Node name; empty for findings not about one node.
    #[serde(default)]
    pub node: String,
    /// Op name; empty for findings not about one node.
    #[serde(default)]
    pub op: String,
    /// Index of the input concerned, if any.
    #[serde(default)]
    pub input: Option<usize>,
    /// Index of the output concerned, if any.
    #[serde(default)]
    pub output: Option<usize>,
    /// One line.
    #[serde(default)]
    pub message: String,
    /// Structured facts; an object whose keys depend on the kind.
    #[serde(default = "empty_object")]
    pub details: Value,
    /// What to do about it, in one line: the kind's hint
    /// ([`Kind::hint`]) unless the detector gives its own; `None` for a
    /// kind of the caller's own without one.
    #[serde(default)]
    pub hint: Option<String>,
    /// Where the docs explain the kind (`docs/findings.md#destroyed_input`).
    #[serde(default)]
    pub docs: Option<String>,
    /// In a training loop: the first and last iteration the finding was
    /// seen at and how often (the same finding from later iterations is
    /// folded into this one). `None` outside loops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<Seen>,
}

/// An epoch and an iteration of a training loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Iteration {
    pub epoch: usize,
    pub iteration: usize,
}

/// When a finding repeated across a loop's iterations was seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    pub first: Iteration,
    pub last: Iteration,
    /// Times it was seen (once per iteration, unless an op repeats it).
    pub count: usize,
}

impl Seen {
    pub fn once(at: Iteration) -> Seen {
        Seen {
            first: at,
            last: at,
            count: 1,
        }
    }
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

impl Finding {
    /// A finding with the kind's default severity, hint and docs, no node
    /// and empty details. Newlines in the message become spaces.
    pub fn new(kind: impl Into<Kind>, message: impl Into<String>) -> Finding {
        let kind = kind.into();
        let message: String = message.into();
        Finding {
            severity: kind.default_severity(),
            hint: kind.hint().map(String::from),
            docs: kind.docs(),
            kind,
            case: None,
            node: String::new(),
            op: String::new(),
            input: None,
            output: None,
            message: message.replace('\n', " "),
            details: empty_object(),
            seen: None,
        }
    }

    /// A finding of severity error.
    pub fn error(kind: impl Into<Kind>, message: impl Into<String>) -> Finding {
        Finding::new(kind, message).with_severity(Severity::Error)
    }

    /// A finding of severity warning.
    pub fn warning(kind: impl Into<Kind>, message: impl Into<String>) -> Finding {
        Finding::new(kind, message).with_severity(Severity::Warning)
    }

    /// Sets what to do (one line; newlines become spaces) and, for a kind
    /// of the caller's own, where its docs are.
    pub fn with_hint(mut self, hint: impl Into<String>, docs: Option<String>) -> Finding {
        self.hint = Some(hint.into().replace('\n', " "));
        if docs.is_some() {
            self.docs = docs;
        }
        self
    }

    pub fn with_severity(mut self, severity: Severity) -> Finding {
        self.severity = severity;
        self
    }

    /// Places the finding at node `node` running `op`.
    pub fn at(mut self, node: impl Into<String>, op: impl Into<String>) -> Finding {
        self.node = node.into();
        self.op = op.into();
        self
    }

    /// Whether `other` is the same defect seen again: same kind, case,
    /// node, op, input and output (the message may carry other values).
    pub fn same_defect(&self, other: &Finding) -> bool {
        (
            &self.kind,
            &self.case,
            &self.node,
            &self.op,
            self.input,
            self.output,
        ) == (
            &other.kind,
            &other.case,
            &other.node,
            &other.op,
            other.input,
            other.output,
        )
    }

    pub fn with_input(mut self, i: usize) -> Finding {
        self.input = Some(i);
        self
    }

    pub fn with_output(mut self, k: usize) -> Finding {
        self.output = Some(k);
        self
    }

    /// Sets the details; `null` becomes `{}` so readers always find an
    /// object.
    pub fn with_details(mut self, details: Value) -> Finding {
        self.details = if details.is_null() {
            empty_object()
        } else {
            details
        };
        self
    }

    pub fn with_case(mut self, case: impl Into<String>) -> Finding {
        self.case = Some(case.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]", self.severity, self.kind)?;
        if !self.node.is_empty() {
            write!(f, " node '{}' ({})", self.node, self.op)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// A JSON number, or a string for NaN and infinities (JSON has no such
/// numbers). Detectors use it for float fields in `details`.
pub fn json_f64(x: f64) -> Value {
    if x.is_finite() {
        serde_json::json!(x)
    } else if x.is_nan() {
        Value::String("NaN".into())
    } else if x > 0.0 {
        Value::String("inf".into())
    } else {
        Value::String("-inf".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_is_one_line_and_round_trips() {
        let f = Finding::new(Kind::NON_FINITE, "a\nb")
            .with_output(0)
            .at("n1", "exp");
        assert_eq!(f.message, "a b");
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["kind"], "non_finite");
        assert_eq!(v["severity"], "error");
        assert_eq!(v["node"], "n1");
        assert_eq!(v["details"], serde_json::json!({}));
        assert!(v.get("case").is_none(), "no case when none is set");
        let back: Finding = serde_json::from_value(v).unwrap();
        assert_eq!(back, f);
        assert_eq!(f.to_string(), "error[non_finite] node 'n1' (exp): a b");
    }

    #[test]
    fn a_finding_carries_its_kinds_hint_and_docs_in_json() {
        let f = Finding::new(Kind::DESTROYED_INPUT, "m");
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["hint"], Kind::DESTROYED_INPUT.hint().unwrap());
        assert_eq!(v["docs"], "docs/findings.md#destroyed_input");
        // A kind of the caller's own has none until its detector gives one,
        // and the fields are written either way.
        let v = serde_json::to_value(Finding::new("my_check", "m")).unwrap();
        assert!(v["hint"].is_null() && v["docs"].is_null());
        let f = Finding::new("my_check", "m").with_hint("do x\nnow", Some("my/docs.md#x".into()));
        assert_eq!(f.hint.as_deref(), Some("do x now"));
        assert_eq!(f.docs.as_deref(), Some("my/docs.md#x"));
        // Reports written before hints existed still read.
        let old = r#"{"kind":"non_finite","severity":"error","message":"m"}"#;
        let back: Finding = serde_json::from_str(old).unwrap();
        assert_eq!(back.hint, None);
    }

    #[test]
    fn null_details_become_an_object_and_severity_can_be_overridden() {
        let f = Finding::warning("my_check", "m").with_details(Value::Null);
        assert_eq!(f.details, serde_json::json!({}));
        assert!(!f.is_error());
        assert_eq!(f.kind, "my_check");
        let f = Finding::new(Kind::DECLARED_DESTROY_UNUSED, "m").with_case("c1");
        assert_eq!(f.severity, Severity::Warning);
        assert_eq!(serde_json::to_value(&f).unwrap()["case"], "c1");
    }

    #[test]
    fn json_f64_spells_non_finite_values() {
        assert_eq!(json_f64(1.5), serde_json::json!(1.5));
        assert_eq!(json_f64(f64::NAN), "NaN");
        assert_eq!(json_f64(f64::INFINITY), "inf");
        assert_eq!(json_f64(f64::NEG_INFINITY), "-inf");
    }
}
