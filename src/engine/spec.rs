//! An engine's entry in the registry ([`EngineSpec`]): its name, where it
//! keeps its data, its capabilities and options, and how it opens.

use std::path::{Path, PathBuf};

use super::{
    registry, store, Capabilities, Capability, DbBenchFlags, Engine, EngineOption, KvSupport,
    StoreKind,
};
use crate::error::InputError;
use crate::properties::Properties;

/// How `open` treats what is already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Start from an empty store: the engine removes its own data first
    /// (a YCSB load, a db_bench fill).
    Fresh,
    /// The store must exist already (`--use_existing_db`, settle).
    Existing,
    /// Use what is there, creating an empty store if there is none (a YCSB run).
    Any,
}

/// How to open an engine.
pub struct OpenOptions<'a> {
    /// The data directory, for [`StoreKind::Directory`] engines only.
    pub dir: Option<&'a Path>,
    /// Every property: an engine reads its own `<name>.` options.
    pub properties: &'a Properties,
    pub mode: OpenMode,
    /// The runner's runtime when the run's clients are tasks (an engine
    /// with [`Capabilities::async_ops`]): the engine runs its driver on it
    /// and starts no runtime of its own. None otherwise.
    pub runtime: Option<&'a tokio::runtime::Handle>,
    /// The most client threads the command will start, when it knows:
    /// an engine's limit on them (`lmdb.max_readers`) is checked before
    /// a `--fresh` empties its store.
    pub clients: Option<usize>,
}

impl OpenOptions<'_> {
    /// The data directory of a directory engine (checked by [`open`]).
    pub fn dir(&self) -> anyhow::Result<&Path> {
        self.dir
            .ok_or_else(|| anyhow::anyhow!("internal: a directory engine opened without --db"))
    }
}

pub struct EngineSpec {
    pub name: &'static str,
    pub about: &'static str,
    /// The Cargo feature that compiles the engine in.
    pub feature: &'static str,
    pub store: StoreKind,
    pub capabilities: Capabilities,
    /// The `-p <name>.<option>` options, with defaults and meaning.
    pub options: &'static [EngineOption],
    pub open: fn(&OpenOptions) -> anyhow::Result<Box<dyn Engine>>,
    /// Maps db_bench's engine flags (`--cache_size`, `--sync`...) onto the
    /// engine's options; returns the flags it cannot honour.
    pub db_bench: fn(&DbBenchFlags, &mut Properties) -> Vec<&'static str>,
}

impl EngineSpec {
    /// Files the engine writes beside a step's result, named by its own
    /// options (RocksDB's query trace, a new file at each open): a plan
    /// checks that no two of its steps write one.
    pub fn files_written(&self, props: &Properties) -> Vec<(&'static str, PathBuf)> {
        const ROCKSDB_TRACE: &str = "rocksdb.trace";
        match props.get(ROCKSDB_TRACE) {
            Some(path) if self.name == "rocksdb" && !path.is_empty() => {
                vec![(ROCKSDB_TRACE, PathBuf::from(path))]
            }
            _ => Vec::new(),
        }
    }

    pub fn uses_data_dir(&self) -> bool {
        matches!(self.store, StoreKind::Directory { .. })
    }

    pub fn has(&self, capability: Capability) -> bool {
        let c = &self.capabilities;
        match capability {
            Capability::Compact => c.compact,
            Capability::Kv(level) => c.kv >= level,
            Capability::Adopt => c.adopt,
            Capability::AsyncOps => c.async_ops.available(),
            Capability::StatsReport => c.stats_report,
        }
    }

    /// One clear error when the engine lacks `capability`; `asked_by` says
    /// which flag or plan setting asked for it.
    pub fn require(&self, capability: Capability, asked_by: &str) -> Result<(), InputError> {
        if self.has(capability) {
            return Ok(());
        }
        let what = match capability {
            Capability::Compact => "cannot compact its store",
            Capability::Kv(KvSupport::Ordered) => "cannot iterate keys in order",
            Capability::Kv(_) => "has no raw key-value access",
            Capability::Adopt => "cannot adopt a store kvperf did not load",
            Capability::AsyncOps => "has no async operations; its clients run on threads",
            Capability::StatsReport => "keeps no report of its own state",
        };
        let able: Vec<&str> = registry()
            .into_iter()
            .filter(|s| s.has(capability))
            .map(|s| s.name)
            .collect();
        Err(InputError::Invalid(format!(
            "engine '{}' {what} ({asked_by}); engines that can: {}",
            self.name,
            if able.is_empty() {
                "none in this build".into()
            } else {
                able.join(", ")
            }
        )))
    }

    /// Whether `dir` holds this engine's files (a directory engine): a
    /// store kvperf made is still there. Never a claim on a directory.
    pub fn recognizes(&self, dir: &Path) -> bool {
        match self.store {
            StoreKind::Directory { owns, .. } => store::holds_owned(dir, owns),
            _ => false,
        }
    }
}
