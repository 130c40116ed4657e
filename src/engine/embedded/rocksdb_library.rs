//! Which RocksDB this process runs on, read from the library at run time,
//! never from a crate's name: where the code behind `rocksdb_open` lives
//! (`dladdr`: a shared library, or the kvperf executable itself when
//! RocksDB was built from source and linked in), and the version that
//! library writes at the top of a store's `LOG` ("RocksDB version: X.Y.Z").
//!
//! The default build links RocksDB's own release library
//! (scripts/rocksdb-release.sh keeps it as
//! `~/.cache/kvperf/rocksdb/<version>/librocksdb.so`, with a `SOURCE` file
//! naming the jar it came from); `KVPERF_ROCKSDB=source` builds RocksDB
//! from the librocksdb-sys crate's sources instead.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::files::{bound, read_input};

/// The release whose C headers the Rust bindings were generated from
/// (librocksdb-sys's bundled RocksDB, read from Cargo.lock at build time).
pub const BINDINGS_VERSION: &str = env!("KVPERF_ROCKSDB_VERSION");

/// How the RocksDB in this process was built and where it was loaded from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Build {
    /// RocksDB's release library (a rocksdbjni jar's), as fetched by
    /// scripts/rocksdb-release.sh.
    Release { path: PathBuf, jar: String },
    /// Another shared library (a `ROCKSDB_LIB_DIR` of the user's).
    Shared { path: PathBuf },
    /// Compiled from source and linked into this executable.
    Source { executable: PathBuf },
    /// `dladdr` could not say.
    Unknown,
}

impl Build {
    /// One word for tables: release, shared or source.
    pub fn kind(&self) -> &'static str {
        match self {
            Build::Release { .. } => "release library",
            Build::Shared { .. } => "shared library",
            Build::Source { .. } => "source build",
            Build::Unknown => "unknown build",
        }
    }

    /// The file the RocksDB code was loaded from.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Build::Release { path, .. } | Build::Shared { path } => Some(path),
            Build::Source { executable } => Some(executable),
            Build::Unknown => None,
        }
    }
}

/// The RocksDB this process runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedRocksDb {
    /// "10.4.2", or "unknown (why)" when no store could be opened to ask.
    pub version: String,
    pub build: Build,
}

impl LoadedRocksDb {
    /// The version with the build's kind: "10.4.2 (release library)", what
    /// results and reports name as the engine's version.
    pub fn version_and_kind(&self) -> String {
        format!("{} ({})", self.version, self.build.kind())
    }

    /// Where it came from, for a result's options and `kvperf engines`.
    pub fn origin(&self) -> String {
        match &self.build {
            Build::Release { path, jar } => format!("{} (from {jar})", path.display()),
            Build::Shared { path } => path.display().to_string(),
            Build::Source { executable } => {
                format!("compiled from source into {}", executable.display())
            }
            Build::Unknown => "unknown (dladdr found no file for rocksdb_open)".into(),
        }
    }
}

impl fmt::Display for LoadedRocksDb {
    /// "RocksDB 10.4.2, release library /root/.cache/kvperf/rocksdb/10.4.2/librocksdb.so"
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.build {
            Build::Release { path, .. } | Build::Shared { path } => {
                write!(
                    f,
                    "RocksDB {}, {} {}",
                    self.version,
                    self.build.kind(),
                    path.display()
                )
            }
            Build::Source { .. } => write!(
                f,
                "RocksDB {}, source build (linked into kvperf)",
                self.version
            ),
            Build::Unknown => write!(f, "RocksDB {}, unknown build", self.version),
        }
    }
}

/// The RocksDB this process runs on, found once.
pub fn loaded() -> &'static LoadedRocksDb {
    static LOADED: OnceLock<LoadedRocksDb> = OnceLock::new();
    LOADED.get_or_init(|| LoadedRocksDb {
        version: version_from_probe_store().unwrap_or_else(|why| format!("unknown ({why})")),
        build: build(),
    })
}

/// The file that holds `rocksdb_open`, by the dynamic linker's own account.
fn build() -> Build {
    let address = librocksdb_sys::rocksdb_open as *const libc::c_void;
    // SAFETY: Dl_info is plain data, for which all zeroes is a value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables; `info` is written by it.
    let found = unsafe { libc::dladdr(address, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return Build::Unknown;
    }
    // SAFETY: dladdr set it to a NUL-terminated string owned by the loader.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    let path = PathBuf::from(
        <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name.to_bytes()),
    );
    let path = std::fs::canonicalize(&path).unwrap_or(path);
    let executable = std::fs::canonicalize("/proc/self/exe").ok();
    if executable.as_deref() == Some(path.as_path()) {
        return Build::Source { executable: path };
    }
    match release_jar(&path) {
        Some(jar) => Build::Release { path, jar },
        None => Build::Shared { path },
    }
}

