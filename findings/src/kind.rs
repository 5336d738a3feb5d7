//! Finding kinds: stable snake_case names that reports and CI match on.

use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Serialize};

use crate::Severity;

/// What was found. Serialized as its name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Kind(Cow<'static, str>);

macro_rules! kinds {
    ($($(#[doc = $doc:literal])* $c:ident = $name:literal;)*) => {
        impl Kind {
            $($(#[doc = $doc])* pub const $c: Kind = Kind(Cow::Borrowed($name));)*
            /// Every built-in kind.
            pub const BUILTIN: &'static [Kind] = &[$(Kind::$c),*];
        }

        /// The built-in kinds as an enum, so that [`hint`] is an
        /// exhaustive `match`: a kind added above without a hint does not
        /// compile.
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        #[derive(Clone, Copy)]
        enum Builtin {
            $($c,)*
        }

        impl Builtin {
            fn of(kind: &Kind) -> Option<Builtin> {
                match kind.name() {
                    $($name => Some(Builtin::$c),)*
                    _ => None,
                }
            }
        }
    };
}

kinds! {
    /// An op changed an input it did not declare in its destroy_map.
    DESTROYED_INPUT = "destroyed_input";
    /// An op wrote into its input's buffer outside the input's own elements.
    OUT_OF_VIEW_WRITE = "out_of_view_write";
    /// An output shares memory with an input and no map declares it.
    UNDECLARED_VIEW = "undeclared_view";
    /// Two outputs of one op share memory.
    ALIASED_OUTPUTS = "aliased_outputs";
    /// An op's output shares memory with a value that is still live (or
    /// with a graph output an earlier run returned), and no declared view
    /// or destroy explains it: a kept workspace or cached output.
    UNDECLARED_ALIAS = "undeclared_alias";
    /// An op made NaN or Inf from all-finite inputs.
    NON_FINITE = "non_finite";
    /// A listener panicked; it was disabled for the rest of the run.
    LISTENER_PANIC = "listener_panic";
    /// An op declared a destroy but never wrote the input.
    DECLARED_DESTROY_UNUSED = "declared_destroy_unused";
    /// An op declared a must-view output that is a copy.
    DECLARED_VIEW_NOT_ALIASED = "declared_view_not_aliased";
    /// A graph output differs from the case's expected value.
    OUTPUT_MISMATCH = "output_mismatch";
    /// The in-place run and the pure reference run disagree on a value.
    VALUE_MISMATCH = "value_mismatch";
    /// The in-place rewrite that makes the in-place run diverge.
    BAD_REWRITE = "bad_rewrite";
    /// The same configuration gave different results on two runs.
    NONDETERMINISTIC = "nondeterministic";
    /// Two valid execution orders gave different results.
    ORDER_DEPENDENT = "order_dependent";
    /// An op's result depends on the content or layout of the output
    /// buffer it was handed.
    PREALLOCATED_OUTPUT = "preallocated_output";
    /// An op read a value after another op destroyed it, or read a buffer
    /// the executor had released.
    READ_AFTER_DESTROY = "read_after_destroy";
    /// An analytic gradient disagrees with finite differences.
    GRADIENT_MISMATCH = "gradient_mismatch";
    /// A check that applies to the graph could not run (the gradient check
    /// when autodiff has no rule for one of its ops): a warning, so that
    /// nobody reads its absence as a pass.
    CHECK_SKIPPED = "check_skipped";
    /// An op's result depends on what its output buffer held before the
    /// call: two recomputations into zeroed buffers agree, the first one
    /// into a reused buffer did not.
    UNINITIALIZED_READ = "uninitialized_read";
    /// An op declared pure borrowed an input's buffer for writing (its
    /// version moved), even if the content was restored before it
    /// returned: a reader of that buffer at the same time sees the scratch
    /// values. Temporary calculations in an input need a declared destroy.
    SCRATCH_WRITE = "scratch_write";
    /// An op's result changes when an input is handed in another layout
    /// (a C- or F-order copy, reversed, or inside a larger buffer with
    /// poisoned guard bands): it ignores strides or reads outside the view.
    LAYOUT_DEPENDENT = "layout_dependent";
    /// An op's result changes between a one-thread pool and a pool of
    /// several threads while its inputs agree.
    THREAD_DEPENDENT = "thread_dependent";
    /// An op panicked in a run DebugMode made; the run stopped at that
    /// node, and what was found before it is kept.
    OP_PANIC = "op_panic";
}

/// The file that explains every built-in kind, one heading per kind (the
/// heading is the kind's name, so its anchor is the name too).
pub const DOCS_FILE: &str = "docs/findings.md";

/// What to do about a finding of a built-in kind, in one line.
fn hint(kind: Builtin) -> &'static str {
    match kind {
        Builtin::DESTROYED_INPUT => {
            "declare it in destroy_map, or allocate the output with OpCtx::output instead of writing the input"
        }
        Builtin::OUT_OF_VIEW_WRITE => {
            "write only the elements of the input's view (follow its strides and offset), not the whole buffer"
        }
        Builtin::UNDECLARED_VIEW => {
            "declare the output in view_map, or copy into a buffer from OpCtx::output"
        }
        Builtin::ALIASED_OUTPUTS => "give each output its own buffer (OpCtx::output), or return one output",
        Builtin::UNDECLARED_ALIAS => {
            "allocate each output per call with OpCtx::output; do not keep a workspace or cached result"
        }
        Builtin::NON_FINITE => {
            "guard the op's arithmetic (overflow, log/sqrt of negatives, 0/0) or check the input ranges"
        }
        Builtin::LISTENER_PANIC => "fix the listener named in the details; its checks stopped at this op",
        Builtin::DECLARED_DESTROY_UNUSED => {
            "drop the entry from destroy_map, or write the result into the input as declared"
        }
        Builtin::DECLARED_VIEW_NOT_ALIASED => {
            "return a view of the input (same buffer), or drop the entry from view_map"
        }
        Builtin::OUTPUT_MISMATCH => {
            "find the first op that differs with vigil debug CASE; loosen --rtol/--atol only for known rounding"
        }
        Builtin::VALUE_MISMATCH => {
            "fix this op's in-place or pure kernel; vigil minimize CASE --out DIR gives a small case"
        }
        Builtin::BAD_REWRITE => {
            "make the _inplace twin compute what the pure op does, or keep the pass from choosing it"
        }
        Builtin::NONDETERMINISTIC => {
            "remove the op's dependence on uninitialized memory, thread timing or unseeded randomness"
        }
        Builtin::ORDER_DEPENDENT => {
            "declare the hidden dependency (destroy_map or view_map) so every valid order gives one result"
        }
        Builtin::PREALLOCATED_OUTPUT => {
            "overwrite every element of a given output buffer and honour its strides; never read it first"
        }
        Builtin::READ_AFTER_DESTROY => {
            "declare the view or destroy that hides the hazard, so the in-place pass orders the reader first"
        }
        Builtin::GRADIENT_MISMATCH => {
            "fix the gradient rule of the op named in the details; check it alone with a small graph"
        }
        Builtin::CHECK_SKIPPED => "give the op a gradient rule, or run without the check that was skipped",
        Builtin::UNINITIALIZED_READ => {
            "overwrite every element of the output before reading it; never accumulate into a given buffer"
        }
        Builtin::SCRATCH_WRITE => {
            "compute in a buffer of your own, or declare the input in destroy_map (even if you restore it)"
        }
        Builtin::LAYOUT_DEPENDENT => {
            "read inputs through their strides and offset (Tensor::read), and only within the view"
        }
        Builtin::THREAD_DEPENDENT => {
            "split work in fixed chunks that do not depend on the thread count, and combine them in order"
        }
        Builtin::OP_PANIC => "return an Err from compute instead of panicking; check the input's dtype and shape",
    }
}

impl Kind {
    /// One line saying what to do about a finding of this kind; `None`
    /// for kinds outside the built-in ones.
    pub fn hint(&self) -> Option<&'static str> {
        Builtin::of(self).map(hint)
    }

    /// Where the docs explain this kind (`docs/findings.md#destroyed_input`);
    /// `None` for kinds outside the built-in ones.
    pub fn docs(&self) -> Option<String> {
        Builtin::of(self).map(|_| format!("{DOCS_FILE}#{}", self.name()))
    }

    /// A kind of the caller's own; use the constants for built-in kinds.
    pub fn new(name: impl Into<Cow<'static, str>>) -> Kind {
        Kind(name.into())
    }

    /// The stable name.
    pub fn name(&self) -> &str {
        &self.0
    }

    /// The stable name (as [`Kind::name`]).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The built-in kind called `name`, if any.
    pub fn builtin(name: &str) -> Option<Kind> {
        Kind::BUILTIN.iter().find(|k| k.name() == name).cloned()
    }

    /// The severity a finding of this kind has unless its detector says
    /// otherwise: a warning for a destroy that is declared but unused. A
    /// declared must-view that is a copy is an error: callers rely on the
    /// aliasing (writes through the view must reach the base).
    pub fn default_severity(&self) -> Severity {
        if *self == Kind::DECLARED_DESTROY_UNUSED || *self == Kind::CHECK_SKIPPED {
            Severity::Warning
        } else {
            Severity::Error
        }
    }
}

impl Deref for Kind {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Kind {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<&'static str> for Kind {
    fn from(s: &'static str) -> Kind {
        Kind(Cow::Borrowed(s))
    }
}

impl From<String> for Kind {
    fn from(s: String) -> Kind {
        Kind(Cow::Owned(s))
    }
}

impl From<Kind> for String {
    fn from(k: Kind) -> String {
        k.0.into_owned()
    }
}

impl PartialEq<str> for Kind {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Kind {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_kinds_serialize_to_their_names_and_are_distinct() {
        let mut seen = std::collections::HashSet::new();
        for k in Kind::BUILTIN {
            let s = serde_json::to_string(k).unwrap();
            assert_eq!(s, format!("\"{}\"", k.name()));
            assert_eq!(Kind::builtin(k.name()).as_ref(), Some(k));
            let back: Kind = serde_json::from_str(&s).unwrap();
            assert_eq!(&back, k);
            assert!(seen.insert(k.name().to_string()), "{k} twice");
            assert!(k.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{k}");
        }
        assert_eq!(Kind::builtin("frobnicated"), None);
        assert_eq!(Kind::new("my_kind".to_string()), "my_kind");
    }

    #[test]
    fn every_builtin_kind_has_a_one_line_hint_and_a_docs_anchor() {
        for k in Kind::BUILTIN {
            let hint = k.hint().unwrap_or_else(|| panic!("{k} has no hint"));
            assert!(!hint.is_empty() && !hint.contains('\n'), "{k}: {hint}");
            assert_eq!(k.docs(), Some(format!("docs/findings.md#{}", k.name())));
        }
        assert_eq!(Kind::new("my_kind").hint(), None);
        assert_eq!(Kind::new("my_kind").docs(), None);
    }

    /// GitHub's anchor for a Markdown heading: lower case, punctuation
    /// other than `-` and `_` dropped, spaces as `-`.
    fn anchor(heading: &str) -> String {
        heading
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn every_kinds_docs_anchor_is_a_heading_of_the_docs_file() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(DOCS_FILE);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let anchors: std::collections::HashSet<String> = text
            .lines()
            .filter_map(|l| l.strip_prefix('#'))
            .map(|l| anchor(l.trim_start_matches('#')))
            .collect();
        for k in Kind::BUILTIN {
            let docs = k.docs().unwrap();
            let (file, fragment) = docs.split_once('#').unwrap();
            assert_eq!(file, DOCS_FILE);
            assert!(
                anchors.contains(fragment),
                "{k}: no heading for #{fragment} in {DOCS_FILE}"
            );
        }
        assert_eq!(anchor(" `value_mismatch` details"), "value_mismatch-details");
    }

    #[test]
    fn only_unused_destroys_default_to_warnings() {
        assert_eq!(
            Kind::DECLARED_DESTROY_UNUSED.default_severity(),
            Severity::Warning
        );
        assert_eq!(
            Kind::DECLARED_VIEW_NOT_ALIASED.default_severity(),
            Severity::Error,
            "a must-view that is a copy is the defect Vigil exists to catch"
        );
        assert_eq!(Kind::VALUE_MISMATCH.default_severity(), Severity::Error);
        assert_eq!(Kind::new("custom").default_severity(), Severity::Error);
    }
}
