//! The bench scripts' own guards: a script that removes its files at the
//! end must refuse, before it measures anything, a directory that already
//! holds files of those names (a user's, or a killed run's); a setting it
//! does not know gets one line and exit 2.

use std::path::Path;
use std::process::{Command, Output};

/// bench/device-vs-fio.sh on the corners row in `dir`, with `env` added.
fn device_vs_fio(dir: &Path, env: &[(&str, &str)]) -> Output {
    let cache = tempfile::tempdir().unwrap();
    Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/bench/device-vs-fio.sh"
        ))
        .env("DIR", dir)
        .env("BENCH_CACHE", cache.path())
        .env("KVPERF", env!("CARGO_BIN_EXE_kvperf"))
        .env("ROWS", "corners")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

#[test]
fn device_vs_fio_leaves_a_store_it_did_not_make() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("rocksdb");
    std::fs::create_dir(&store).unwrap();
    std::fs::write(store.join("CURRENT"), "someone's store\n").unwrap();
    let out = device_vs_fio(dir.path(), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("{} exists", store.display())),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(store.join("CURRENT")).unwrap(),
        "someone's store\n"
    );
    assert!(out.stdout.is_empty(), "nothing measured: {:?}", out.stdout);
}

#[test]
fn device_vs_fio_names_buffer_pages_it_does_not_know() {
    let dir = tempfile::tempdir().unwrap();
    let out = device_vs_fio(dir.path(), &[("IO_BUFFERS", "tiny")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.trim(),
        "error: IO_BUFFERS is 'tiny' (huge or small)",
        "one line"
    );
    assert!(out.stdout.is_empty(), "nothing measured: {:?}", out.stdout);
}
