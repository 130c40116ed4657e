//! Helpers of kvperf's own unit tests, compiled only into them (`cargo
//! test`), never into the product: listeners that are not the server an
//! engine expects, and the checks every server engine's password test
//! makes alike.

pub mod fake_listener;
#[cfg(any(
    feature = "redis",
    feature = "postgres",
    feature = "cassandra",
    feature = "mongodb"
))]
pub mod secret_checks;
