//! What an operation returned, as the histograms count it: kept here, below
//! the engines that produce it, so measure never imports an engine.

/// Why an operation did not succeed. YCSB's `Status`, reduced to what the
/// report distinguishes: `NOT_FOUND` and `ERROR` (with the engine's words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpError {
    NotFound,
    Failed(String),
}

pub type OpResult = Result<(), OpError>;
