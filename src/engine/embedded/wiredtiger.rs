//! WiredTiger (MongoDB's storage engine, a B-tree with snapshot isolation)
//! through Debian's `libwiredtiger` and a flat C shim (`csrc/wt_shim.c`).
//!
//! One `WT_CONNECTION` per engine; every worker (runner thread) has its own
//! `WT_SESSION` and cursors, since sessions are single-threaded and the
//! connection is not. All YCSB tables share `table:usertable`
//! (`key_format=u,value_format=u`); a record is one value in the encoding of
//! YCSB's RocksDB binding ([`super::record::codec`]), as in the RocksDB
//! engine, so sizes compare. `update` reads, merges and writes the record
//! back inside one transaction, retried when WiredTiger reports a conflict.
//!
//! Durability: with the log on (the default), a commit is in the log; with
//! `sync`, the log is fsynced at every commit. Without the log only a
//! checkpoint makes writes durable: `settle` and `close` take one.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::ptr::null_mut;
use std::sync::Mutex;

use super::options::{set_unless_given, OptionValues};
use super::record::codec;
use super::{
    ready_client, Activity, Capabilities, ClientSlot, DbBenchFlags, Engine, EngineDirs, EngineInfo,
    EngineOption, EngineSpec, EventKind, EventSupport, OpError, OpResult, OpenMode, OpenOptions,
    Operations, Record, ScanResults, SetupFuture, StoreKind, EMBEDDED,
};
use crate::error::InputError;
use crate::properties::Properties;

pub static SPEC: EngineSpec = EngineSpec {
    name: "wiredtiger",
    about: "embedded WiredTiger (B-tree, MongoDB's engine) via Debian's libwiredtiger",
    feature: "wiredtiger",
    // A log directory (`journal`) holds WiredTiger's log files only.
    store: StoreKind::Directory {
        owns,
        dirs: Some(EngineDirs {
            at: &["journal"],
            holds: owns,
        }),
    },
    capabilities: Capabilities {
        // Eviction threads write dirty pages out of the cache, a checkpoint
        // server thread runs every `checkpoint` seconds and a log server
        // thread writes and removes log files; settle takes a checkpoint,
        // which waits for a running one and leaves the cache clean.
        background_work: true,
        compact: true,
        // Its connection statistics (opened with statistics=(fast), as
        // MongoDB opens it): see `activity`.
        events: EventSupport::Reports(&[EventKind::Checkpoint, EventKind::Eviction]),
        ..EMBEDDED
    },
    options: &[
        EngineOption { name: "cache_size", default: "104857600", help: "cache bytes (wiredtiger_open cache_size; WiredTiger's default, 100 MiB); the cache holds clean and dirty pages alike" },
        EngineOption { name: "checkpoint", default: "60", help: "seconds between checkpoints (checkpoint=(wait=N), MongoDB's 60); 0 = no periodic checkpoints" },
        EngineOption { name: "log", default: "true", help: "write-ahead log (log=(enabled=...)); without it only checkpoints make writes durable" },
        EngineOption { name: "sync", default: "false", help: "fsync the log at every commit (transaction_sync=(enabled=true,method=fsync)); needs log=true" },
        EngineOption { name: "block_compressor", default: "snappy", help: "none, snappy or zlib: the compressors Debian's libwiredtiger0 ships, loaded as extensions (no lz4 or zstd there); MongoDB's default is snappy" },
        EngineOption { name: "leaf_page_size", default: "32768", help: "leaf page bytes (table leaf_page_max), a multiple of 4096 up to 512 MiB" },
        EngineOption { name: "config", default: "", help: "more wiredtiger_open configuration, appended last (so it wins), e.g. eviction=(threads_max=4)" },
    ],
    open,
    db_bench: map_db_bench_flags,
};

/// WiredTiger's own entries in its home directory: its metadata and lock
/// files (`WiredTiger`, `WiredTiger.basecfg`, `.lock`, `.turtle`, `.wt`,
/// `.backup`, `.turtle.set`...), the history or lookaside file
/// (`WiredTigerHS.wt`, `WiredTigerLAS.wt`), statistics logs, log files
/// (`WiredTigerLog.*`, `WiredTigerPreplog.*`, `WiredTigerTmplog.*`), the
/// table kvperf makes (`usertable.wt`) and MongoDB's `journal` log directory
/// (`config=log=(path=journal)`).
fn owns(name: &str) -> bool {
    const PREFIXES: [&str; 6] = [
        "WiredTiger.",
        "WiredTigerLog.",
        "WiredTigerPreplog.",
        "WiredTigerTmplog.",
        "WiredTigerStat.",
        "WiredTigerHS.",
    ];
    // WiredTiger reads a `WiredTiger.config` but never writes one: a user's.
    if name == "WiredTiger.config" {
        return false;
    }
    name == "WiredTiger"
        || name == "WiredTigerLAS.wt"
        || name == "journal"
        || PREFIXES.iter().any(|p| name.starts_with(p))
        // kvperf's one table: another `*.wt` is a user's (`--fresh`
        // deleted a user's `mine.wt`).
        || name == "usertable.wt"
}

const URI: &CStr = c"table:usertable";
/// Snapshot isolation, as MongoDB opens its sessions: WiredTiger 3.2's
/// default, read-committed, takes a new snapshot for each operation of a
/// transaction, so update's read-modify-write could lose a concurrent
/// update instead of getting WT_ROLLBACK.
const SESSION_CONFIG: &CStr = c"isolation=snapshot";
/// Where the compressor extensions are (`pkg-config --variable=libdir
/// wiredtiger` at build time).
const EXTENSION_DIR: &str = env!("KVPERF_WT_LIBDIR");
/// Attempts of an operation that WiredTiger rolls back on a write conflict.
const MAX_ATTEMPTS: usize = 100;
const CORRUPT: &str = "stored value is not a kvperf/YCSB record";
/// Sizes that allocate memory up front are bounded, so a typo is an error
/// and not an allocation that kills the machine.
const MAX_MEMORY_OPTION: u64 = 1 << 40;

// WiredTiger's return codes (wiredtiger.h).
pub const WT_ROLLBACK: c_int = -31800;
pub const WT_NOTFOUND: c_int = -31803;
pub const WT_PREPARE_CONFLICT: c_int = -31808;

/// The C shim's calls (csrc/), for callers that drive WiredTiger's own
/// cursor API (bench/engine_loop.rs).
pub mod ffi {
    use std::ffi::{c_char, c_int, c_void};

