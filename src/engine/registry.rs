//! The engines compiled into this kvperf, found by name and opened
//! through the seam's checks; the one place that lists them.

use super::{embedded, options, store, Engine, EngineSpec, OpenOptions, StoreKind};
use crate::error::{did_you_mean, InputError};
use crate::properties::Properties;

/// The default engine's library as loaded, named in `kvperf --version`:
/// "RocksDB 10.4.2, release library /root/.cache/kvperf/rocksdb/10.4.2/librocksdb.so".
pub fn default_engine_library() -> String {
    #[cfg(feature = "rocksdb")]
    return embedded::rocksdb_library::loaded().to_string();
    #[cfg(not(feature = "rocksdb"))]
    return "RocksDB not compiled in".to_string();
}

/// The library an embedded engine runs on as this process loaded it, when
/// it can be read at run time (`kvperf engines`).
pub fn loaded_library(engine: &str) -> Option<String> {
    match engine {
        #[cfg(feature = "rocksdb")]
        "rocksdb" => {
            let loaded = embedded::rocksdb_library::loaded();
            Some(format!(
                "RocksDB {}, {}",
                loaded.version_and_kind(),
                loaded.origin()
            ))
        }
        _ => None,
    }
}

/// Runs this command again on the engine library its properties ask for
/// (`rocksdb.version`), when another one is loaded: returns only when
/// nothing needs to change, or with the error (a release that is not
/// pinned, or lacks a function kvperf calls).
pub fn run_on_asked_library(engine: &str, props: &Properties) -> anyhow::Result<()> {
    match engine {
        #[cfg(feature = "rocksdb")]
        "rocksdb" => embedded::rocksdb_release::run_on_asked(props),
        _ => Ok(()),
    }
}

/// Checks the values of the engine options `props` give that an engine
/// would otherwise refuse only while opening, after its store was prepared.
fn check_values(engine: &str, props: &Properties) -> Result<(), InputError> {
    match engine {
        #[cfg(feature = "rocksdb")]
        "rocksdb" => embedded::rocksdb::RocksOptions::from_properties(props).map(drop),
        #[cfg(feature = "wiredtiger")]
        "wiredtiger" => embedded::wiredtiger::check_options(props),
        #[cfg(feature = "lmdb")]
        "lmdb" => embedded::lmdb::LmdbOptions::from_properties(props).map(drop),
        #[cfg(feature = "fjall")]
        "fjall" => embedded::fjall::FjallOptions::from_properties(props).map(drop),
        #[cfg(feature = "redb")]
        "redb" => embedded::redb::RedbOptions::from_properties(props).map(drop),
        #[cfg(feature = "sqlite")]
        "sqlite" => embedded::sqlite::SqliteOptions::from_properties(props).map(drop),
        _ => {
            let _ = props;
            Ok(())
        }
    }
}

/// Fetches and checks, before anything runs, the engine library `props`
/// ask for (`rocksdb.version`).
pub fn check_asked_library(engine: &str, props: &Properties) -> anyhow::Result<()> {
    match engine {
        #[cfg(feature = "rocksdb")]
        "rocksdb" => embedded::rocksdb_release::check_asked(props),
        _ => {
            let _ = props;
            Ok(())
        }
    }
}
/// Lists the engines: for each, its name (also the Cargo feature that
/// compiles it in) and its module, for [`registry`] and [`KNOWN_ENGINES`].
/// The modules themselves are declared in their folders (`embedded/mod.rs`,
/// `server/mod.rs`) with plain `#[cfg(feature = ...)] mod` lines, so every
/// engine file is reached by `cargo fmt`.
macro_rules! engines {
    ($($name:literal => $folder:ident::$module:ident),* $(,)?) => {
        /// Every engine this kvperf knows, compiled in or not, with the Cargo
        /// feature that enables it: for "not compiled in" errors.
        pub const KNOWN_ENGINES: &[(&str, &str)] = &[("null", ""), $(($name, $name)),*];

        /// Every engine compiled into this binary.
        pub fn registry() -> Vec<&'static EngineSpec> {
            #[allow(unused_mut)]
            let mut specs = vec![&embedded::null::SPEC];
            $(
                #[cfg(feature = $name)]
                specs.push(&super::$folder::$module::SPEC);
            )*
            specs
        }
    };
}

