//! The sixteenth hostile pass: an engine's options and files before its
//! store is touched (docs/reliability.md, "Pass 16: an engine's options
//! and files before its store is touched"). A fjall option its crate
//! panics on killed fjall's worker and left the close waiting for good;
//! a FIFO at an engine's own file in kvperf's store held its open past
//! every stall watch; a RocksDB options string or trace file RocksDB
//! refuses was refused only after a `--fresh` emptied the store. Fails
//! on 4a1cd29.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::stores::{load_args, store_files, strs};
use super::waits::{rest, spawn, wait_within};
use crate::common::{assert_input_error, kvperf, workload, Output};
use crate::output_paths::mkfifo;

/// kvperf `args` in `dir`; one still running after two minutes fails
/// the test as a hang (on 4a1cd29 some never ended).
fn bounded(dir: &Path, args: &[String]) -> Output {
    let (mut child, lines) = spawn(dir, args);
    let status = wait_within(&mut child, Duration::from_secs(120), &args.join(" "));
    Output {
        code: status.code().unwrap_or(-1),
        stdout: String::new(),
        stderr: rest(&lines).join("\n"),
    }
}

fn owned(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// Pass 16: `fjall.bloom_bits` below 1 (lsm-tree keeps whole bits per
/// key: a filter of 0 bits, a remainder by zero) and `fjall.block_size`
/// above 4 MiB (an assert) panicked fjall's flush thread; the close then
/// waited until stalltimeout, and bench's (`--bloom_bits=0.5`) for good,
/// SIGINT unanswered. Both are refused now before a directory is made.
#[cfg(feature = "fjall")]
#[test]
fn fjall_values_its_crate_panics_on_are_refused_before_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = [
        ("fjall.bloom_bits=0.5", "fjall.bloom_bits"),
        ("fjall.bloom_bits=0.0001", "fjall.bloom_bits"),
        ("fjall.block_size=4194305", "fjall.block_size"),
        ("fjall.block_size=1073741824", "fjall.block_size"),
    ];
    for (option, named) in bad {
        let mut args = load_args("fjall", "d", "20", false);
        args.extend(["-p", option, "-p", "stalltimeout=5"].map(String::from));
        assert_input_error(&bounded(tmp.path(), &args), named);
        assert!(!tmp.path().join("d").exists(), "{option}: a store was made");
    }
    // db_bench's flag is mapped onto fjall.bloom_bits.
    let bench = owned(&[
        "bench",
        "--engine",
        "fjall",
        "--db",
        "b",
        "--benchmarks=fillrandom",
        "--num=20",
        "--bloom_bits=0.5",
    ]);
    assert_input_error(&bounded(tmp.path(), &bench), "fjall.bloom_bits");
    assert!(!tmp.path().join("b").exists());
    // The edges fjall takes still load.
    for option in ["fjall.bloom_bits=1", "fjall.block_size=4194304"] {
        let mut args = load_args("fjall", "e", "20", true);
        args.extend(["-p", option].map(String::from));
        let out = bounded(tmp.path(), &args);
        assert_eq!(out.code, 0, "{option}: {}", out.stderr);
    }
}

/// `kvperf run` of workload c on `db` (`records` loaded), stall watch 5 s.
fn run_args(engine: &str, db: &str, records: &str) -> Vec<String> {
    let wc = workload("c");
    let mut args = owned(&["run", "--engine", engine, "-P", &wc, "--db", db]);
    for p in [
        format!("recordcount={records}"),
        "operationcount=20".into(),
        "stalltimeout=5".into(),
    ] {
        args.extend(["-p".into(), p]);
    }
    args
}

/// The first file under `db` whose path there `wanted` picks, at any depth.
fn find(db: &Path, wanted: impl Fn(&str) -> bool) -> PathBuf {
    let mut pending = vec![db.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if wanted(&path.strip_prefix(db).unwrap().to_string_lossy()) {
                return path;
            }
        }
    }
    panic!("no such file under '{}'", db.display());
}

