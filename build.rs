//! Records what makes a result reproducible: the git commit kvperf was built
//! from and the version of the bundled RocksDB.

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
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
    println!("cargo:rerun-if-changed=.git/index");

    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    let rocksdb = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"librocksdb-sys\""))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")))
        .and_then(|v| v.trim_end_matches('"').split('+').nth(1))
        .unwrap_or("unknown")
        .to_string();
    println!("cargo:rustc-env=KVPERF_ROCKSDB_VERSION={rocksdb}");
    println!("cargo:rerun-if-changed=Cargo.lock");
}
