//! Opening an engine through the seam's checks: its options, then, for a
//! directory engine, its data directory prepared and locked
//! (`store.rs`), before the engine's own `open` runs.

use super::{loaded_keys, options, store, Engine, EngineSpec, OpenMode, OpenOptions, StoreKind};
use crate::error::InputError;

/// Opens `spec` after checking its options and, for a directory engine,
/// preparing (and marking) its data directory: a fresh store is only ever
/// made in a directory kvperf created, and only the engine's own files
/// are removed.
pub fn open(spec: &EngineSpec, opts: &OpenOptions) -> anyhow::Result<Box<dyn Engine>> {
    options::check_names(spec, opts.properties)?;
    // Before the directory is claimed or emptied: a `--fresh` with a bad
    // option emptied the store, then refused the option.
    check_values(spec.name, opts)?;
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
    let engine = (spec.open)(opts).map_err(|e| unfinished_store(spec, opts, e))?;
    Ok(match lock {
        Some(lock) => Box::new(super::locked::Locked { engine, lock }),
        None => engine,
    })
}

/// The engine's refusal to open a store kvperf made in which no load
/// finished (its ledger is empty), said in one line with its remedy: a
/// load stopped while the engine was making its files leaves such a store
/// (redb writes its magic number last, so a kill before it leaves a file
/// redb refuses). Any other refusal stays the engine's own failure.
fn unfinished_store(spec: &EngineSpec, opts: &OpenOptions, e: anyhow::Error) -> anyhow::Error {
    let Some(dir) = opts.dir else { return e };
    if opts.mode == OpenMode::Fresh || e.is::<InputError>() {
        return e;
    }
    match loaded_keys::loaded(dir) {
        Ok(Some(keys)) if keys.is_empty() => InputError::Invalid(format!(
            "--db '{}' holds a {name} store in which no load finished (a load stopped while {name} was making its files leaves it so), and {name} cannot open it ({e:#}); load it again with `kvperf load --fresh`",
            dir.display(),
            name = spec.name,
        ))
        .into(),
        _ => e,
    }
}

/// Checks the values of the engine options `props` give that an engine
/// would otherwise refuse only while opening, after its store was prepared
/// (the store's directory if given, for paths its options name; the
/// clients the command starts, for a limit on them).
fn check_values(engine: &str, opts: &OpenOptions) -> Result<(), InputError> {
    let (props, dir) = (opts.properties, opts.dir);
    match engine {
        #[cfg(feature = "rocksdb")]
        "rocksdb" => super::embedded::rocksdb::check_options(props),
        #[cfg(feature = "wiredtiger")]
        "wiredtiger" => super::embedded::wiredtiger::check_options(props, dir),
        #[cfg(feature = "lmdb")]
        "lmdb" => super::embedded::lmdb::check_options(props, opts.clients),
        #[cfg(feature = "fjall")]
        "fjall" => super::embedded::fjall::FjallOptions::from_properties(props).map(drop),
        #[cfg(feature = "redb")]
        "redb" => super::embedded::redb::RedbOptions::from_properties(props).map(drop),
        #[cfg(feature = "sqlite")]
        "sqlite" => super::embedded::sqlite::SqliteOptions::from_properties(props).map(drop),
        _ => {
            let _ = (props, dir);
            Ok(())
        }
    }
}