/// Each command in `commands` on a store whose file `at` is replaced by a
/// FIFO: refused in one line naming it, the FIFO left as it was; then
/// the file is put back.
fn assert_refused_with_a_fifo_at(dir: &Path, at: &Path, commands: &[Vec<String>]) {
    let bytes = std::fs::read(at).unwrap();
    std::fs::remove_file(at).unwrap();
    mkfifo(at);
    for args in commands {
        let out = bounded(dir, args);
        assert_input_error(&out, "a FIFO");
        let name = at.file_name().unwrap().to_string_lossy();
        assert!(out.stderr.contains(&*name), "{name}: {}", out.stderr);
        let meta = std::fs::symlink_metadata(at).unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(meta.file_type().is_fifo(), "{name}: the FIFO was touched");
    }
    std::fs::remove_file(at).unwrap();
    std::fs::write(at, bytes).unwrap();
}

/// Pass 16: a FIFO put at RocksDB's `CURRENT`, `IDENTITY` or
/// `MANIFEST-*`, or at fjall's `version` or a keyspace's `current`, in
/// kvperf's own store: the engine's open waited for a writer past
/// stalltimeout (run, load, bench, settle alike; only SIGINT ended it).
/// A device node there was read without end. Anything among an engine's
/// files that is not a plain file or a directory is refused now, named.
#[cfg(all(feature = "rocksdb", feature = "fjall"))]
#[test]
fn a_fifo_or_socket_among_an_engines_files_is_refused_not_waited_on() {
    let tmp = tempfile::tempdir().unwrap();
    for engine in ["rocksdb", "fjall"] {
        let load = kvperf(tmp.path(), &strs(&load_args(engine, engine, "50", true)));
        assert_eq!(load.code, 0, "{engine}: {}", load.stderr);
    }
    let rocks = tmp.path().join("rocksdb");
    let every_entry = [
        run_args("rocksdb", "rocksdb", "50"),
        load_args("rocksdb", "rocksdb", "50", false),
        owned(&[
            "bench",
            "--engine",
            "rocksdb",
            "--db",
            "rocksdb",
            "--use_existing_db=1",
            "--benchmarks=readrandom",
            "--num=50",
        ]),
        owned(&["settle", "--engine", "rocksdb", "--db", "rocksdb"]),
    ];
    assert_refused_with_a_fifo_at(tmp.path(), &rocks.join("CURRENT"), &every_entry);
    let run = [run_args("rocksdb", "rocksdb", "50")];
    for name in ["IDENTITY", "MANIFEST-"] {
        let at = find(&rocks, |p| p.starts_with(name));
        assert_refused_with_a_fifo_at(tmp.path(), &at, &run);
    }
    let fjall = tmp.path().join("fjall");
    let run = [run_args("fjall", "fjall", "50")];
    for name in ["fjall/version", "/current"] {
        let at = find(&fjall, |p| p.ends_with(name));
        assert_refused_with_a_fifo_at(tmp.path(), &at, &run);
    }
    // A socket at CURRENT likewise.
    let current = rocks.join("CURRENT");
    let bytes = std::fs::read(&current).unwrap();
    std::fs::remove_file(&current).unwrap();
    let socket = std::os::unix::net::UnixListener::bind(&current).unwrap();
    assert_input_error(
        &bounded(tmp.path(), &run_args("rocksdb", "rocksdb", "50")),
        "a socket",
    );
    drop(socket);
    std::fs::remove_file(&current).unwrap();
    std::fs::write(&current, bytes).unwrap();
    // The files put back, both stores run.
    for engine in ["rocksdb", "fjall"] {
        let out = bounded(tmp.path(), &run_args(engine, engine, "50"));
        assert_eq!(out.code, 0, "{engine}: {}", out.stderr);
    }
}

