//! Hostile cases: ownership (docs/reliability.md).

#[allow(unused_imports)]
use crate::common;
