//! Findings: what a validating listener reports. Kinds have stable
//! snake_case names because reports and CI match on them.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use vigil_engine::exec::{Listener, OpEvent};

/// How bad a finding is. Errors fail a run; warnings do not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
}

/// What was found. The serialized names are part of the report format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// An op changed an input it did not declare in its destroy_map.
    DestroyedInput,
    /// An op wrote into its input's buffer outside the input's own elements.
    OutOfViewWrite,
    /// An output shares memory with an input and no map declares it.
    UndeclaredView,
    /// Two outputs of one op share memory.
    AliasedOutputs,
    /// An op made NaN or Inf from all-finite inputs.
    NonFinite,
    /// A listener panicked; it was disabled for the rest of the run.
    ListenerPanic,
    /// An op declared a destroy but never wrote the input.
    DeclaredDestroyUnused,
    /// An op declared a must-view output that is a copy.
    DeclaredViewNotAliased,
}

impl FindingKind {
    pub const ALL: [FindingKind; 8] = [
        FindingKind::DestroyedInput,
        FindingKind::OutOfViewWrite,
        FindingKind::UndeclaredView,
        FindingKind::AliasedOutputs,
        FindingKind::NonFinite,
        FindingKind::ListenerPanic,
        FindingKind::DeclaredDestroyUnused,
        FindingKind::DeclaredViewNotAliased,
    ];

    /// The stable name, as serialized.
    pub fn name(self) -> &'static str {
        match self {
            FindingKind::DestroyedInput => "destroyed_input",
            FindingKind::OutOfViewWrite => "out_of_view_write",
            FindingKind::UndeclaredView => "undeclared_view",
            FindingKind::AliasedOutputs => "aliased_outputs",
            FindingKind::NonFinite => "non_finite",
            FindingKind::ListenerPanic => "listener_panic",
            FindingKind::DeclaredDestroyUnused => "declared_destroy_unused",
            FindingKind::DeclaredViewNotAliased => "declared_view_not_aliased",
        }
    }

    pub fn parse(s: &str) -> Option<FindingKind> {
        FindingKind::ALL.into_iter().find(|k| k.name() == s)
    }

    pub fn severity(self) -> Severity {
        match self {
            FindingKind::DeclaredDestroyUnused | FindingKind::DeclaredViewNotAliased => Severity::Warning,
            _ => Severity::Error,
        }
    }
}

impl fmt::Display for FindingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One defect seen at one node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub kind: FindingKind,
    pub severity: Severity,
    /// The test case or run this came from, when the runner sets one.
    pub case: Option<String>,
    /// Node name; empty for findings not about an op.
    pub node: String,
    /// Op name; empty for findings not about an op.
    pub op: String,
    pub input: Option<usize>,
    pub output: Option<usize>,
    /// One line.
    pub message: String,
    pub details: Value,
}

impl Finding {
    /// A finding with the kind's severity and no node.
    pub fn new(kind: FindingKind, message: impl Into<String>) -> Finding {
        let message: String = message.into();
        Finding {
            kind,
            severity: kind.severity(),
            case: None,
            node: String::new(),
            op: String::new(),
            input: None,
            output: None,
            message: message.replace('\n', " "),
            details: Value::Null,
        }
    }

    /// A finding about the op of `ev`.
    pub fn at_op(kind: FindingKind, ev: &OpEvent, message: impl Into<String>) -> Finding {
        let mut f = Finding::new(kind, message);
        f.node = ev.node.name.clone();
        f.op = ev.op_name().to_string();
        f
    }

    pub fn with_input(mut self, i: usize) -> Finding {
        self.input = Some(i);
        self
    }

    pub fn with_output(mut self, k: usize) -> Finding {
        self.output = Some(k);
        self
    }

    pub fn with_details(mut self, details: Value) -> Finding {
        self.details = details;
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{sev}[{}]", self.kind)?;
        if !self.node.is_empty() {
            write!(f, " node '{}' ({})", self.node, self.op)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// A listener that produces findings, so a [`crate::ListenerSet`] or a
/// runner can collect them.
pub trait Validator: Listener {
    /// Findings so far.
    fn findings(&self) -> &[Finding];
    /// Moves the findings out.
    fn take_findings(&mut self) -> Vec<Finding>;
}

/// A JSON number, or a string for NaN and infinities (JSON has no such
/// numbers).
pub(crate) fn json_f64(x: f64) -> Value {
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

/// A 64-bit hash as 16 hex digits (JSON numbers lose bits above 2^53).
pub(crate) fn hex(h: u64) -> String {
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_serialize_to_their_stable_names() {
        for k in FindingKind::ALL {
            let s = serde_json::to_string(&k).unwrap();
            assert_eq!(s, format!("\"{}\"", k.name()));
            assert_eq!(FindingKind::parse(k.name()), Some(k));
        }
        assert_eq!(FindingKind::DeclaredDestroyUnused.severity(), Severity::Warning);
        assert_eq!(FindingKind::OutOfViewWrite.severity(), Severity::Error);
    }

    #[test]
    fn finding_message_is_one_line_and_round_trips() {
        let f = Finding::new(FindingKind::NonFinite, "a\nb").with_output(0);
        assert_eq!(f.message, "a b");
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["kind"], "non_finite");
        assert_eq!(v["severity"], "error");
        let back: Finding = serde_json::from_value(v).unwrap();
        assert_eq!(back, f);
    }
}