    extern "C" {
        pub fn kvperf_wt_last_error() -> *const c_char;
        pub fn kvperf_wt_strerror(r: c_int) -> *const c_char;
        pub fn kvperf_wt_version() -> *const c_char;
        pub fn kvperf_wt_open(
            home: *const c_char,
            config: *const c_char,
            conn: *mut *mut c_void,
        ) -> c_int;
        pub fn kvperf_wt_config_validate(config: *const c_char) -> c_int;
        pub fn kvperf_wt_config_parser_open(
            config: *const c_char,
            len: usize,
            parser: *mut *mut c_void,
        ) -> c_int;
        pub fn kvperf_wt_config_parser_next(
            parser: *mut c_void,
            key: *mut *const c_char,
            key_len: *mut usize,
            value: *mut *const c_char,
            value_len: *mut usize,
            structure: *mut c_int,
        ) -> c_int;
        pub fn kvperf_wt_config_parser_close(parser: *mut c_void) -> c_int;
        pub fn kvperf_wt_close(conn: *mut c_void, config: *const c_char) -> c_int;
        pub fn kvperf_wt_open_session(
            conn: *mut c_void,
            config: *const c_char,
            session: *mut *mut c_void,
        ) -> c_int;
        pub fn kvperf_wt_session_close(session: *mut c_void) -> c_int;
        pub fn kvperf_wt_create(
            session: *mut c_void,
            uri: *const c_char,
            config: *const c_char,
        ) -> c_int;
        pub fn kvperf_wt_checkpoint(session: *mut c_void, config: *const c_char) -> c_int;
        pub fn kvperf_wt_compact(
            session: *mut c_void,
            uri: *const c_char,
            config: *const c_char,
        ) -> c_int;
        pub fn kvperf_wt_begin(session: *mut c_void, config: *const c_char) -> c_int;
        pub fn kvperf_wt_commit(session: *mut c_void, config: *const c_char) -> c_int;
        pub fn kvperf_wt_rollback(session: *mut c_void) -> c_int;
        pub fn kvperf_wt_open_cursor(
            session: *mut c_void,
            uri: *const c_char,
            config: *const c_char,
            cursor: *mut *mut c_void,
        ) -> c_int;
        pub fn kvperf_wt_reset(cursor: *mut c_void) -> c_int;
        pub fn kvperf_wt_value(cursor: *mut c_void, v: *mut *const u8, vl: *mut usize) -> c_int;
        pub fn kvperf_wt_entry(
            cursor: *mut c_void,
            k: *mut *const u8,
            kl: *mut usize,
            v: *mut *const u8,
            vl: *mut usize,
        ) -> c_int;
        pub fn kvperf_wt_search(
            cursor: *mut c_void,
            k: *const u8,
            kl: usize,
            v: *mut *const u8,
            vl: *mut usize,
        ) -> c_int;
        pub fn kvperf_wt_seek(cursor: *mut c_void, k: *const u8, kl: usize) -> c_int;
        pub fn kvperf_wt_first(cursor: *mut c_void) -> c_int;
        pub fn kvperf_wt_next(cursor: *mut c_void) -> c_int;
        pub fn kvperf_wt_insert(
            cursor: *mut c_void,
            k: *const u8,
            kl: usize,
            v: *const u8,
            vl: usize,
        ) -> c_int;
        pub fn kvperf_wt_update_here(cursor: *mut c_void, v: *const u8, vl: usize) -> c_int;
        pub fn kvperf_wt_remove(cursor: *mut c_void, k: *const u8, kl: usize) -> c_int;
        #[cfg(test)]
        pub fn kvperf_wt_event_stats_count() -> c_int;
        pub fn kvperf_wt_event_stats(session: *mut c_void, values: *mut i64, n: c_int) -> c_int;
    }
}

/// How many statistics `kvperf_wt_event_stats` reads (its list in
/// csrc/wt_shim.c, in the order `activity` names them).
const EVENT_STATS: usize = 7;

/// WiredTiger's words for a failed call on this thread: the message its
/// event handler reported, else the code's `wiredtiger_strerror` text.
fn message(code: c_int) -> String {
    // SAFETY: both return NUL-terminated strings: the shim's thread-local
    // buffer (read on the thread that made the call) or a static string.
    let text = unsafe {
        let last = CStr::from_ptr(ffi::kvperf_wt_last_error());
        if last.is_empty() {
            CStr::from_ptr(ffi::kvperf_wt_strerror(code))
        } else {
            last
        }
    };
    text.to_string_lossy().replace('\n', " ")
}

fn check(code: c_int) -> Result<(), String> {
    if code == 0 {
        Ok(())
    } else {
        Err(message(code))
    }
}

fn failed(code: c_int) -> OpError {
    OpError::failed(message(code))
}

/// The library's version line, e.g. "WiredTiger 3.2.1: (August 27, 2019)".
pub fn library_version() -> String {
    // SAFETY: wiredtiger_version returns a static NUL-terminated string.
    unsafe { CStr::from_ptr(ffi::kvperf_wt_version()) }
        .to_string_lossy()
        .into_owned()
}

/// Options kvperf sets, each settable with `-p wiredtiger.<name>=`.
#[derive(Debug, Clone, PartialEq)]
pub struct WtOptions {
    pub cache_size: u64,
    pub checkpoint: u64,
    pub log: bool,
    pub sync: bool,
    pub block_compressor: String,
    pub leaf_page_size: u64,
    pub config: String,
    pub effective: BTreeMap<String, String>,
}

impl WtOptions {
    pub fn from_properties(props: &Properties) -> Result<Self, InputError> {
        // WiredTiger adds WIREDTIGER_CONFIG from the environment to every
        // open's configuration, unchecked here and recorded nowhere: a
        // `log=(path=DIR)` left in the shell wrote the log outside --db, and
        // recovered and removed another store's log in DIR.
        if std::env::var_os("WIREDTIGER_CONFIG").is_some_and(|v| !v.is_empty()) {
            return Err(InputError::Invalid(
                "WIREDTIGER_CONFIG is set in the environment: WiredTiger would add it to kvperf's configuration, unchecked and unrecorded (a log path in it puts files outside --db); unset it and give its settings with -p wiredtiger.config=...".into(),
            ));
        }
        let v = OptionValues::new(&SPEC, props);
        let cache_size = v.u64_at_most("cache_size", MAX_MEMORY_OPTION)?;
        if cache_size < 1 << 20 {
            return Err(InputError::property(
                "wiredtiger.cache_size",
                format!("{cache_size} is less than WiredTiger's smallest cache, 1048576 (1 MiB)"),
            ));
        }
        let leaf_page_size = v.u64_at_most("leaf_page_size", 512 << 20)?;
        if leaf_page_size == 0 || leaf_page_size % 4096 != 0 {
            return Err(InputError::property(
                "wiredtiger.leaf_page_size",
                format!(
                    "{leaf_page_size} is not a multiple of 4096 (WiredTiger's allocation size)"
                ),
            ));
        }
        let log = v.bool("log")?;
        let sync = v.bool("sync")?;
        if sync && !log {
            return Err(InputError::Invalid(
                "wiredtiger.sync=true needs wiredtiger.log=true: without the log, only a checkpoint makes a write durable"
                    .into(),
            ));
        }
        let block_compressor = v.choice("block_compressor", &["none", "snappy", "zlib"])?;
        if block_compressor != "none" && !extension(&block_compressor).exists() {
            return Err(InputError::property(
                "wiredtiger.block_compressor",
                format!(
                    "'{block_compressor}' needs {}, which is not installed (apt-get install libwiredtiger0); use none",
                    extension(&block_compressor).display()
                ),
            ));
        }
        let config = v.text("config");
        if config.contains('\0') {
            return Err(InputError::property(
                "wiredtiger.config",
                "contains a NUL byte",
            ));
        }
        // Checked whole first: WiredTiger's parser, given no session, prints
        // its refusal on stderr; its check keeps it for kvperf's one line.
        let text = CString::new(config.as_str()).expect("checked for NUL bytes");
        // SAFETY: a NUL-terminated string; nothing is opened.
        let code = unsafe { ffi::kvperf_wt_config_validate(text.as_ptr()) };
        if code != 0 {
            return Err(InputError::property(
                "wiredtiger.config",
                format!("WiredTiger refused it ({})", message(code)),
            ));
        }
        if let Some(path) = a_path_outside_home(&config).map_err(|why| {
            InputError::property(
                "wiredtiger.config",
                format!("WiredTiger cannot read it: {why}"),
            )
        })? {
            return Err(InputError::property(
                "wiredtiger.config",
                format!(
                    "{path} puts WiredTiger's files outside --db, into a directory kvperf did not make (WiredTiger recovers from and removes the log files it finds there, another store's too); kvperf keeps the whole store in --db, the directory it marks, empties and measures: give a path inside it (log=(path=journal)) or leave it out"
                ),
            ));
        }
        Ok(Self {
            cache_size,
            checkpoint: v.u64_at_most("checkpoint", 100_000)?,
            log,
            sync,
            block_compressor,
            leaf_page_size,
            config,
            effective: v.effective(),
        })
    }

    /// The `wiredtiger_open` configuration string.
    pub fn open_config(&self, create: bool) -> String {
        let mut c = String::new();
        if create {
            c.push_str("create,");
        }
        c.push_str(&format!(
            "cache_size={},checkpoint=(wait={}),log=(enabled={}),\
             transaction_sync=(enabled={},method=fsync),session_max=1024,\
             statistics=(fast)",
            self.cache_size, self.checkpoint, self.log, self.sync
        ));
        if self.block_compressor != "none" {
            c.push_str(&format!(
                ",extensions=[\"{}\"]",
                extension(&self.block_compressor).display()
            ));
        }
        if !self.config.is_empty() {
            c.push(',');
            c.push_str(&self.config);
        }
        c
    }

