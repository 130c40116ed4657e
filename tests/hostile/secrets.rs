//! Hostile cases: secrets (docs/reliability.md).

#[allow(unused_imports)]
use crate::common;
