//! Hostile cases: links (docs/reliability.md).

#[allow(unused_imports)]
use crate::common;
