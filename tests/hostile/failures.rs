//! Hostile cases: failures (docs/reliability.md).

#[allow(unused_imports)]
use crate::common;
