//! Records what makes a result reproducible: the git commit kvperf was built
//! from, the RocksDB release whose C headers the bindings come from, and the
//! versions of the engines' crates; gives every executable a run path to
//! RocksDB's release library when one is linked (`ROCKSDB_LIB_DIR`). With
//! the `wiredtiger` feature, also compiles the WiredTiger C shim
//! (csrc/wt_shim.c) and links Debian's libwiredtiger (libwiredtiger-dev).

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .is_some_and(|o| !o.stdout.is_empty());
    let suffix = if dirty { "-dirty" } else { "" };
    println!("cargo:rustc-env=KVPERF_GIT_COMMIT={commit}{suffix}");
    // Where git keeps them: `.git/` in a clone; in a `git worktree`, `.git`
    // is a file and HEAD and the index are the worktree's own, the branch
    // heads the repository's. A path that does not exist would rerun this
    // script, and rebuild kvperf, on every cargo call.
    let git_path = |what: &str| {
        Command::new("git")
            .args(["rev-parse", "--git-path", what])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|| format!(".git/{what}"))
    };
    for what in ["HEAD", "refs/heads", "index"] {
        println!("cargo:rerun-if-changed={}", git_path(what));
    }

    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    let rocksdb = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"librocksdb-sys\""))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")))
        .and_then(|v| v.trim_end_matches('"').split('+').nth(1))
        .unwrap_or("unknown")
        .to_string();
    println!("cargo:rustc-env=KVPERF_ROCKSDB_VERSION={rocksdb}");
    rocksdb_runpath();
    println!("cargo:rustc-check-cfg=cfg(kvperf_rocksdb_trace)");
    #[cfg(feature = "rocksdb")]
    rocksdb_trace_shim(&lock);
    // The embedded engines' crate versions, for their `info().version`.
    for (krate, var) in [
        ("heed", "KVPERF_HEED_VERSION"),
        ("rusqlite", "KVPERF_RUSQLITE_VERSION"),
        ("fjall", "KVPERF_FJALL_VERSION"),
        ("lsm-tree", "KVPERF_LSM_TREE_VERSION"),
        ("redb", "KVPERF_REDB_VERSION"),
        ("scylla", "KVPERF_SCYLLA_VERSION"),
        ("mongodb", "KVPERF_MONGODB_VERSION"),
        ("redis", "KVPERF_REDIS_CRATE_VERSION"),
        ("postgres-protocol", "KVPERF_POSTGRES_PROTOCOL_VERSION"),
    ] {
        let version = lock
            .split("[[package]]")
            .find(|p| p.contains(&format!("name = \"{krate}\"\n")))
            .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")))
            .map(|v| v.trim_end_matches('"'))
            .unwrap_or("unknown");
        println!("cargo:rustc-env={var}={version}");
    }
    println!("cargo:rerun-if-changed=Cargo.lock");

    #[cfg(feature = "wiredtiger")]
    wiredtiger();
}

/// With `ROCKSDB_LIB_DIR` (set by scripts/rocksdb-release.sh), librocksdb-sys
/// links that directory's librocksdb.so instead of compiling RocksDB. Every
/// kvperf executable (tests and examples too) then finds it by a
/// DT_RUNPATH, which LD_LIBRARY_PATH still overrides: a step of another
/// RocksDB release runs with that release's directory first.
fn rocksdb_runpath() {
    println!("cargo:rerun-if-env-changed=ROCKSDB_LIB_DIR");
    println!("cargo:rerun-if-env-changed=ROCKSDB_STATIC");
    let dynamic = std::env::var_os("CARGO_FEATURE_ROCKSDB").is_some()
        && std::env::var_os("ROCKSDB_STATIC").is_none();
    if let (true, Ok(dir)) = (dynamic, std::env::var("ROCKSDB_LIB_DIR")) {
        println!("cargo:rustc-link-arg=-Wl,--enable-new-dtags");
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}

/// Compiles the shim against wiredtiger.h and links libwiredtiger, found
/// with pkg-config (Debian's wiredtiger.pc), else in the usual places.
#[cfg(feature = "wiredtiger")]
fn wiredtiger() {
    use std::path::{Path, PathBuf};

    println!("cargo:rerun-if-changed=csrc/wt_shim.c");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let pkg_config = |what: &str| {
        Command::new("pkg-config")
            .args([what, "wiredtiger"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let include = pkg_config("--variable=includedir")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/include"));
    let libdir = pkg_config("--variable=libdir").unwrap_or_else(|| {
        [
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/usr/local/lib",
            "/usr/lib",
        ]
        .into_iter()
        .find(|d| Path::new(d).join("libwiredtiger.so").exists())
        .unwrap_or("/usr/lib/x86_64-linux-gnu")
        .to_string()
    });
    if !include.join("wiredtiger.h").exists() {
        panic!(
            "the wiredtiger feature needs WiredTiger's header and library: \
             apt-get install libwiredtiger-dev (or run scripts/ensure-deps.sh); \
             no wiredtiger.h in {}",
            include.display()
        );
    }
    cc::Build::new()
        .file("csrc/wt_shim.c")
        .include(&include)
        .opt_level(2)
        .warnings(true)
        .compile("kvperf_wt_shim");
    println!("cargo:rustc-link-search=native={libdir}");
    println!("cargo:rustc-link-lib=dylib=wiredtiger");
    // Where the compressor extensions (libwiredtiger_snappy.so...) are.
    println!("cargo:rustc-env=KVPERF_WT_LIBDIR={libdir}");
}

/// With the release library (`ROCKSDB_LIB_DIR`), compiles
/// csrc/rocksdb_trace_shim.cc (`-p rocksdb.trace=FILE`: DB::StartTrace,
/// C++ only in that release) against the headers of the same RocksDB
/// release, which the pinned librocksdb-sys crate bundles, and sets
/// `kvperf_rocksdb_trace`. The release library keeps GCC's pre-C++11
/// std::string ABI. Without it (KVPERF_ROCKSDB=source) no shim is built
/// and `rocksdb.trace` says so.
#[cfg(feature = "rocksdb")]
fn rocksdb_trace_shim(lock: &str) {
    use std::path::PathBuf;

    println!("cargo:rerun-if-changed=csrc/rocksdb_trace_shim.cc");
    if std::env::var_os("ROCKSDB_LIB_DIR").is_none() {
        return;
    }
    let Some(version) = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"librocksdb-sys\""))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")))
        .map(|v| v.trim_end_matches('"').to_string())
    else {
        return;
    };
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    let registries = cargo_home
        .map(|h| h.join("registry/src"))
        .and_then(|d| std::fs::read_dir(d).ok());
    let Some(source) = registries.into_iter().flatten().flatten().find_map(|r| {
        let dir = r.path().join(format!("librocksdb-sys-{version}/rocksdb"));
        dir.join("db/column_family.h").exists().then_some(dir)
    }) else {
        return;
    };
    cc::Build::new()
        .cpp(true)
        .file("csrc/rocksdb_trace_shim.cc")
        .include(&source)
        .include(source.join("include"))
        .define("_GLIBCXX_USE_CXX11_ABI", "0")
        .define("ROCKSDB_PLATFORM_POSIX", None)
        .define("OS_LINUX", None)
        .flag("-std=c++17")
        .opt_level(2)
        .warnings(false)
        .compile("kvperf_rocksdb_trace_shim");
    println!("cargo:rustc-cfg=kvperf_rocksdb_trace");
}
