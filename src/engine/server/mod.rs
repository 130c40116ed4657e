//! The server engines: database servers reached over a socket at
//! `<engine>.host` and `<engine>.port` (`kvperf server start` runs one
//! locally). Each engine is one file, compiled in with the Cargo feature of
//! its name and listed in the registry ([`super::registry()`]), beside the
//! pieces they share.

// The engines name the seam as `super::…` (`super::Engine`,
// `super::options`): the seam's names, seen from this folder.
#[allow(unused_imports)]
use super::*;

#[cfg(feature = "cassandra")]
pub mod cassandra;
#[cfg(any(feature = "cassandra", feature = "mongodb"))]
pub(crate) mod driver_runtime;
#[allow(dead_code)] // each function serves some of the server engines
pub(crate) mod endpoint;
#[cfg(feature = "mongodb")]
pub mod mongodb;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod reconnect;
#[cfg(feature = "redis")]
pub mod redis;