    /// The configuration `table:usertable` is created with.
    pub fn table_config(&self) -> String {
        format!(
            "key_format=u,value_format=u,block_compressor={},leaf_page_max={}",
            self.block_compressor, self.leaf_page_size
        )
    }
}

/// One setting of a WiredTiger configuration string as WiredTiger's own
/// parser reads it (quoted or bare, `=` or `:`, `()`, `[]` or `{}`): the
/// keys that lead to it (`log`, `path` for `log=(path=x)`,
/// `log:{"path":"x"}` and `log.path=x` alike), its value without quotes,
/// and whether that value is a structure.
struct Setting {
    keys: Vec<String>,
    value: String,
    structure: bool,
}

/// Every setting of `config`, the settings inside structures too, or
/// WiredTiger's reason it cannot read `config`.
fn settings(config: &str) -> Result<Vec<Setting>, String> {
    let mut all = vec![];
    read_settings(config.as_bytes(), &[], &mut all)?;
    Ok(all)
}

fn read_settings(text: &[u8], keys: &[String], all: &mut Vec<Setting>) -> Result<(), String> {
    let mut parser = null_mut();
    // SAFETY: `text` outlives the parser, closed below.
    let code =
        unsafe { ffi::kvperf_wt_config_parser_open(text.as_ptr().cast(), text.len(), &mut parser) };
    if code != 0 {
        return Err(message(code));
    }
    let read = |ptr: *const c_char, len: usize| {
        if len == 0 {
            return String::new();
        }
        // SAFETY: WiredTiger's item points into `text`, `len` bytes long.
        let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
        String::from_utf8_lossy(bytes).into_owned()
    };
    let result = loop {
        let (mut key, mut key_len) = (std::ptr::null(), 0);
        let (mut value, mut value_len, mut structure) = (std::ptr::null(), 0, 0);
        // SAFETY: an open parser; the out-pointers are this frame's.
        let code = unsafe {
            ffi::kvperf_wt_config_parser_next(
                parser,
                &mut key,
                &mut key_len,
                &mut value,
                &mut value_len,
                &mut structure,
            )
        };
        if code == WT_NOTFOUND {
            break Ok(());
        }
        if code != 0 {
            break Err(message(code));
        }
        let key = read(key, key_len);
        let value = read(value, value_len);
        let mut path = keys.to_vec();
        // WiredTiger finds `log.path` as a key of its own too; an
        // extension's key is a file name, dots and all.
        if keys == ["extensions"] {
            path.push(key);
        } else {
            path.extend(key.split('.').map(str::to_string));
        }
        let structure = structure != 0;
        if structure {
            if let Err(e) = read_settings(value.as_bytes(), &path, all) {
                break Err(e);
            }
        }
        all.push(Setting {
            keys: path,
            value,
            structure,
        });
    };
    // SAFETY: the parser opened above, closed once.
    unsafe { ffi::kvperf_wt_config_parser_close(parser) };
    result
}

/// Whether a setting names a directory WiredTiger writes into
/// (`log.path`, `statistics_log.path`, `operation_tracking.path`; newer
/// WiredTigers' `chunk_cache.storage_path`, `tiered_storage.bucket`).
fn names_a_directory(setting: &Setting) -> bool {
    setting
        .keys
        .last()
        .is_some_and(|k| k.ends_with("path") || k == "bucket" || k == "home")
}

/// The first setting of `config` that would have WiredTiger write outside
/// its home, the store's directory, or load code from outside WiredTiger's
/// own extensions, said as `path=/srv/wal (log.path)`: a directory that is
/// absolute or leads through `..`, or an extension library kvperf did not
/// install with WiredTiger. Err: WiredTiger cannot read `config`.
fn a_path_outside_home(config: &str) -> Result<Option<String>, String> {
    let outside = |path: &Path| {
        path.is_absolute()
            || path
                .components()
                .any(|c| c == std::path::Component::ParentDir)
    };
    for setting in settings(config)? {
        let dotted = setting.keys.join(".");
        if setting.keys[0] == "extensions" {
            let library = match setting.keys.get(1) {
                Some(library) => Path::new(library),
                None if setting.structure || setting.value.is_empty() => continue,
                None => Path::new(&setting.value),
            };
            let installed = library.parent() == Some(Path::new(EXTENSION_DIR))
                && !outside(library.strip_prefix(EXTENSION_DIR).unwrap_or(library));
            if !installed {
                return Ok(Some(format!(
                    "extensions=[{}] (a library WiredTiger would load and run, not one of its own in {EXTENSION_DIR})",
                    library.display()
                )));
            }
            continue;
        }
        if !names_a_directory(&setting) {
            continue;
        }
        let last = setting.keys.last().map(String::as_str).unwrap_or_default();
        if setting.structure || outside(Path::new(&setting.value)) {
            return Ok(Some(format!("{last}={} ({dotted})", setting.value)));
        }
    }
    Ok(None)
}

/// The first directory `config` names (each relative to `home`, as
/// WiredTiger takes it) that is not a real directory in `home`: a
/// symbolic link on its way (to another store's log directory), a file,
/// or one that holds a link among WiredTiger's files (a hard link to
/// another store's log file). A directory not made yet is made by
/// WiredTiger inside `home`.
fn a_directory_not_in_home(home: &Path, config: &str) -> Result<Option<String>, String> {
    for setting in settings(config)? {
        if setting.keys[0] == "extensions" || !names_a_directory(&setting) {
            continue;
        }
        let mut at = home.to_path_buf();
        let mut real = true;
        for part in Path::new(&setting.value).components() {
            if part == std::path::Component::CurDir {
                continue;
            }
            at.push(part);
            match std::fs::symlink_metadata(&at) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Ok(Some(format!(
                        "path={} ({}): '{}' is a symbolic link",
                        setting.value,
                        setting.keys.join("."),
                        at.display()
                    )))
                }
                Ok(meta) if !meta.is_dir() => {
                    return Ok(Some(format!(
                        "path={} ({}): '{}' is not a directory",
                        setting.value,
                        setting.keys.join("."),
                        at.display()
                    )))
                }
                Ok(_) => {}
                Err(_) => {
                    real = false;
                    break;
                }
            }
        }
        if real {
            let odd =
                crate::engine::store::odd_among_owned(&at, owns).map_err(|e| format!("{e:#}"))?;
            if let Some((path, odd)) = odd {
                return Ok(Some(format!(
                    "path={} ({}): '{}' is {}",
                    setting.value,
                    setting.keys.join("."),
                    path.display(),
                    odd.what()
                )));
            }
        }
    }
    Ok(None)
}

/// The shared object of a compressor extension.
fn extension(name: &str) -> PathBuf {
    Path::new(EXTENSION_DIR).join(format!("libwiredtiger_{name}.so"))
}

/// db_bench's engine flags as WiredTiger options. db_bench's `--cache_size`
/// is a block cache of compressed blocks beside the memtables, WiredTiger's
/// cache holds every page; it is still the nearest meaning.
fn map_db_bench_flags(flags: &DbBenchFlags, props: &mut Properties) -> Vec<&'static str> {
    let mut honoured = vec![];
    let mut settings = vec![];
    if let Some(bytes) = flags.cache_size {
        settings.push(("cache_size", bytes.max(1 << 20).to_string()));
        honoured.push("cache_size");
    }
    let wal = !flags.disable_wal.unwrap_or(false);
    if flags.disable_wal.is_some() {
        settings.push(("log", wal.to_string()));
        honoured.push("disable_wal");
    }
    if let Some(sync) = flags.sync {
        // Without the log there is nothing to sync at a commit.
        if wal || !sync {
            settings.push(("sync", sync.to_string()));
            honoured.push("sync");
        }
    }
    if let Some(name) = &flags.compression_type {
        let name = match name.as_str() {
            "no" => "none",
            other => other,
        };
        if ["none", "snappy", "zlib"].contains(&name) {
            settings.push(("block_compressor", name.to_string()));
            honoured.push("compression_type");
        }
    }
    for (name, value) in settings {
        set_unless_given(props, &SPEC, name, &value);
    }
    flags.not_honoured(&honoured)
}

