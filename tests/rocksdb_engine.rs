//! The RocksDB engine through the engine seam: every operation round-trips.

use kvperf::engine::{self, OpError, OpenOptions, Record, ScanResults};
use kvperf::workload::properties::Properties;

fn open(dir: &std::path::Path) -> Box<dyn engine::Engine> {
    let props = Properties::new();
    let spec = engine::find("rocksdb").unwrap();
    engine::open(
        spec,
        &OpenOptions {
            db_dir: dir,
            properties: &props,
        },
    )
    .unwrap()
}

fn record(fields: &[(&str, &str)]) -> Record {
    let mut r = Record::new();
    for (n, v) in fields {
        r.push(n.as_bytes(), v.as_bytes());
    }
    r
}

#[test]
fn insert_read_update_delete_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let db = open(tmp.path());
    let mut w = db.worker().unwrap();
    let t = "usertable";
    w.insert(t, b"user1", &record(&[("field0", "a"), ("field1", "b")]))
        .unwrap();

    let mut out = Record::new();
    w.read(t, b"user1", None, &mut out).unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(out.get(b"field1"), Some(&b"b"[..]));

    out.clear();
    w.read(t, b"user1", Some(&["field0"]), &mut out).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out.get(b"field0"), Some(&b"a"[..]));

    // Update merges one field into the stored record (YCSB's binding).
    w.update(t, b"user1", &record(&[("field1", "B")])).unwrap();
    out.clear();
    w.read(t, b"user1", None, &mut out).unwrap();
    assert_eq!(out.get(b"field0"), Some(&b"a"[..]));
    assert_eq!(out.get(b"field1"), Some(&b"B"[..]));

    assert_eq!(
        w.update(t, b"nobody", &record(&[("field0", "x")])),
        Err(OpError::NotFound)
    );
    w.delete(t, b"user1").unwrap();
    out.clear();
    assert_eq!(w.read(t, b"user1", None, &mut out), Err(OpError::NotFound));
}

#[test]
fn scan_returns_records_in_key_order() {
    let tmp = tempfile::tempdir().unwrap();
    let db = open(tmp.path());
    let mut w = db.worker().unwrap();
    for k in [5, 1, 9, 3, 7] {
        let key = format!("user{k}");
        w.insert("usertable", key.as_bytes(), &record(&[("field0", &key)]))
            .unwrap();
    }
    let mut rows = ScanResults::default();
    w.scan("usertable", b"user3", 3, None, &mut rows).unwrap();
    let seen: Vec<&[u8]> = rows
        .rows()
        .iter()
        .map(|r| r.get(b"field0").unwrap())
        .collect();
    assert_eq!(seen, vec![&b"user3"[..], b"user5", b"user7"]);

    // Past the end: fewer rows, still OK.
    rows.clear();
    w.scan("usertable", b"user8", 10, Some(&["field0"]), &mut rows)
        .unwrap();
    assert_eq!(rows.len(), 1);
}

#[test]
fn data_survives_close_and_reopen() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let db = open(tmp.path());
        db.worker()
            .unwrap()
            .insert("usertable", b"k", &record(&[("f", "v")]))
            .unwrap();
        db.close().unwrap();
        assert!(db.stats().contains_key("total-sst-files-size"));
    }
    let db = open(tmp.path());
    let mut out = Record::new();
    db.worker()
        .unwrap()
        .read("usertable", b"k", None, &mut out)
        .unwrap();
    assert_eq!(out.get(b"f"), Some(&b"v"[..]));
    assert_eq!(
        db.info().options.get("compression").map(String::as_str),
        Some("snappy")
    );
}

#[test]
fn options_from_properties_reach_the_engine() {
    let tmp = tempfile::tempdir().unwrap();
    let mut props = Properties::new();
    props.set("rocksdb.compression", "lz4");
    props.set("rocksdb.bloom_bits", "10");
    props.set("rocksdb.wal", "false");
    let spec = engine::find("rocksdb").unwrap();
    let db = engine::open(
        spec,
        &OpenOptions {
            db_dir: tmp.path(),
            properties: &props,
        },
    )
    .unwrap();
    let opts = db.info().options;
    assert_eq!(opts["compression"], "lz4");
    assert_eq!(opts["bloom_bits"], "10");
    assert_eq!(opts["wal"], "false");
    // RocksDB writes what it was opened with into its OPTIONS file.
    let options_file = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().starts_with("OPTIONS-"))
        .expect("an OPTIONS file");
    let text = std::fs::read_to_string(options_file.path()).unwrap();
    assert!(
        text.contains("compression=kLZ4Compression"),
        "compression not applied"
    );
    assert!(text.contains("bloomfilter"), "bloom filter not applied");
}

#[test]
fn compact_leaves_no_level0_files() {
    let tmp = tempfile::tempdir().unwrap();
    let level0_files = || {
        let raw = rocksdb::DB::open_default(tmp.path()).unwrap();
        raw.property_value("rocksdb.num-files-at-level0").unwrap()
    };
    {
        let db = open(tmp.path());
        let mut w = db.worker().unwrap();
        for round in 0..3 {
            for i in 0..100 {
                let key = format!("user{i}");
                let value = record(&[("field0", &round.to_string())]);
                w.insert("usertable", key.as_bytes(), &value).unwrap();
            }
            db.close().unwrap(); // flushes: one more level-0 file
        }
    }
    assert_eq!(level0_files().as_deref(), Some("3"));
    {
        let db = open(tmp.path());
        db.compact().unwrap();
        db.settle(false).unwrap();
    }
    assert_eq!(level0_files().as_deref(), Some("0"));
}