/// Pass 16: a `rocksdb.options` string RocksDB refuses (`bogus_opt=1`,
/// `write_buffer_size=abc`), parsed only when the store was opened, and
/// a `rocksdb.trace` that exists (a user's file or directory) or whose
/// directory does not, checked only then too: a `load --fresh` or a
/// bench fill on a loaded store emptied it first. Refused now with the
/// store as it was.
#[cfg(feature = "rocksdb")]
#[test]
fn a_rocksdb_options_string_or_trace_it_refuses_is_refused_before_fresh_empties_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let load = kvperf(tmp.path(), &strs(&load_args("rocksdb", "d", "300", true)));
    assert_eq!(load.code, 0, "{}", load.stderr);
    let before = store_files(&tmp.path().join("d"));
    std::fs::write(tmp.path().join("theirs.trace"), "precious\n").unwrap();
    std::fs::create_dir(tmp.path().join("theirs")).unwrap();
    let bad = [
        ("rocksdb.options=bogus_opt=1", "bogus_opt"),
        ("rocksdb.options=write_buffer_size=abc", "write_buffer_size"),
        ("rocksdb.trace=theirs.trace", "exists"),
        ("rocksdb.trace=theirs", "exists"),
        ("rocksdb.trace=nodir/t", "'nodir' is not a directory"),
    ];
    for (option, named) in bad {
        let mut fresh = load_args("rocksdb", "d", "300", true);
        fresh.extend(["-p", option].map(String::from));
        let fill = owned(&[
            "bench",
            "--engine",
            "rocksdb",
            "--db",
            "d",
            "--benchmarks=fillrandom",
            "--num=20",
            "-p",
            option,
        ]);
        for args in [fresh, fill] {
            assert_input_error(&bounded(tmp.path(), &args), named);
            assert_eq!(
                store_files(&tmp.path().join("d")),
                before,
                "{} emptied the store before it was refused",
                args.join(" ")
            );
        }
    }
    let theirs = std::fs::read(tmp.path().join("theirs.trace")).unwrap();
    assert_eq!(theirs, b"precious\n");
    let run = bounded(tmp.path(), &run_args("rocksdb", "d", "300"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains(" of the "), "{}", run.stderr);
}

/// Pass 16: `lmdb.max_readers` fewer than the clients (`-p threadcount`,
/// `-threads`, bench's `--threads`, one more for readwhilewriting's
/// writer) was refused by the first client, after a `load --fresh` or a
/// bench fill had emptied the store. Refused now with the store as it was.
#[cfg(feature = "lmdb")]
#[test]
fn lmdb_readers_fewer_than_the_clients_are_refused_before_fresh_empties_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let load = kvperf(tmp.path(), &strs(&load_args("lmdb", "d", "300", true)));
    assert_eq!(load.code, 0, "{}", load.stderr);
    let before = store_files(&tmp.path().join("d"));
    let fresh = |extra: &[&str]| {
        let mut args = load_args("lmdb", "d", "300", true);
        args.extend(owned(&["-p", "lmdb.max_readers=2"]));
        args.extend(owned(extra));
        args
    };
    let bench = |extra: &[&str]| {
        let mut args = owned(&["bench", "--engine", "lmdb", "--db", "d", "--num=20"]);
        args.extend(owned(&["-p", "lmdb.max_readers=2"]));
        args.extend(owned(extra));
        args
    };
    for args in [
        fresh(&["-p", "threadcount=3"]),
        fresh(&["-threads", "3"]),
        bench(&["--benchmarks=fillrandom", "--threads=3"]),
        bench(&["--benchmarks=fillrandom,readwhilewriting", "--threads=2"]),
    ] {
        assert_input_error(&bounded(tmp.path(), &args), "lmdb.max_readers=2");
        assert_eq!(
            store_files(&tmp.path().join("d")),
            before,
            "{} emptied the store before it was refused",
            args.join(" ")
        );
    }
    // As many readers as clients: loads.
    let out = bounded(tmp.path(), &fresh(&["-p", "threadcount=2"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
}