/// The options `props` give, checked as `wiredtiger_open` would check its
/// configuration (`wiredtiger.config` included) but with nothing opened:
/// before a `--fresh` empties the store, which a refused configuration
/// emptied first.
pub fn check_options(props: &Properties, dir: Option<&Path>) -> Result<(), InputError> {
    let options = WtOptions::from_properties(props)?;
    if let Some(dir) = dir {
        check_directories(dir, &options.config)?;
    }
    let config = options.open_config(true);
    let text = CString::new(config.as_str()).expect("checked for NUL bytes");
    // SAFETY: a NUL-terminated string; nothing is opened.
    let code = unsafe { ffi::kvperf_wt_config_validate(text.as_ptr()) };
    if code != 0 {
        return Err(InputError::Invalid(format!(
            "WiredTiger refused its configuration ({}); configuration: {config}",
            message(code)
        )));
    }
    Ok(())
}

/// Refuses a directory `wiredtiger.config` names that leads out of `dir`
/// through a link, or holds a link among WiredTiger's files.
fn check_directories(dir: &Path, config: &str) -> Result<(), InputError> {
    if !dir.is_dir() {
        return Ok(());
    }
    let found = a_directory_not_in_home(dir, config)
        .map_err(|why| InputError::property("wiredtiger.config", why))?;
    match found {
        Some(path) => Err(InputError::property(
            "wiredtiger.config",
            format!(
                "{path}: WiredTiger would write through it, outside --db '{}', into files kvperf did not make (it recovers from and removes the log files it finds there, another store's too); give a real directory inside --db (log=(path=journal)) or leave it out",
                dir.display()
            ),
        )),
        None => Ok(()),
    }
}

fn open(opts: &OpenOptions) -> anyhow::Result<Box<dyn Engine>> {
    Ok(Box::new(open_store(opts)?))
}

/// Opens the store as `kvperf` does, for callers that need the engine's
/// own handles (bench/engine_loop.rs) rather than its [`Engine`] seam.
pub fn open_store(opts: &OpenOptions) -> anyhow::Result<WtEngine> {
    let dir = opts.dir()?;
    let options = WtOptions::from_properties(opts.properties)?;
    // A fresh store was emptied by store::prepare.
    let open_config = options.open_config(opts.mode != OpenMode::Existing);
    check_directories(dir, &options.config)?;
    // WiredTiger reads a `WiredTiger.config` in its home at every open, as
    // configuration after kvperf's (never checked, never recorded: a
    // `log=(path=DIR)` there wrote outside --db). WiredTiger never makes one.
    let user_config = dir.join("WiredTiger.config");
    if std::fs::symlink_metadata(&user_config).is_ok() {
        return Err(InputError::Invalid(format!(
            "--db '{}' holds 'WiredTiger.config', which WiredTiger would read as configuration beside kvperf's, unchecked and unrecorded: move it out and give its settings with -p wiredtiger.config=...",
            dir.display()
        ))
        .into());
    }
    // WiredTiger reads its `WiredTiger.basecfg` (the configuration it
    // wrote when the store was made) at every open, before kvperf's: a
    // `path=` out of the store there (kvperf never makes a store with one)
    // was put in since, and would write outside --db.
    let base_config = dir.join("WiredTiger.basecfg");
    if std::fs::symlink_metadata(&base_config).is_ok() {
        let text = crate::files::read_input(
            &base_config,
            "WiredTiger.basecfg",
            crate::files::bound::TEXT,
        )?;
        let settings = collapse_config_file(text.as_bytes());
        let settings = String::from_utf8_lossy(&settings);
        let found = a_path_outside_home(&settings)
            .and_then(|outside| match outside {
                Some(path) => Ok(Some(path)),
                None => a_directory_not_in_home(dir, &settings),
            })
            .map_err(|why| {
                InputError::Invalid(format!(
                    "--db '{}' holds a 'WiredTiger.basecfg' WiredTiger cannot read ({why}); load the store again with `kvperf load --fresh`",
                    dir.display()
                ))
            })?;
        if let Some(path) = found {
            return Err(InputError::Invalid(format!(
                "--db '{}' holds a 'WiredTiger.basecfg' whose {path} puts WiredTiger's files outside --db, into a directory kvperf did not make (WiredTiger reads that file at every open; kvperf never makes a store with such a path, so it was edited since): load the store again with `kvperf load --fresh`",
                dir.display()
            ))
            .into());
        }
    }
    let home = CString::new(dir.as_os_str().as_encoded_bytes()).map_err(|_| {
        InputError::Invalid(format!("--db '{}' contains a NUL byte", dir.display()))
    })?;
    let config = CString::new(open_config.as_str()).expect("checked for NUL bytes");
    let mut conn = null_mut();
    // SAFETY: home and config are NUL-terminated; conn receives the handle.
    let code = unsafe { ffi::kvperf_wt_open(home.as_ptr(), config.as_ptr(), &mut conn) };
    if code != 0 {
        let why = message(code);
        if code == libc::EINVAL {
            // A configuration WiredTiger refuses: options or wiredtiger.config.
            return Err(InputError::Invalid(format!(
                "WiredTiger refused its configuration ({why}); configuration: {open_config}"
            ))
            .into());
        }
        anyhow::bail!("cannot open WiredTiger in '{}': {why}", dir.display());
    }
    let engine = WtEngine {
        state: Mutex::new(State {
            conn: Some(Connection(conn)),
            sessions: 0,
        }),
        evicted_by_clients: Mutex::new(None),
        dir: dir.to_path_buf(),
        version: library_version(),
        open_config,
        options,
    };
    {
        let session = engine.session()?;
        let table = CString::new(engine.options.table_config()).expect("no NUL");
        // SAFETY: a live session of this engine; NUL-terminated strings.
        let code = unsafe { ffi::kvperf_wt_create(session.session, URI.as_ptr(), table.as_ptr()) };
        if code != 0 {
            let why = message(code);
            drop(session);
            let _ = engine.close();
            anyhow::bail!("cannot create {}: {why}", URI.to_string_lossy());
        }
    }
    Ok(engine)
}

/// An open `WT_CONNECTION`.
struct Connection(*mut c_void);

// SAFETY: a WT_CONNECTION is thread-safe: WiredTiger allows its methods
// (open_session, close) from any thread. kvperf calls close exactly once,
// under the engine's mutex, after every session of it has been closed.
unsafe impl Send for Connection {}

struct State {
    /// None once closed.
    conn: Option<Connection>,
    /// Sessions open on `conn` (workers and settle's): close waits for none.
    sessions: usize,
}

pub struct WtEngine {
    state: Mutex<State>,
    /// Pages evicted by application threads at the last `activity` poll.
    evicted_by_clients: Mutex<Option<i64>>,
    dir: PathBuf,
    version: String,
    open_config: String,
    options: WtOptions,
}

