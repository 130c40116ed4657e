//! Hostile cases: servers (docs/reliability.md).

#[allow(unused_imports)]
use crate::common;
