//! `rocksdb.version = "10.2.1"`: a command (a plan's step, `kvperf run -p
//! rocksdb.version=...`) on another RocksDB release than the one kvperf was
//! linked with. The release's library is fetched and checked on first use
//! (scripts/rocksdb-release.sh, built into kvperf: Maven Central's
//! rocksdbjni linux64 jar, its SHA-256 pinned), refused when it lacks a C
//! function kvperf calls, and the command runs again in its place
//! (`execve` of this executable, same arguments) with the release's
//! directory first on `LD_LIBRARY_PATH`, which the run path (DT_RUNPATH)
//! gives way to. The new process reads the version it loaded as every
//! process does ([`super::rocksdb_library`]), so its results name it.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, Context};

use super::rocksdb_library::{loaded, missing_functions, Build};
use crate::error::InputError;
use crate::properties::Properties;

/// The fetch script, run by `bash -c` with `$0` set to [`SCRIPT_NAME`].
const SCRIPT: &str = include_str!("../../../scripts/rocksdb-release.sh");
const SCRIPT_NAME: &str = "kvperf-rocksdb-release";

/// Set in the process that runs on the asked release: it must not switch again.
const SWITCHED: &str = "KVPERF_ROCKSDB_SWITCHED";

/// The property.
pub const PROPERTY: &str = "rocksdb.version";

/// The release `props` ask for (`rocksdb.version`), checked to be one.
pub fn asked(props: &Properties) -> Result<Option<String>, InputError> {
    let Some(version) = props.get(PROPERTY).map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let release = version.split('.').count() >= 3
        && version
            .split('.')
            .all(|p| !p.is_empty() && p.len() <= 4 && p.bytes().all(|b| b.is_ascii_digit()));
    if !release {
        return Err(InputError::property(
            PROPERTY,
            format!("'{version}' is not a RocksDB release (like 10.4.2)"),
        ));
    }
    Ok(Some(version.to_string()))
}

/// The directory holding release `version`'s librocksdb.so, fetched and
/// checked on first use; a release without a pinned checksum is bad input.
pub fn release_dir(version: &str) -> anyhow::Result<PathBuf> {
    let script = format!("{SCRIPT}\nrocksdb_release_dir \"$1\"\n");
    let out = Command::new("bash")
        .arg("-c")
        .arg(script)
        .arg(SCRIPT_NAME)
        .arg(version)
        .output()
        .context("cannot run bash to fetch a RocksDB release")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let why = last.strip_prefix("kvperf: ").unwrap_or(last).to_string();
    match out.status.code() {
        Some(0) => {
            for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
                eprintln!("{line}");
            }
            let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
            Ok(PathBuf::from(dir))
        }
        Some(2) => Err(InputError::property(PROPERTY, why).into()),
        _ => Err(anyhow!("{PROPERTY} = {version}: {why}")),
    }
}

/// Release `version`'s library, refused when it lacks a C function this
/// kvperf calls (one line, naming the first).
pub fn checked_library(version: &str) -> anyhow::Result<PathBuf> {
    let library = release_dir(version)?.join("librocksdb.so");
    let executable =
        std::fs::canonicalize("/proc/self/exe").context("cannot find kvperf's own executable")?;
    let missing = missing_functions(&executable, &library)
        .with_context(|| format!("cannot read the symbols of '{}'", library.display()))?;
    if let Some(first) = missing.first() {
        let more = match missing.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        return Err(InputError::property(
            PROPERTY,
            format!("RocksDB {version}'s library lacks {first}{more}, which this kvperf calls; use a release with it"),
        )
        .into());
    }
    Ok(library)
}

/// Whether `version` is what this process runs on.
fn is_loaded(version: &str) -> bool {
    loaded().version == version
}

/// Checks, before anything runs, the release `props` ask for: fetched,
/// with every function kvperf calls. Nothing when none is asked or it is
/// the one loaded.
pub fn check_asked(props: &Properties) -> anyhow::Result<()> {
    match asked(props)? {
        Some(version) if !is_loaded(&version) => checked_library(&version).map(drop),
        _ => Ok(()),
    }
}

/// Runs this command again on the release `props` ask for, if another is
/// loaded; returns only when nothing needs to change (or with the error).
pub fn run_on_asked(props: &Properties) -> anyhow::Result<()> {
    let Some(version) = asked(props)? else {
        return Ok(());
    };
    if is_loaded(&version) {
        return Ok(());
    }
    if let Some(switched) = std::env::var_os(SWITCHED) {
        // Switched once already, and the loader still gave another library.
        let got = loaded();
        return Err(anyhow!(
            "{PROPERTY} = {version}: after switching to {}, this kvperf runs RocksDB {} from {}",
            switched.to_string_lossy(),
            got.version,
            got.build
                .path()
                .map_or("an unknown file".into(), |p| p.display().to_string())
        ));
    }
    if matches!(loaded().build, Build::Source { .. }) {
        // The process still switches: a source build's RocksDB is in the
        // executable, and LD_LIBRARY_PATH cannot replace it.
        return Err(InputError::property(
            PROPERTY,
            format!(
                "this kvperf has RocksDB {} compiled in (a source build), so it cannot run on release {version}; build it on the release library (scripts/rocksdb-release.sh)",
                loaded().version
            ),
        )
        .into());
    }
    let library = checked_library(&version)?;
    let dir = library.parent().unwrap_or(Path::new("/"));
    let mut path = OsString::from(dir);
    if let Some(rest) = std::env::var_os("LD_LIBRARY_PATH").filter(|p| !p.is_empty()) {
        path.push(":");
        path.push(rest);
    }
    let executable =
        std::fs::canonicalize("/proc/self/exe").context("cannot find kvperf's own executable")?;
    let mut command = Command::new(&executable);
    // What the parent passed privately (a password) goes on the same way.
    if let Some(private) = crate::private_args::received() {
        command.env(crate::private_args::PRIVATE_ARGS, private);
    }
    let err = command
        .args(std::env::args_os().skip(1))
        .env("LD_LIBRARY_PATH", path)
        .env(SWITCHED, &version)
        .exec();
    Err(anyhow!(
        "cannot run kvperf again on RocksDB {version}: {err}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_must_look_like_a_release() {
        let mut props = Properties::new();
        assert_eq!(asked(&props).unwrap(), None);
        props.set(PROPERTY, "10.2.1");
        assert_eq!(asked(&props).unwrap().as_deref(), Some("10.2.1"));
        for bad in ["latest", "10", "10.2", "10..1", "10.2.1-rc1"] {
            props.set(PROPERTY, bad);
            let err = asked(&props).unwrap_err().to_string();
            assert!(err.contains("is not a RocksDB release"), "{bad}: {err}");
        }
    }
}