/// The jar scripts/rocksdb-release.sh extracted `library` from, named in
/// the `SOURCE` file beside it ("<sha256>  rocksdbjni-10.4.2-linux64.jar").
fn release_jar(library: &Path) -> Option<String> {
    let source = library.parent()?.join("SOURCE");
    let text = read_input(&source, "RocksDB release SOURCE file", bound::MARKER).ok()?;
    let (sha256, jar) = text.lines().next()?.split_once("  ")?;
    (sha256.len() == 64 && jar.starts_with("rocksdbjni-"))
        .then(|| format!("{jar}, sha256 {sha256}"))
}

/// Opens a store in a directory made for it and reads the version RocksDB
/// wrote into its `LOG`; the directory is removed after, before a signal
/// that came meanwhile is taken (it left the directory in TMPDIR).
fn version_from_probe_store() -> Result<String, String> {
    crate::files::interrupts_held(version_from_held_probe)
}

fn version_from_held_probe() -> Result<String, String> {
    let dir = probe_dir().map_err(|e| format!("cannot make a probe store's directory: {e}"))?;
    let version = (|| {
        let mut options = rocksdb::Options::default();
        options.create_if_missing(true);
        let db = rocksdb::DB::open(&options, &dir)
            .map_err(|e| format!("cannot open a probe store: {e}"))?;
        drop(db);
        let log = read_input(&dir.join("LOG"), "RocksDB LOG", bound::MARKER * 16)
            .map_err(|e| format!("cannot read the probe store's LOG: {e}"))?;
        version_in_log(&log).ok_or_else(|| "the probe store's LOG names no version".to_string())
    })();
    // Only this process made it, and only RocksDB wrote into it.
    let _ = std::fs::remove_dir_all(&dir);
    version
}

/// A new directory under the temporary directory, created here (so never
/// one that was someone else's).
fn probe_dir() -> std::io::Result<PathBuf> {
    let base = std::env::temp_dir();
    let mut last = None;
    for attempt in 0..100u32 {
        let dir = base.join(format!(
            "kvperf-rocksdb-version-{}-{attempt}",
            std::process::id()
        ));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free name")))
}

/// The RocksDB C functions `executable` calls (its undefined `rocksdb_*`
/// dynamic symbols) that `library` does not export, sorted. Empty for an
/// executable with RocksDB compiled in (it imports none).
pub fn missing_functions(executable: &Path, library: &Path) -> anyhow::Result<Vec<String>> {
    use super::elf_symbols::{exported_functions, imported_symbols};
    let exported = exported_functions(library, "rocksdb_")?;
    let missing = imported_symbols(executable, "rocksdb_")?
        .into_iter()
        .filter(|name| exported.binary_search(name).is_err())
        .collect();
    Ok(missing)
}

/// "RocksDB version: 10.4.2" in a LOG's header -> "10.4.2".
pub fn version_in_log(log: &str) -> Option<String> {
    log.lines().find_map(|line| {
        let (_, version) = line.split_once("RocksDB version: ")?;
        let version = version.trim();
        let plausible = !version.is_empty()
            && version.len() <= 32
            && version.chars().all(|c| c.is_ascii_digit() || c == '.');
        plausible.then(|| version.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_line_of_a_log_header() {
        let log = "2026/11/28-05:30:01.123456 7f1 RocksDB version: 10.4.2\n\
                   2026/11/28-05:30:01.123457 7f1 Compile date 2025-08-16 06:49:07\n";
        assert_eq!(version_in_log(log).as_deref(), Some("10.4.2"));
        assert_eq!(version_in_log("RocksDB version: %s\n"), None);
        assert_eq!(version_in_log("no header"), None);
    }

    #[test]
    fn the_loaded_library_is_named_and_its_version_read() {
        let loaded = loaded();
        assert!(
            loaded.version.split('.').count() == 3
                && loaded.version.split('.').all(|p| p.parse::<u32>().is_ok()),
            "{loaded:?}"
        );
        assert!(loaded.build.path().is_some_and(Path::exists), "{loaded:?}");
        let text = loaded.to_string();
        assert!(
            text.starts_with(&format!("RocksDB {}, ", loaded.version)),
            "{text}"
        );
    }
}
