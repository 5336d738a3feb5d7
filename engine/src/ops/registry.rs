//! Op factories by name. The graph loader asks the registry to make each
//! node's op from its attrs; users register their own ops the same way.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use crate::error::{Error, Result};
use crate::ops::{Attrs, Op};

/// Makes an op from a node's attrs.
pub type OpFactory = Arc<dyn Fn(&Attrs) -> Result<Arc<dyn Op>> + Send + Sync>;

/// A name → factory table.
#[derive(Clone, Default)]
pub struct OpRegistry {
    map: BTreeMap<String, OpFactory>,
}

impl OpRegistry {
    /// A registry with no ops.
    pub fn empty() -> OpRegistry {
        OpRegistry::default()
    }

    /// The built-in op library.
    pub fn builtin() -> OpRegistry {
        static BUILTIN: OnceLock<OpRegistry> = OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                let mut r = OpRegistry::empty();
                super::elementwise::register(&mut r);
                super::view::register(&mut r);
                super::reduce::register(&mut r);
                super::linalg::register(&mut r);
                super::copy::register(&mut r);
                super::subtensor::register(&mut r);
                super::nn::register(&mut r);
                super::random::register(&mut r);
                super::conv::register(&mut r);
                super::conv_transpose::register(&mut r);
                super::pool::register(&mut r);
                super::norm::register(&mut r);
                super::fill::register(&mut r);
                super::activation::register(&mut r);
                super::pad::register(&mut r);
                super::tile::register(&mut r);
                super::logical::register(&mut r);
                super::bitwise::register(&mut r);
                super::intdiv::register(&mut r);
                super::classify::register(&mut r);
                super::range::register(&mut r);
                super::cumsum::register(&mut r);
                super::trilu::register(&mut r);
                super::top_k::register(&mut r);
                super::elements::register(&mut r);
                super::layer_norm::register(&mut r);
                super::einsum::register(&mut r);
                super::resize::register(&mut r);
                super::gather_nd::register(&mut r);
                super::scatter_nd::register(&mut r);
                super::instance_norm::register(&mut r);
                super::quant::register(&mut r);
                super::group_norm::register(&mut r);
                super::selection::register(&mut r);
                super::grid_sample::register(&mut r);
                super::spectral::register(&mut r);
                super::eye_like::register(&mut r);
                super::det::register(&mut r);
                super::reverse_sequence::register(&mut r);
                super::col2im::register(&mut r);
                super::affine_grid::register(&mut r);
                super::center_crop_pad::register(&mut r);
                super::non_max_suppression::register(&mut r);
                super::recurrent::register(&mut r);
                super::unique::register(&mut r);
                super::non_zero::register(&mut r);
                super::shape_of::register(&mut r);
                super::slice::register(&mut r);
                super::attention::register(&mut r);
                super::rotary::register(&mut r);
                super::tensor_scatter::register(&mut r);
                super::linear_attention::register(&mut r);
                super::causal_conv::register(&mut r);
                super::max_unpool::register(&mut r);
                super::roi_align::register(&mut r);
                super::deform_conv::register(&mut r);
                super::tfidf_vectorizer::register(&mut r);
                super::image_decoder::register(&mut r);
                super::tree_ensemble::register(&mut r);
                r
            })
            .clone()
    }

    /// Registers (or replaces) the op `name`.
    pub fn register(
        &mut self,
        name: &str,
        factory: impl Fn(&Attrs) -> Result<Arc<dyn Op>> + Send + Sync + 'static,
    ) -> &mut Self {
        self.map.insert(name.to_string(), Arc::new(factory));
        self
    }

    /// Registers an op without attrs: every node shares one instance.
    pub fn register_op(&mut self, op: Arc<dyn Op>) -> &mut Self {
        let name = op.name().to_string();
        self.register(&name.clone(), move |a: &Attrs| {
            a.only(&name, &[])?;
            Ok(op.clone())
        })
    }

    pub fn contains(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }

    /// Makes op `name` from `attrs`.
    pub fn make(&self, name: &str, attrs: &Attrs) -> Result<Arc<dyn Op>> {
        match self.map.get(name) {
            Some(f) => f(attrs),
            None => Err(Error::Unsupported(format!("unknown op '{name}'"))),
        }
    }
}
