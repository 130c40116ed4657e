//! Hostile cases: inputs (docs/reliability.md).

#[allow(unused_imports)]
use crate::common;