impl WtEngine {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new session with its cursors, counted until it is dropped.
    pub fn session(&self) -> anyhow::Result<Session<'_>> {
        let mut state = self.lock();
        let Some(conn) = &state.conn else {
            anyhow::bail!("the WiredTiger connection is closed");
        };
        let mut session = null_mut();
        // SAFETY: conn is open (we hold the lock, so close cannot run).
        let code =
            unsafe { ffi::kvperf_wt_open_session(conn.0, SESSION_CONFIG.as_ptr(), &mut session) };
        check(code).map_err(|why| anyhow::anyhow!("cannot open a WiredTiger session: {why}"))?;
        state.sessions += 1;
        Ok(Session {
            engine: self,
            session,
            cursor: null_mut(),
            remover: null_mut(),
            iter: null_mut(),
        })
    }

    fn checkpoint(&self) -> anyhow::Result<()> {
        let session = self.session()?;
        // SAFETY: a live session of this engine.
        let code = unsafe { ffi::kvperf_wt_checkpoint(session.session, std::ptr::null()) };
        check(code).map_err(|why| anyhow::anyhow!("WiredTiger checkpoint failed: {why}"))
    }

    /// A client's session: more clients than WiredTiger has sessions for
    /// are too many threads, said as such (exit 2, as LMDB's readers),
    /// not in WiredTiger's words as an engine failure (exit 3).
    fn client_session(&self, slot: ClientSlot) -> anyhow::Result<Session<'_>> {
        self.session().map_err(|e| {
            if !format!("{e:#}").contains("out of sessions") {
                return e;
            }
            InputError::Invalid(format!(
                "{} client threads are more than WiredTiger has sessions for (session_max=1024 here, its own and kvperf's sessions included); run fewer threads, or give -p wiredtiger.config=session_max=N",
                slot.count
            ))
            .into()
        })
    }

    fn records(&self, slot: ClientSlot) -> anyhow::Result<Box<dyn Operations + '_>> {
        Ok(Box::new(WtWorker {
            session: self.client_session(slot)?,
            encoded: Vec::new(),
            scratch: Record::new(),
        }))
    }

    fn raw(&self, slot: ClientSlot) -> anyhow::Result<Box<dyn Operations + '_>> {
        Ok(Box::new(WtKvWorker {
            session: self.client_session(slot)?,
            entry: None,
        }))
    }
}

impl Engine for WtEngine {
    fn info(&self) -> EngineInfo {
        let mut options = self.options.effective.clone();
        options.insert("wiredtiger_open".into(), self.open_config.clone());
        options.insert("table".into(), self.options.table_config());
        EngineInfo {
            name: "wiredtiger".into(),
            version: self.version.clone(),
            options,
        }
    }

    fn client(&self, slot: ClientSlot) -> SetupFuture<'_, Box<dyn Operations + '_>> {
        ready_client(self, slot, Self::records, Self::raw)
    }

    /// A checkpoint, with or without `flush`: it writes every dirty page
    /// and syncs the files (what makes writes durable in WiredTiger; the
    /// log is then archived), and it first waits for a checkpoint the
    /// checkpoint server may be running. Eviction threads have nothing
    /// left to write after it.
    fn settle(&self, _flush: bool) -> anyhow::Result<()> {
        self.checkpoint()
    }

    /// `WT_SESSION::compact` on the table (it returns free space at the end
    /// of the file to the file system), then a checkpoint.
    fn compact(&self) -> anyhow::Result<()> {
        {
            let session = self.session()?;
            // SAFETY: a live session of this engine; URI is NUL-terminated.
            let code =
                unsafe { ffi::kvperf_wt_compact(session.session, URI.as_ptr(), std::ptr::null()) };
            check(code).map_err(|why| anyhow::anyhow!("WiredTiger compact failed: {why}"))?;
        }
        self.checkpoint()
    }

    fn footprint(&self) -> Result<u64, String> {
        super::store::owned_size(&self.dir, owns)
    }

    /// A checkpoint running (`transaction checkpoint currently running`),
    /// checkpoints taken and the bytes written for them; eviction
    /// pressure: client threads evicting pages themselves since the last
    /// poll (`pages evicted by application threads` grew), or the cache
    /// past WiredTiger's default triggers for that (95% full, 20% dirty).
    /// Read through a statistics cursor on a session of its own.
    fn activity(&self) -> Result<Activity, String> {
        let session = self.session().map_err(|e| format!("{e:#}"))?;
        let mut v = [0i64; EVENT_STATS];
        // SAFETY: a live session of this engine; `v` holds EVENT_STATS
        // values, which the shim checks against its own list.
        let code = unsafe {
            ffi::kvperf_wt_event_stats(session.session, v.as_mut_ptr(), EVENT_STATS as c_int)
        };
        check(code).map_err(|why| format!("WiredTiger statistics: {why}"))?;
        drop(session);
        let [running, checkpoints, checkpoint_bytes, evicted, inuse, dirty, max] = v;
        let mut a = Activity::idle();
        if running != 0 {
            a.running(EventKind::Checkpoint, "", "");
        }
        a.tally(
            EventKind::Checkpoint,
            "",
            checkpoints.max(0) as u64,
            Some(checkpoint_bytes.max(0) as u64),
        );
        let evicting = {
            let mut last = self
                .evicted_by_clients
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let grew = last.is_some_and(|l| evicted > l);
            *last = Some(evicted);
            grew
        };
        let share = |bytes: i64| {
            if max > 0 {
                bytes as f64 / max as f64
            } else {
                0.0
            }
        };
        let cause = if evicting {
            Some("client threads evicting pages".to_string())
        } else if share(inuse) >= 0.95 {
            Some(format!("cache {:.0}% full", share(inuse) * 100.0))
        } else if share(dirty) >= 0.20 {
            Some(format!("cache {:.0}% dirty", share(dirty) * 100.0))
        } else {
            None
        };
        if let Some(cause) = cause {
            a.running(EventKind::Eviction, "", cause);
        }
        Ok(a)
    }

    /// Closes the connection, which takes a final checkpoint. Only once:
    /// later calls do nothing.
    fn close(&self) -> anyhow::Result<()> {
        let mut state = self.lock();
        if state.sessions > 0 {
            anyhow::bail!(
                "internal: WiredTiger closed with {} session(s) still open",
                state.sessions
            );
        }
        let Some(conn) = state.conn.take() else {
            return Ok(());
        };
        // SAFETY: the connection is open and no session of it is left.
        let code = unsafe { ffi::kvperf_wt_close(conn.0, std::ptr::null()) };
        check(code).map_err(|why| anyhow::anyhow!("closing WiredTiger failed: {why}"))
    }
}

impl Drop for WtEngine {
    fn drop(&mut self) {
        // Workers borrow the engine, so every session is closed by now.
        if let Err(e) = self.close() {
            eprintln!("kvperf: {e:#}");
        }
    }
}

/// One thread's session and its cursors (opened on first use).
pub struct Session<'a> {
    engine: &'a WtEngine,
    session: *mut c_void,
    /// overwrite=true: insert, search, update, scan.
    cursor: *mut c_void,
    /// overwrite=false, so remove reports a missing key.
    remover: *mut c_void,
    /// kvperf bench's ordered cursor.
    iter: *mut c_void,
}

// SAFETY: a WT_SESSION and its cursors may be used by one thread at a time,
// not necessarily the thread that opened them. A Session is owned by one
// worker, whose methods take &mut self, and it is never shared (not Sync).
unsafe impl Send for Session<'_> {}

