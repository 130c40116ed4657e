//! The twelfth hostile pass, the files side (docs/reliability.md, "Pass 12:
//! stores and files"): pass 11's open list, mended. Each case failed on
//! the main of 2026-11-29 (990db44).

use std::path::Path;

use crate::common;

/// `kvperf STEP --engine ENGINE` on store `db` in `dir`: 20 records of
/// workload c, and `extra`.
fn step(dir: &Path, engine: &str, step: &str, db: &str, extra: &[&str]) -> common::Output {
    let workload = common::workload("c");
    let mut args = vec![
        step,
        "--engine",
        engine,
        "-P",
        &workload,
        "-p",
        "recordcount=20",
        "-p",
        "operationcount=20",
        "--db",
        db,
    ];
    args.extend_from_slice(extra);
    common::kvperf(dir, &args)
}

/// `kvperf STEP --engine wiredtiger` on store `db` in `dir`, with the log
/// on and `config` as `-p wiredtiger.config`.
fn wiredtiger(dir: &Path, phase: &str, db: &str, config: Option<&str>) -> common::Output {
    let config = config.map(|c| format!("wiredtiger.config={c}"));
    let mut extra = vec!["-p", "wiredtiger.log=true"];
    if let Some(config) = &config {
        extra.extend(["-p", config.as_str()]);
    }
    step(dir, "wiredtiger", phase, db, &extra)
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn every_spelling_of_a_wiredtiger_log_path_out_of_the_store_is_refused() {
    // On 990db44 pass 10's check read `path=` only: `path:"B"` (WiredTiger
    // takes `:` as `=`), a quoted `"path"=`, the JSON `log={"path":...}`,
    // and a relative `path=sub` with `sub` a symbolic link to another
    // store (or a real directory holding a hard link to its log file),
    // each removed the other store's `WiredTigerLog.0000000001`, in
    // `-p wiredtiger.config` and in `WiredTiger.basecfg` alike. Now each is
    // read as WiredTiger reads it: one line, exit 2, the other store whole.
    let dir = tempfile::tempdir().unwrap();
    let out = wiredtiger(dir.path(), "load", "theirs", None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let theirs = dir.path().join("theirs");
    let before = names(&theirs);
    assert!(before.contains(&"WiredTigerLog.0000000001".to_string()));
    let out = wiredtiger(dir.path(), "load", "db", None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let db = dir.path().join("db");
    std::os::unix::fs::symlink(&theirs, db.join("sub")).unwrap();
    std::fs::create_dir(db.join("real")).unwrap();
    std::fs::hard_link(
        theirs.join("WiredTigerLog.0000000001"),
        db.join("real/WiredTigerLog.0000000001"),
    )
    .unwrap();
    let abs = theirs.display();
    let configs = [
        format!("log=(enabled=true,path:\"{abs}\")"),
        format!("log=(enabled=true,\"path\"=\"{abs}\")"),
        format!("log={{\"enabled\":true,\"path\":\"{abs}\"}}"),
        format!("statistics_log=(wait=1,path:\"{abs}\")"),
        "log=(enabled=true,path=sub)".to_string(),
        "log=(enabled=true,path=./sub/)".to_string(),
        "log=(enabled=true,path=real)".to_string(),
    ];
    for config in &configs {
        let out = wiredtiger(dir.path(), "run", "db", Some(config));
        common::assert_input_error(&out, "wiredtiger.config");
        assert_eq!(names(&theirs), before, "{config}: {}", out.stderr);
    }
    // The same in the store's base configuration, which WiredTiger reads
    // at every open.
    let base = db.join("WiredTiger.basecfg");
    let text = std::fs::read_to_string(&base).unwrap();
    for config in &configs[..3] {
        std::fs::write(&base, format!("{text}{config}\n")).unwrap();
        let out = wiredtiger(dir.path(), "run", "db", None);
        common::assert_input_error(&out, "holds a 'WiredTiger.basecfg' whose path=");
        assert_eq!(names(&theirs), before, "{config}: {}", out.stderr);
    }
    std::fs::write(&base, format!("{text}log=(enabled=true,path=sub)\n")).unwrap();
    let out = wiredtiger(dir.path(), "run", "db", None);
    common::assert_input_error(&out, "is a symbolic link");
    assert_eq!(names(&theirs), before, "{}", out.stderr);
    // A real directory inside the store is still the user's to choose.
    std::fs::write(&base, &text).unwrap();
    std::fs::create_dir(db.join("journal")).unwrap();
    let out = wiredtiger(dir.path(), "run", "db", Some("log=(path:\"journal\")"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(names(&theirs), before);
}

#[test]
fn a_fresh_load_keeps_what_the_engine_does_not_make_at_its_file_names() {
    // On 990db44 `load --fresh` removed whatever stood at one of the
    // engine's file names in kvperf's store: a user's directory at
    // `lock.mdb` (or a RocksDB, redb, SQLite, WiredTiger name), a user's
    // file in fjall's own directory, each with all it held, exit 0. Now:
    // one line naming it, exit 2, nothing removed; moved out, the load
    // runs.
    let fifo = |path: &Path| {
        let made = std::process::Command::new("mkfifo").arg(path).status();
        assert!(made.unwrap().success(), "mkfifo {}", path.display());
    };
    let user_dir = |path: &Path| {
        std::fs::create_dir(path).unwrap();
        std::fs::write(path.join("note.txt"), "a user's note\n").unwrap();
    };
    let user_file = |path: &Path| std::fs::write(path, "a user's note\n").unwrap();
    // (engine, name in the store, an engine's file there to take the place of, how)
    type Make<'a> = &'a dyn Fn(&Path);
    let cases: [(&str, &str, bool, Make); 9] = [
        ("lmdb", "lock.mdb", true, &user_dir),
        ("lmdb", "data.mdb", true, &fifo),
        ("redb", "kvperf.redb", true, &user_dir),
        ("rocksdb", "MANIFEST-000001", false, &user_dir),
        ("rocksdb", "CURRENT", true, &user_dir),
        ("sqlite", "kvperf.sqlite-wal", false, &user_dir),
        ("wiredtiger", "WiredTiger.turtle", true, &user_dir),
        ("wiredtiger", "journal", false, &user_dir),
        ("fjall", "fjall/notes.txt", false, &user_file),
    ];
    for (engine, name, replaces, make) in cases {
        let dir = tempfile::tempdir().unwrap();
        let out = step(dir.path(), engine, "load", "db", &[]);
        assert_eq!(out.code, 0, "{engine}: {}", out.stderr);
        let at = dir.path().join("db").join(name);
        if replaces {
            std::fs::remove_file(&at).unwrap();
        }
        make(&at);
        let before = names(&dir.path().join("db"));
        let out = step(dir.path(), engine, "load", "db", &["--fresh"]);
        common::assert_input_error(&out, &format!("db/{name}"));
        assert_eq!(names(&dir.path().join("db")), before, "{engine} {name}");
        assert!(
            std::fs::symlink_metadata(&at).is_ok(),
            "{engine}: {name} removed"
        );
        if at.is_dir() {
            assert!(
                at.join("note.txt").exists(),
                "{engine}: {name}'s note removed"
            );
        }
        // Moved out, the engine's own files go and the load runs.
        std::fs::rename(&at, dir.path().join("moved")).unwrap();
        let out = step(dir.path(), engine, "load", "db", &["--fresh"]);
        assert_eq!(out.code, 0, "{engine}: {}", out.stderr);
    }
}
