//! Hostile cases: resources (docs/reliability.md).

#[allow(unused_imports)]
use crate::common;
