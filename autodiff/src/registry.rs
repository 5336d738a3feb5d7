//! Gradient rules by op name, mirroring `OpRegistry`: the built-in rules
//! cover every differentiable built-in op, and users register rules for
//! their own ops the same way they register the ops.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use vigil_engine::graph::{GraphBuilder, Sym};
use vigil_engine::Attrs;

use crate::error::{AutodiffError, Result};

/// What a rule sees of one forward node: its inputs and outputs as
/// variables of the builder the backward graph grows in, the gradient of
/// the loss with respect to each output, and which inputs need one.
pub struct GradCtx<'a> {
    pub builder: &'a GraphBuilder,
    /// The forward node's name, for error messages.
    pub node: &'a str,
    pub attrs: Attrs,
    pub inputs: Vec<Sym>,
    pub outputs: Vec<Sym>,
    /// `None` for outputs the loss does not depend on.
    pub grads: Vec<Option<Sym>>,
    /// `needs[i]`: input `i` leads to a variable the caller asked about.
    pub needs: Vec<bool>,
}

impl GradCtx<'_> {
    /// The gradient of output 0 (rules of one-output ops are only called
    /// when it exists).
    pub fn grad(&self) -> Result<&Sym> {
        self.grads
            .first()
            .and_then(Option::as_ref)
            .ok_or_else(|| self.error("no upstream gradient for output 0"))
    }

    /// A rule error naming this node.
    pub fn error(&self, msg: impl Into<String>) -> AutodiffError {
        AutodiffError::Rule {
            node: self.node.to_string(),
            msg: msg.into(),
        }
    }
}

/// A gradient rule: the gradient of the loss with respect to each input
/// (`None` where none is needed or the input is not differentiable).
pub type GradFn = Arc<dyn Fn(&GradCtx) -> Result<Vec<Option<Sym>>> + Send + Sync>;

/// An op name → gradient rule table.
#[derive(Clone, Default)]
pub struct GradRegistry {
    map: BTreeMap<String, GradFn>,
}

impl GradRegistry {
    pub fn empty() -> GradRegistry {
        GradRegistry::default()
    }

    /// The rules of the built-in ops.
    pub fn builtin() -> GradRegistry {
        static BUILTIN: OnceLock<GradRegistry> = OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                let mut r = GradRegistry::empty();
                crate::rules::elementwise::register(&mut r);
                crate::rules::reduce::register(&mut r);
                crate::rules::linalg::register(&mut r);
                crate::rules::nn::register(&mut r);
                crate::rules::shape::register(&mut r);
                crate::rules::index::register(&mut r);
                r
            })
            .clone()
    }

    /// Registers (or replaces) the rule of op `name`.
    pub fn register(
        &mut self,
        name: &str,
        rule: impl Fn(&GradCtx) -> Result<Vec<Option<Sym>>> + Send + Sync + 'static,
    ) -> &mut Self {
        self.map.insert(name.to_string(), Arc::new(rule));
        self
    }

    pub fn get(&self, name: &str) -> Option<&GradFn> {
        self.map.get(name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }
}
