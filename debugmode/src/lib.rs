//! DebugMode.
#![forbid(unsafe_code)]