impl Session<'_> {
    fn open_cursor(&self, config: &CStr) -> Result<*mut c_void, OpError> {
        let mut cursor = null_mut();
        // SAFETY: a live session; URI and config are NUL-terminated.
        let code = unsafe {
            ffi::kvperf_wt_open_cursor(self.session, URI.as_ptr(), config.as_ptr(), &mut cursor)
        };
        if code != 0 {
            return Err(failed(code));
        }
        Ok(cursor)
    }

    /// The `WT_SESSION` (shim handle), for calls on it such as `begin`.
    pub fn handle(&self) -> *mut c_void {
        self.session
    }

    /// The session's overwrite cursor on the table: kvperf's clients'
    /// search, update and insert cursor.
    pub fn cursor(&mut self) -> Result<*mut c_void, OpError> {
        if self.cursor.is_null() {
            self.cursor = self.open_cursor(c"overwrite=true")?;
        }
        Ok(self.cursor)
    }

    fn remover(&mut self) -> Result<*mut c_void, OpError> {
        if self.remover.is_null() {
            self.remover = self.open_cursor(c"overwrite=false")?;
        }
        Ok(self.remover)
    }

    fn iter(&mut self) -> Result<*mut c_void, OpError> {
        if self.iter.is_null() {
            self.iter = self.open_cursor(c"")?;
        }
        Ok(self.iter)
    }

    /// Runs `op` again while WiredTiger rolls it back on a write conflict.
    fn retry(&mut self, mut op: impl FnMut() -> c_int) -> OpResult {
        let mut code = 0;
        for attempt in 0..MAX_ATTEMPTS {
            code = op();
            match code {
                0 => return Ok(()),
                WT_NOTFOUND => return Err(OpError::NotFound),
                WT_ROLLBACK | WT_PREPARE_CONFLICT => back_off(attempt),
                _ => return Err(failed(code)),
            }
        }
        Err(OpError::failed(format!(
            "{} ({MAX_ATTEMPTS} attempts)",
            message(code)
        )))
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> OpResult {
        let cursor = self.cursor()?;
        self.retry(|| {
            // SAFETY: a cursor of this session; the slices outlive the call.
            let code = unsafe {
                ffi::kvperf_wt_insert(cursor, key.as_ptr(), key.len(), value.as_ptr(), value.len())
            };
            // SAFETY: as above; a reset releases the cursor's position.
            unsafe { ffi::kvperf_wt_reset(cursor) };
            code
        })
    }

    /// Calls `found` with the value of `key`, then releases the cursor.
    fn get<T>(&mut self, key: &[u8], found: impl FnOnce(&[u8]) -> T) -> Result<T, OpError> {
        let cursor = self.cursor()?;
        let (mut v, mut vl) = (std::ptr::null(), 0);
        // SAFETY: a cursor of this session; v/vl receive the value, valid
        // until the cursor moves; `found` runs before the reset.
        unsafe {
            let code = ffi::kvperf_wt_search(cursor, key.as_ptr(), key.len(), &mut v, &mut vl);
            let result = match code {
                0 => Ok(found(raw_slice(v, vl))),
                WT_NOTFOUND => Err(OpError::NotFound),
                _ => Err(failed(code)),
            };
            ffi::kvperf_wt_reset(cursor);
            result
        }
    }
}

/// Waits before attempt `attempt + 1` of an operation rolled back on a
/// conflict, as MongoDB does on a write conflict: at once a few times, then
/// sleeps doubling from 10 µs to 1 ms, so that two threads that keep
/// colliding on a hot key fall out of step (at most about 0.1 s in all).
pub fn back_off(attempt: usize) {
    if attempt < 3 {
        std::thread::yield_now();
    } else {
        let micros = (10u64 << (attempt - 3).min(7)).min(1000);
        std::thread::sleep(std::time::Duration::from_micros(micros));
    }
}

/// A slice over WiredTiger memory.
///
/// # Safety
/// `ptr` must point to `len` bytes that stay valid for the returned lifetime.
unsafe fn raw_slice<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    if len == 0 {
        &[]
    } else {
        // SAFETY: the caller's guarantee.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        let mut state = self.engine.lock();
        // SAFETY: the session is open (the connection cannot close while
        // it is counted); closing it closes its cursors.
        let code = unsafe { ffi::kvperf_wt_session_close(self.session) };
        if code != 0 {
            eprintln!(
                "kvperf: closing a WiredTiger session failed: {}",
                message(code)
            );
        }
        state.sessions -= 1;
    }
}

pub struct WtWorker<'a> {
    session: Session<'a>,
    encoded: Vec<u8>,
    scratch: Record,
}

impl WtWorker<'_> {
    /// One attempt of update's read-modify-write transaction; `None` when
    /// WiredTiger rolled it back on a conflict (try again).
    fn try_update(&mut self, cursor: *mut c_void, key: &[u8], values: &Record) -> Option<OpResult> {
        let session = self.session.session;
        // SAFETY: session and cursor are this worker's; the stored value is
        // merged into `encoded` before the cursor moves.
        unsafe {
            let code = ffi::kvperf_wt_begin(session, std::ptr::null());
            if code != 0 {
                return Some(Err(failed(code)));
            }
            let (mut v, mut vl) = (std::ptr::null(), 0);
            let mut code = ffi::kvperf_wt_search(cursor, key.as_ptr(), key.len(), &mut v, &mut vl);
            if code == 0 {
                if !codec::merge(
                    raw_slice(v, vl),
                    values,
                    &mut self.scratch,
                    &mut self.encoded,
                ) {
                    ffi::kvperf_wt_rollback(session);
                    return Some(Err(OpError::Failed(CORRUPT.into())));
                }
                code =
                    ffi::kvperf_wt_update_here(cursor, self.encoded.as_ptr(), self.encoded.len());
            }
            if code != 0 {
                // Taken before the rollback, which clears the call's message.
                let outcome = match code {
                    WT_ROLLBACK | WT_PREPARE_CONFLICT => None,
                    WT_NOTFOUND => Some(Err(OpError::NotFound)),
                    _ => Some(Err(failed(code))),
                };
                ffi::kvperf_wt_rollback(session);
                return outcome;
            }
            // A failed commit rolls the transaction back.
            match ffi::kvperf_wt_commit(session, std::ptr::null()) {
                0 => Some(Ok(())),
                WT_ROLLBACK | WT_PREPARE_CONFLICT => None,
                code => Some(Err(failed(code))),
            }
        }
    }
}

super::blocking_records!(WtWorker<'_>);

impl WtWorker<'_> {
    fn read(
        &mut self,
        _table: &str,
        key: &[u8],
        fields: Option<&[&str]>,
        out: &mut Record,
    ) -> OpResult {
        if self
            .session
            .get(key, |value| codec::decode(value, fields, out))?
        {
            Ok(())
        } else {
            Err(OpError::Failed(CORRUPT.into()))
        }
    }

    fn scan(
        &mut self,
        _table: &str,
        start_key: &[u8],
        count: usize,
        fields: Option<&[&str]>,
        out: &mut ScanResults,
    ) -> OpResult {
        let cursor = self.session.cursor()?;
        // SAFETY: this worker's cursor; each value is decoded before the
        // cursor moves on, and the cursor is reset before returning.
        unsafe {
            let mut code = ffi::kvperf_wt_seek(cursor, start_key.as_ptr(), start_key.len());
            let mut result = Ok(());
            while code == 0 && out.len() < count {
                let (mut v, mut vl) = (std::ptr::null(), 0);
                code = ffi::kvperf_wt_value(cursor, &mut v, &mut vl);
                if code != 0 {
                    break;
                }
                if !codec::decode(raw_slice(v, vl), fields, out.next_slot()) {
                    result = Err(OpError::Failed(CORRUPT.into()));
                    break;
                }
                if out.len() < count {
                    code = ffi::kvperf_wt_next(cursor);
                }
            }
            if code != 0 && code != WT_NOTFOUND {
                result = Err(failed(code));
            }
            ffi::kvperf_wt_reset(cursor);
            result
        }
    }

    fn update(&mut self, _table: &str, key: &[u8], values: &Record) -> OpResult {
        let cursor = self.session.cursor()?;
        for attempt in 0..MAX_ATTEMPTS {
            match self.try_update(cursor, key, values) {
                Some(result) => return result,
                None => back_off(attempt),
            }
        }
        Err(OpError::failed(format!(
            "{} ({MAX_ATTEMPTS} attempts)",
            message(WT_ROLLBACK)
        )))
    }

    fn insert(&mut self, _table: &str, key: &[u8], values: &Record) -> OpResult {
        let mut encoded = std::mem::take(&mut self.encoded);
        codec::encode(values, &mut encoded);
        let result = self.session.put(key, &encoded);
        self.encoded = encoded;
        result
    }

    fn delete(&mut self, _table: &str, key: &[u8]) -> OpResult {
        let remover = self.session.remover()?;
        self.session.retry(|| {
            // SAFETY: this worker's cursor; the key outlives the call.
            unsafe {
                let code = ffi::kvperf_wt_remove(remover, key.as_ptr(), key.len());
                ffi::kvperf_wt_reset(remover);
                code
            }
        })
    }
}

/// Raw keys and values for `kvperf bench`, as db_bench stores them.
pub struct WtKvWorker<'a> {
    session: Session<'a>,
    /// The entry under the ordered cursor: WiredTiger memory, valid until
    /// that cursor moves, which only `seek`, `next` and drop (&mut self) do.
    entry: Option<(*const u8, usize, *const u8, usize)>,
}