engines! {
    "rocksdb" => embedded::rocksdb,
    "wiredtiger" => embedded::wiredtiger,
    "lmdb" => embedded::lmdb,
    "sqlite" => embedded::sqlite,
    "fjall" => embedded::fjall,
    "redb" => embedded::redb,
    "cassandra" => server::cassandra,
    "mongodb" => server::mongodb,
    "redis" => server::redis,
    "postgres" => server::postgres,
}

pub fn find(name: &str) -> Result<&'static EngineSpec, InputError> {
    let specs = registry();
    if let Some(spec) = specs.iter().find(|s| s.name == name) {
        return Ok(spec);
    }
    let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
    if let Some((_, feature)) = KNOWN_ENGINES.iter().find(|(n, _)| *n == name) {
        return Err(InputError::Invalid(format!(
            "engine '{name}' is not compiled into this kvperf; rebuild with `cargo build --release --features {feature}` (compiled in: {})",
            names.join(", ")
        )));
    }
    let known = KNOWN_ENGINES.iter().map(|(n, _)| *n);
    let hint = did_you_mean(name, known)
        .map(|n| format!(" (did you mean '{n}'?)"))
        .unwrap_or_default();
    Err(InputError::Invalid(format!(
        "unknown engine '{name}'{hint}; available: {}",
        names.join(", ")
    )))
}

/// Opens `spec` after checking its options and, for a directory engine,
/// preparing (and marking) its data directory: a fresh store is only ever
/// made in a directory kvperf created, and only the engine's own files
/// are removed.
pub fn open(spec: &EngineSpec, opts: &OpenOptions) -> anyhow::Result<Box<dyn Engine>> {
    options::check_names(spec, opts.properties)?;
    // Before the directory is claimed or emptied: a `--fresh` with a bad
    // option emptied the store, then refused the option.
    check_values(spec.name, opts.properties)?;
    let lock = match (spec.store, opts.dir) {
        (StoreKind::Directory { .. }, None) => {
            return Err(InputError::Invalid(format!(
                "engine '{}' keeps its data in a directory: give --db DIR",
                spec.name
            ))
            .into())
        }
        (StoreKind::Directory { .. }, Some(dir)) => store::prepare(spec, dir, opts.mode)?,
        (_, Some(dir)) => {
            return Err(InputError::Invalid(format!(
                "engine '{}' keeps no data directory, so --db '{}' has no use; drop it{}",
                spec.name,
                dir.display(),
                if matches!(spec.store, StoreKind::Server { .. }) {
                    format!(
                        " (the server's address comes from -p {}.host and {}.port)",
                        spec.name, spec.name
                    )
                } else {
                    String::new()
                }
            ))
            .into())
        }
        (_, None) => None,
    };
    let engine = (spec.open)(opts)?;
    Ok(match lock {
        Some(lock) => Box::new(super::locked::Locked { engine, lock }),
        None => engine,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{AsyncOps, Capability, KvSupport};

    #[test]
    fn a_missing_capability_names_the_engines_that_have_it() {
        let err = embedded::null::SPEC
            .require(Capability::Compact, "settle = \"compact\"")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("engine 'null' cannot compact"), "{err}");
        assert!(err.contains("settle = \"compact\""), "{err}");
        assert!(embedded::null::SPEC
            .require(Capability::Kv(KvSupport::Point), "x")
            .is_ok());
    }

    #[test]
    fn clients_run_as_tasks_by_default_only_where_the_engine_says() {
        let lone_on_a_thread = AsyncOps::ByDefaultFrom(2);
        assert!(!lone_on_a_thread.tasks_by_default(1));
        assert!(lone_on_a_thread.tasks_by_default(2));
        assert!(lone_on_a_thread.tasks_by_default(64));
        assert!(AsyncOps::ByDefault.tasks_by_default(1));
        assert!(!AsyncOps::OnRequest.tasks_by_default(64));
        assert!(!AsyncOps::Unavailable.tasks_by_default(64));
        #[cfg(feature = "redis")]
        {
            let redis = find("redis").expect("compiled in").capabilities.async_ops;
            assert!(!redis.tasks_by_default(1), "a lone Redis client: a thread");
            assert!(redis.tasks_by_default(4));
        }
    }

    #[test]
    fn unknown_engines_get_a_hint_and_known_ones_their_feature() {
        let err = find("rocksbd").err().expect("unknown").to_string();
        assert!(err.contains("did you mean 'rocksdb'"), "{err}");
    }
}
