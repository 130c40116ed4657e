//! Hostile cases: waits (docs/reliability.md).

#[allow(unused_imports)]
use crate::common;
