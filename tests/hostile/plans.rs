//! Hostile cases: plans (docs/reliability.md).

#[allow(unused_imports)]
use crate::common;
