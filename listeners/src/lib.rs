//! Listeners: observers of op execution that turn what they see into
//! findings.
