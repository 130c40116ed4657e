//! Hostile cases: outputs (docs/reliability.md).

#[allow(unused_imports)]
use crate::common;