impl WtKvWorker<'_> {
    /// Reads the entry under the ordered cursor after a move with `code`.
    fn landed(&mut self, code: c_int) -> Result<bool, OpError> {
        self.entry = None;
        match code {
            0 => {}
            WT_NOTFOUND => return Ok(false),
            _ => return Err(failed(code)),
        }
        let (mut k, mut kl, mut v, mut vl) = (std::ptr::null(), 0, std::ptr::null(), 0);
        // SAFETY: the ordered cursor is positioned (code 0).
        let code =
            unsafe { ffi::kvperf_wt_entry(self.session.iter, &mut k, &mut kl, &mut v, &mut vl) };
        if code != 0 {
            return Err(failed(code));
        }
        self.entry = Some((k, kl, v, vl));
        Ok(true)
    }
}

super::blocking_raw!(WtKvWorker<'_>);

impl WtKvWorker<'_> {
    fn get(&mut self, key: &[u8]) -> Result<usize, OpError> {
        self.session.get(key, <[u8]>::len)
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> OpResult {
        self.session.put(key, value)
    }

    /// Like RocksDB's (and db_bench's deleterandom): deleting a missing key
    /// succeeds, through the overwrite=true cursor.
    fn delete(&mut self, key: &[u8]) -> OpResult {
        let cursor = self.session.cursor()?;
        self.session.retry(|| {
            // SAFETY: this worker's cursor; the key outlives the call.
            unsafe {
                let code = ffi::kvperf_wt_remove(cursor, key.as_ptr(), key.len());
                ffi::kvperf_wt_reset(cursor);
                code
            }
        })
    }

    fn seek(&mut self, target: Option<&[u8]>, fresh: bool) -> Result<bool, OpError> {
        self.entry = None;
        let iter = self.session.iter()?;
        // SAFETY: this worker's ordered cursor; the key outlives the call.
        let code = unsafe {
            if fresh {
                // Releases the cursor's snapshot, so it sees the latest writes.
                ffi::kvperf_wt_reset(iter);
            }
            match target {
                Some(key) => ffi::kvperf_wt_seek(iter, key.as_ptr(), key.len()),
                None => ffi::kvperf_wt_first(iter),
            }
        };
        self.landed(code)
    }

    fn next(&mut self) -> Result<bool, OpError> {
        if self.entry.is_none() {
            return Ok(false);
        }
        // SAFETY: the ordered cursor is open and positioned.
        let code = unsafe { ffi::kvperf_wt_next(self.session.iter) };
        self.landed(code)
    }

    fn current(&self) -> Option<(&[u8], &[u8])> {
        let (k, kl, v, vl) = self.entry?;
        // SAFETY: the entry's memory is valid until the ordered cursor
        // moves, which takes &mut self (see `entry`).
        unsafe { Some((raw_slice(k, kl), raw_slice(v, vl))) }
    }
}

// SAFETY: `entry` points into memory of the worker's own session (Send, see
// Session); the worker is used by one thread at a time.
unsafe impl Send for WtKvWorker<'_> {}

/// A configuration file (`WiredTiger.basecfg`) as the one string WiredTiger
/// makes of it at open (`__conn_config_file`'s rules, from its
/// documentation and source): a backslash before a newline joins the two
/// lines, any other backslash pair stays as it is; quoted text is taken
/// whole, newlines included; every other newline becomes a comma, after
/// which white space is skipped and a line whose first other character is
/// `#` is dropped. The file reads as if it began after a newline, and its
/// last byte (a final newline) is never taken. Read line by line instead,
/// `pa\<newline>th=` or a `#` after an escaped newline hid a log path out
/// of the store from the check (pass 12).
fn collapse_config_file(file: &[u8]) -> Vec<u8> {
    let mut text = Vec::with_capacity(file.len() + 1);
    text.push(b'\n');
    text.extend_from_slice(file);
    let last = text.len() - 1;
    let mut out = Vec::with_capacity(text.len());
    let (mut i, mut quoted) = (0, false);
    while i < last {
        let c = text[i];
        if c == b'\\' && i + 1 < last {
            if text[i + 1] != b'\n' {
                out.extend_from_slice(&text[i..i + 2]);
            }
            i += 2;
        } else if quoted || c == b'"' {
            quoted ^= c == b'"';
            out.push(c);
            i += 1;
        } else if c != b'\n' {
            out.push(c);
            i += 1;
        } else {
            // A newline: a comma, then white space and comment lines go.
            loop {
                out.push(b',');
                let Some(next) =
                    (i + 1..last).find(|&j| !text[j].is_ascii_whitespace() && text[j] != 0x0b)
                else {
                    return out;
                };
                i = next;
                if text[i] != b'#' {
                    break;
                }
                let Some(end) = (i + 1..last).find(|&j| text[j] == b'\n') else {
                    return out;
                };
                i = end;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{wait, Access};

    /// WiredTiger's own reading of a configuration file, on the spellings
    /// that hid a path from a line-by-line reading.
    #[test]
    fn a_configuration_file_is_read_as_wiredtiger_reads_it() {
        let read = |t: &str| String::from_utf8(collapse_config_file(t.as_bytes())).unwrap();
        assert_eq!(read("# made by WiredTiger\na=1\nb=2\n"), ",,a=1,b=2");
        assert_eq!(
            read("log=(enabled=true,pa\\\nth=\"/o\")\n"),
            ",log=(enabled=true,path=\"/o\")"
        );
        assert_eq!(
            read("error_prefix=x\\\n#y,log=(path=\"/o\")\n"),
            ",error_prefix=x#y,log=(path=\"/o\")"
        );
        assert_eq!(read("a=\"1\n#2\"\n  # note\n\tb=3\n"), ",a=\"1\n#2\",,b=3");
        assert_eq!(read("a=\\\"x\n#c\"\n"), ",a=\\\"x,");
        // No final newline: WiredTiger leaves the last byte out.
        assert_eq!(read("a=12"), ",a=1");
        assert_eq!(read(""), "");
    }

    #[test]
    fn a_path_out_of_the_store_is_found_in_the_configuration() {
        for config in [
            "log=(path=/var/lib/mongodb/journal)",
            "eviction=(threads_max=4),log=(enabled=true,path=\"/srv/wal\")",
            "statistics_log=(wait=1,path=../stats)",
            "log=(path=journal/../../x)",
            // Every spelling WiredTiger reads (pass 11 found the first three).
            "log=(enabled=true,path:\"/srv/wal\")",
            "log=(enabled=true,\"path\"=\"/srv/wal\")",
            "log={\"enabled\":true,\"path\":\"/srv/wal\"}",
            "log=[path=/srv/wal]",
            "log.path=/srv/wal",
            "{\"log\":{\"path\":\"/srv/wal\"}}",
            "log=(path=(x))",
            "operation_tracking=(enabled,path=/tmp)",
            "extensions=[/tmp/evil.so]",
            "extensions=[\"/tmp/evil.so\"=(entry=x)]",
        ] {
            assert!(a_path_outside_home(config).unwrap().is_some(), "{config}");
        }
        for config in [
            "",
            "log=(path=journal)",
            "log:{\"path\":\"journal\"}",
            "eviction=(threads_max=4)",
            "statistics_log=(wait=1,path=.)",
            "error_prefix=\"/not/a/path\"",
        ] {
            assert_eq!(a_path_outside_home(config).unwrap(), None, "{config}");
        }
        assert!(a_path_outside_home("log=(path=x").is_err());
    }

    #[test]
    fn owns_exactly_wiredtigers_files() {
        for name in [
            "WiredTiger",
            "WiredTiger.basecfg",
            "WiredTiger.lock",
            "WiredTiger.turtle",
            "WiredTiger.wt",
            "WiredTigerHS.wt",
            "WiredTigerLAS.wt",
            "usertable.wt",
            "WiredTigerLog.0000000001",
            "WiredTigerPreplog.0000000002",
            "WiredTigerTmplog.0000000003",
            "journal",
        ] {
            assert!(owns(name), "{name}");
        }
        for name in [
            ".kvperf-data",
            "notes.txt",
            "CURRENT",
            "wt",
            ".wt",
            "WiredTigerX",
            "my-folder",
            "mine.wt",
            "WiredTiger.config",
        ] {
            assert!(!owns(name), "{name}");
        }
    }

    fn open_in(dir: &Path, mode: OpenMode) -> Box<dyn Engine> {
        crate::engine::open(
            &SPEC,
            &OpenOptions {
                dir: Some(dir),
                properties: &Properties::new(),
                mode,
                runtime: None,
                clients: None,
            },
        )
        .unwrap()
    }

    #[test]
    fn close_waits_for_sessions_and_happens_once() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("db");
        let engine = open_in(&db, OpenMode::Fresh);
        assert!(engine.info().version.starts_with("WiredTiger "));
        let mut w = wait(engine.client(ClientSlot::thread(0, 1, Access::Records))).unwrap();
        let mut rec = Record::new();
        rec.push(b"field0", b"x");
        w.insert("usertable", b"k", &rec).now().unwrap();
        let err = engine.close().unwrap_err().to_string();
        assert!(err.contains("1 session(s) still open"), "{err}");
        assert_eq!(
            w.delete("usertable", b"missing").now(),
            Err(OpError::NotFound)
        );
        drop(w);
        engine.settle(true).unwrap();
        engine.compact().unwrap();
        engine.close().unwrap();
        engine.close().unwrap();
        assert!(wait(engine.client(ClientSlot::thread(0, 1, Access::Records))).is_err());
        drop(engine);
        // Dropped without close: Drop closes the connection (else the
        // next open would find WiredTiger.lock held).
        let engine = open_in(&db, OpenMode::Existing);
        drop(engine);
        let engine = open_in(&db, OpenMode::Existing);
        let mut w = wait(engine.client(ClientSlot::thread(0, 1, Access::Records))).unwrap();
        let mut out = Record::new();
        w.read("usertable", b"k", None, &mut out).now().unwrap();
        assert_eq!(out.get(b"field0"), Some(&b"x"[..]));
    }

    /// A client serves the half of the seam it was made for; the other
    /// half is an error naming what is missing, never a silent no-op.
    #[test]
    fn each_client_refuses_the_other_half_of_the_seam() {
        let tmp = tempfile::tempdir().unwrap();
        let engine = open_in(&tmp.path().join("db"), OpenMode::Fresh);
        let mut records = wait(engine.client(ClientSlot::thread(0, 1, Access::Records))).unwrap();
        let err = records.get(b"k").now().unwrap_err();
        assert!(
            matches!(&err, OpError::Failed(m) if m.contains("no raw key-value access")),
            "{err:?}"
        );
        drop(records);
        let mut raw = wait(engine.client(ClientSlot::thread(0, 1, Access::Raw))).unwrap();
        raw.put(b"k", b"v").now().unwrap();
        assert_eq!(raw.get(b"k").now(), Ok(1));
        let err = raw.delete("usertable", b"k").now().unwrap_err();
        assert!(
            matches!(&err, OpError::Failed(m) if m.contains("no record operations")),
            "{err:?}"
        );
        drop(raw);
        engine.close().unwrap();
    }

    /// Two threads read-modify-write one record, each its own field: with
    /// snapshot isolation a stale read ends in WT_ROLLBACK and a retry, so
    /// no thread's write is lost (read-committed lost some).
    #[test]
    fn conflicting_updates_are_retried_not_lost() {
        let tmp = tempfile::tempdir().unwrap();
        let engine = open_in(&tmp.path().join("db"), OpenMode::Fresh);
        let engine = engine.as_ref();
        let mut w = wait(engine.client(ClientSlot::thread(0, 1, Access::Records))).unwrap();
        let mut rec = Record::new();
        rec.push(b"start", b"0");
        w.insert("usertable", b"hot", &rec).now().unwrap();
        drop(w);
        const UPDATES: usize = 3000;
        std::thread::scope(|s| {
            for t in 0..2usize {
                s.spawn(move || {
                    let mut w =
                        wait(engine.client(ClientSlot::thread(t, 2, Access::Records))).unwrap();
                    for i in 1..=UPDATES {
                        let mut rec = Record::new();
                        rec.push(format!("field{t}").as_bytes(), i.to_string().as_bytes());
                        w.update("usertable", b"hot", &rec).now().unwrap();
                    }
                });
            }
        });
        let mut w = wait(engine.client(ClientSlot::thread(0, 1, Access::Records))).unwrap();
        let mut out = Record::new();
        w.read("usertable", b"hot", None, &mut out).now().unwrap();
        let last = UPDATES.to_string();
        assert_eq!(out.get(b"field0"), Some(last.as_bytes()), "{out:?}");
        assert_eq!(out.get(b"field1"), Some(last.as_bytes()), "{out:?}");
    }

    #[test]
    fn the_shim_reads_as_many_statistics_as_activity_names() {
        assert_eq!(
            // SAFETY: a constant of the shim.
            unsafe { ffi::kvperf_wt_event_stats_count() } as usize,
            EVENT_STATS
        );
    }

    #[test]
    fn a_checkpoint_is_counted_with_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(&OpenOptions {
            dir: Some(dir.path()),
            properties: &Properties::new(),
            mode: OpenMode::Any,
            runtime: None,
            clients: None,
        })
        .unwrap();
        let checkpoints = |a: &Activity| {
            a.tallies
                .iter()
                .find(|t| t.kind == EventKind::Checkpoint)
                .map(|t| (t.count, t.bytes.unwrap_or(0)))
                .expect("a checkpoint tally")
        };
        let before = checkpoints(&engine.activity().expect("WiredTiger answers"));
        {
            let mut client =
                crate::engine::wait(engine.client(ClientSlot::thread(0, 1, Access::Raw))).unwrap();
            for i in 0..2000u32 {
                let key = format!("key{i:08}");
                crate::engine::wait(client.put(key.as_bytes(), &[7u8; 200])).unwrap();
            }
        }
        engine.settle(false).unwrap();
        let after = checkpoints(&engine.activity().unwrap());
        assert!(
            after.0 > before.0,
            "settle's checkpoint is counted: {before:?} -> {after:?}"
        );
        assert!(after.1 > before.1, "and its bytes: {before:?} -> {after:?}");
        engine.close().unwrap();
    }

    #[test]
    fn options_are_checked_and_mapped() {
        let defaults = WtOptions::from_properties(&Properties::new()).unwrap();
        let config = defaults.open_config(true);
        assert!(
            config
                .starts_with("create,cache_size=104857600,checkpoint=(wait=60),log=(enabled=true)"),
            "{config}"
        );
        assert!(config.contains("libwiredtiger_snappy.so"), "{config}");
        assert!(!defaults.open_config(false).contains("create"));

        let mut props = Properties::new();
        props.set("wiredtiger.sync", "true");
        props.set("wiredtiger.log", "false");
        let err = WtOptions::from_properties(&props).unwrap_err().to_string();
        assert!(
            err.contains("needs wiredtiger.log=true") && !err.contains('\n'),
            "{err}"
        );

        let mut props = Properties::new();
        props.set("wiredtiger.block_compressor", "zstd");
        let err = WtOptions::from_properties(&props).unwrap_err().to_string();
        assert!(
            err.contains("'zstd' is not one of none, snappy, zlib"),
            "{err}"
        );

        let mut props = Properties::new();
        props.set("wiredtiger.leaf_page_size", "1000");
        assert!(WtOptions::from_properties(&props).is_err());

        let flags = DbBenchFlags {
            cache_size: Some(8 << 20),
            compression_type: Some("zstd".into()),
            disable_wal: Some(true),
            sync: Some(true),
            bloom_bits: Some(10.0),
            ..Default::default()
        };
        let mut props = Properties::new();
        let not = map_db_bench_flags(&flags, &mut props);
        assert_eq!(not, ["bloom_bits", "compression_type", "sync"]);
        assert_eq!(props.get("wiredtiger.cache_size"), Some("8388608"));
        assert_eq!(props.get("wiredtiger.log"), Some("false"));
        assert_eq!(props.get("wiredtiger.block_compressor"), None);
    }
}
