//! (filled in by its own change)

use crate::ops::OpRegistry;

pub fn register(_r: &mut OpRegistry) {}
