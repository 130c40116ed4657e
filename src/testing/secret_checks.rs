//! What the tests of a server engine with a password check alike: the
//! password stays out of every text a user may see.

use std::collections::BTreeMap;
use std::fmt::Debug;

use crate::engine::{EngineSpec, OpenMode, OpenOptions};
use crate::properties::Properties;

/// A password no real text contains by chance.
pub const SECRET: &str = "s3cret-Pw-xyz";

pub fn props(pairs: &[(&str, &str)]) -> Properties {
    let mut p = Properties::new();
    for (k, v) in pairs {
        p.set(k, v);
    }
    p
}

/// `engine`'s options with [`SECRET`] as the password and port 1, where
/// nothing listens.
pub fn secret_on_port_1(engine: &str) -> Properties {
    let mut p = Properties::new();
    p.set(&format!("{engine}.password"), SECRET);
    p.set(&format!("{engine}.port"), "1");
    p
}

/// [`secret_on_port_1`] with a user (`alice`) and a connect timeout of 1 s:
/// the login of an engine over an async driver (Cassandra, MongoDB).
pub fn login_on_port_1(engine: &str) -> Properties {
    let mut p = secret_on_port_1(engine);
    p.set(&format!("{engine}.username"), "alice");
    p.set(&format!("{engine}.connect_timeout_s"), "1");
    p
}

/// Why `spec`'s engine does not open with `props`, which point it at a
/// port where nothing listens (port 1).
pub fn open_error(spec: &EngineSpec, props: &Properties) -> anyhow::Error {
    let opened = (spec.open)(&OpenOptions {
        dir: None,
        properties: props,
        mode: OpenMode::Any,
        runtime: None,
        clients: None,
    });
    opened.err().expect("no server on port 1")
}

/// `options` (made with [`SECRET`] as the password and port 1) hold it
/// (`kept`) but neither show it in their debug form nor in the `effective`
/// options a result records, and `connect_error` (nothing listens on that
/// port) names the address and `kvperf server start <server>`, never the
/// password.
pub fn assert_secret_hidden(
    server: &str,
    options: &dyn Debug,
    kept: Option<&str>,
    effective: &BTreeMap<String, String>,
    connect_error: anyhow::Error,
) {
    assert_eq!(kept, Some(SECRET));
    assert!(!format!("{options:?}").contains(SECRET));
    assert_eq!(effective["password"], "(redacted)");
    assert!(!format!("{effective:?}").contains(SECRET));
    let err = format!("{connect_error:#}");
    assert!(err.contains("127.0.0.1:1"), "{err}");
    assert!(
        err.contains(&format!("kvperf server start {server}")),
        "{err}"
    );
    assert!(!err.contains(SECRET), "{err}");
}
