//! What an operation returned, as the histograms count it: kept here, below
//! the engines that produce it, so measure never imports an engine.

use std::fmt;
use std::ops::Deref;

/// Why an operation did not succeed. YCSB's `Status`, reduced to what the
/// report distinguishes: `NOT_FOUND` and `ERROR` (with the engine's words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpError {
    NotFound,
    Failed(Failure),
}

impl OpError {
    /// A failure in the engine's words.
    pub fn failed(words: impl Into<Failure>) -> Self {
        OpError::Failed(words.into())
    }
}

pub type OpResult = Result<(), OpError>;

/// An engine's words for a failure, behind one pointer: an [`OpResult`]
/// then fits in two registers. With a `String` here (three words) every
/// engine call returned its result through memory, and reading it back
/// stalled the driver's hot path (bench/RESULTS.md, the driver against its
/// floor). Failures are rare; the extra allocation is theirs.
#[derive(Clone, PartialEq, Eq)]
// The box is the point: one word where a `String` is three.
#[allow(clippy::box_collection)]
pub struct Failure(Box<String>);

impl From<String> for Failure {
    fn from(words: String) -> Self {
        Failure(Box::new(words))
    }
}

impl From<&str> for Failure {
    fn from(words: &str) -> Self {
        Failure(Box::new(words.to_owned()))
    }
}

impl Deref for Failure {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The point of [`Failure`]: results come back in registers.
    #[test]
    fn results_fit_in_two_registers() {
        assert_eq!(std::mem::size_of::<OpResult>(), 16);
        assert_eq!(std::mem::size_of::<Result<usize, OpError>>(), 16);
    }

    #[test]
    fn a_failure_reads_as_its_words() {
        let err = OpError::failed(format!("disk {}", "full"));
        match &err {
            OpError::Failed(words) => {
                assert_eq!(&**words, "disk full");
                assert_eq!(words.to_string(), "disk full");
                assert_eq!(format!("{words:?}"), "\"disk full\"");
            }
            OpError::NotFound => panic!("a failure read as not found"),
        }
    }
}
