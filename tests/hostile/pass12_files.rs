//! The twelfth hostile pass, the files side (docs/reliability.md, "Pass 12:
//! stores and files"): pass 11's open list, mended. Each case failed on
//! the main of 2026-11-29 (990db44).

use std::path::Path;

use crate::common;

/// `kvperf STEP --engine wiredtiger` on store `db` in `dir`, with the log
/// on and `config` as `-p wiredtiger.config`.
fn wiredtiger(dir: &Path, step: &str, db: &str, config: Option<&str>) -> common::Output {
    let workload = common::workload("c");
    let config = config.map(|c| format!("wiredtiger.config={c}"));
    let mut args = vec![
        step,
        "--engine",
        "wiredtiger",
        "-P",
        &workload,
        "-p",
        "recordcount=20",
        "-p",
        "operationcount=20",
        "-p",
        "wiredtiger.log=true",
        "--db",
        db,
    ];
    if let Some(config) = &config {
        args.extend(["-p", config.as_str()]);
    }
    common::kvperf(dir, &args)
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
