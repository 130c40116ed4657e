//! Helpers of kvperf's own unit tests, compiled only into them (`cargo
//! test`), never into the product: listeners that are not the server an
//! engine expects, and the checks every server engine's password test
//! makes alike.

pub mod fake_listener;

/// The one line an input check says when `result` refuses what it was
/// given; fails the test when it was accepted.
pub fn refusal<T>(result: Result<T, crate::error::InputError>) -> String {
    match result {
        Ok(_) => panic!("accepted where a refusal was expected"),
        Err(e) => e.to_string(),
    }
}
#[cfg(any(
    feature = "redis",
    feature = "postgres",
    feature = "cassandra",
    feature = "mongodb"
))]
pub mod secret_checks;
