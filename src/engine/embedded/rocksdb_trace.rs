//! `-p rocksdb.trace=FILE`: RocksDB's own query trace of the store, from
//! its open to its close (for `kvperf run` without warm-up, the measured
//! window's queries and the step's few checks), through
//! csrc/rocksdb_trace_shim.cc: the release library has DB::StartTrace
//! only in C++. Read it back with `kvperf trace import --from rocksdb`.

use std::path::Path;

use rocksdb::DB;

use crate::error::InputError;

/// Refuses a FILE kvperf may not write: RocksDB writes it directly, so
/// only a new file is allowed.
pub fn check(path: &Path) -> Result<(), InputError> {
    if path.symlink_metadata().is_ok() {
        return Err(InputError::Invalid(format!(
            "rocksdb.trace '{}' exists: RocksDB's trace is written only to a new file",
            path.display()
        )));
    }
    // Checked before a `--fresh` empties the store: RocksDB's own failure
    // to create the file came only after.
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(InputError::Invalid(format!(
            "rocksdb.trace '{}': '{}' is not a directory",
            path.display(),
            parent.display()
        )));
    }
    Ok(())
}

#[cfg(kvperf_rocksdb_trace)]
mod shim {
    use std::ffi::{c_char, CStr};

    use librocksdb_sys::rocksdb_column_family_handle_t as Cf;

    extern "C" {
        fn kvperf_rocksdb_start_trace(cf: *mut Cf, path: *const c_char, max: u64) -> *mut c_char;
        fn kvperf_rocksdb_end_trace(cf: *mut Cf) -> *mut c_char;
    }

    /// The shim's error text, freed.
    fn taken(error: *mut c_char) -> Result<(), String> {
        if error.is_null() {
            return Ok(());
        }
        // SAFETY: the shim returns a NUL-terminated string from strdup.
        let text = unsafe { CStr::from_ptr(error) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: allocated with malloc by strdup, freed once.
        unsafe { libc::free(error.cast()) };
        Err(text)
    }

    pub fn start(cf: *mut Cf, path: &std::ffi::CStr) -> Result<(), String> {
        // SAFETY: `cf` is the open DB's default column family handle, valid
        // while the DB is; `path` outlives the call.
        taken(unsafe { kvperf_rocksdb_start_trace(cf, path.as_ptr(), 0) })
    }

    pub fn end(cf: *mut Cf) -> Result<(), String> {
        // SAFETY: as in `start`.
        taken(unsafe { kvperf_rocksdb_end_trace(cf) })
    }
}

/// Starts tracing `db`'s queries to `path`.
pub fn start(db: &DB, path: &Path) -> anyhow::Result<()> {
    check(path)?;
    #[cfg(kvperf_rocksdb_trace)]
    {
        use rocksdb::AsColumnFamilyRef;
        use std::os::unix::ffi::OsStrExt;
        let cf = db
            .cf_handle(rocksdb::DEFAULT_COLUMN_FAMILY_NAME)
            .ok_or_else(|| {
                anyhow::anyhow!("internal: RocksDB's default column family has no handle")
            })?;
        let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
            .map_err(|_| InputError::Invalid("rocksdb.trace holds a NUL byte".into()))?;
        shim::start(cf.inner(), &c_path).map_err(|e| {
            anyhow::anyhow!(
                "RocksDB could not start its trace to '{}': {e}",
                path.display()
            )
        })
    }
    #[cfg(not(kvperf_rocksdb_trace))]
    {
        let _ = db;
        Err(InputError::Invalid(
            "rocksdb.trace needs RocksDB's release library (scripts/rocksdb-release.sh): this kvperf was built from RocksDB's sources without the trace shim".into(),
        )
        .into())
    }
}

/// Ends the trace (RocksDB writes its end record).
pub fn end(db: &DB) -> anyhow::Result<()> {
    #[cfg(kvperf_rocksdb_trace)]
    {
        use rocksdb::AsColumnFamilyRef;
        if let Some(cf) = db.cf_handle(rocksdb::DEFAULT_COLUMN_FAMILY_NAME) {
            shim::end(cf.inner())
                .map_err(|e| anyhow::anyhow!("RocksDB could not end its trace: {e}"))?;
        }
    }
    #[cfg(not(kvperf_rocksdb_trace))]
    let _ = db;
    Ok(())
}
