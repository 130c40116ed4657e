//! What is RocksDB's own beyond the conformance suite (tests/engines.rs):
//! options reach RocksDB, and compaction leaves one shape.
#![cfg(feature = "rocksdb")]

use std::path::Path;

use kvperf::engine::{self, wait, Access, ClientSlot, OpenMode, OpenOptions, Record};
use kvperf::properties::Properties;

fn open(dir: &Path, props: &Properties) -> Box<dyn engine::Engine> {
    let spec = engine::find("rocksdb").unwrap();
    engine::open(
        spec,
        &OpenOptions {
            dir: Some(dir),
            properties: props,
            mode: OpenMode::Any,
            runtime: None,
            clients: None,
        },
    )
    .unwrap()
}

const ONE: ClientSlot = ClientSlot::thread(0, 1, Access::Records);

fn record(value: &str) -> Record {
    let mut r = Record::new();
    r.push(b"field0", value.as_bytes());
    r
}

/// RocksDB writes what it was opened with into its OPTIONS file.
fn options_file(dir: &Path) -> String {
    let path = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("OPTIONS-"))
        .map(|e| e.path())
        .max()
        .expect("an OPTIONS file");
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn options_from_properties_reach_rocksdb() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let mut props = Properties::new();
    props.set("rocksdb.compression", "lz4");
    props.set("rocksdb.bloom_bits", "10");
    props.set("rocksdb.wal", "false");
    props.set("rocksdb.format_version", "6");
    let engine = open(&db, &props);
    let opts = engine.info().options;
    assert_eq!(opts["compression"], "lz4");
    assert_eq!(opts["bloom_bits"], "10");
    assert_eq!(opts["wal"], "false");
    assert_eq!(
        opts["block_cache_size"], "33554432",
        "defaults are recorded"
    );
    let text = options_file(&db);
    assert!(text.contains("compression=kLZ4Compression"), "compression");
    assert!(text.contains("bloomfilter"), "bloom filter");
    assert!(text.contains("format_version=6"), "format_version");
}

#[test]
fn compact_leaves_no_level0_files() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let level0_files = || {
        let raw = rocksdb::DB::open_default(&db).unwrap();
        raw.property_value("rocksdb.num-files-at-level0").unwrap()
    };
    for round in 0..3 {
        let engine = open(&db, &Properties::new());
        let mut w = wait(engine.client(ONE)).unwrap();
        for i in 0..100 {
            let key = format!("user{i}");
            w.insert("usertable", key.as_bytes(), &record(&round.to_string()))
                .now()
                .unwrap();
        }
        drop(w);
        engine.close().unwrap(); // flushes: one more level-0 file
    }
    assert_eq!(level0_files().as_deref(), Some("3"));
    {
        let engine = open(&db, &Properties::new());
        engine.compact().unwrap();
        engine.settle(false).unwrap();
        assert!(engine.stats().contains_key("total-sst-files-size"));
    }
    assert_eq!(level0_files().as_deref(), Some("0"));
}
