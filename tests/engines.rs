//! The one conformance suite: every engine in the registry (compiled in),
//! through the same seam, with the same checks. Directory engines get a
//! fresh directory per check; server engines run every check against a
//! real server that `kvperf server start` starts for this test on free
//! ports (and stops afterwards), each check in its own namespace. An
//! engine with async operations passes every check twice: with its
//! clients on threads (blocking calls) and as tasks awaiting them on
//! the runner's runtime. The null engine stores nothing,
//! so it is checked only for what it declares.

use crate::common;

use std::collections::BTreeSet;
use std::future::IntoFuture;
use std::path::PathBuf;

use kvperf::engine::{
    self, wait, Access, Call, Capability, ClientSlot, Engine, EngineSpec, KvSupport, OpError,
    OpResult, OpenMode, OpenOptions, Operations, Record, Runs, ScanResults, StoreKind,
};
use kvperf::properties::Properties;
use kvperf::results::step::Clients;
use kvperf::results::StepOutput;
use kvperf::runner::{ClientRuntime, TaskScheduling};

/// How a check's clients run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seam {
    /// On threads; `kvperf` with clients=threads.
    Threads,
    /// As tasks, on a runner's runtime given at open; `kvperf`
    /// with clients=tasks.
    Tasks,
}

/// The seams `spec` has.
fn seams(spec: &EngineSpec) -> &'static [Seam] {
    if spec.capabilities.async_ops.available() {
        &[Seam::Threads, Seam::Tasks]
    } else {
        &[Seam::Threads]
    }
}

/// Worker threads of the runtime of client tasks, here and in `kvperf`.
const RUNTIME_THREADS: usize = 2;

/// Where a check's store lives: a directory engine gets a fresh directory,
/// a server engine its own namespace on the test's server.
struct Store {
    _tmp: tempfile::TempDir,
    dir: Option<PathBuf>,
    props: Properties,
    seam: Seam,
    /// The runtime an engine opened for tasks runs its driver on.
    runtime: Option<ClientRuntime>,
}

impl Store {
    fn new(spec: &EngineSpec, server: Option<&Server>, seam: Seam) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let dir = spec.uses_data_dir().then(|| tmp.path().join("db"));
        let mut props = server.map_or_else(Properties::new, |s| s.props.clone());
        if let StoreKind::Server { namespace, .. } = spec.store {
            props.set(namespace, &unique_name());
        }
        Self {
            _tmp: tmp,
            dir,
            props,
            seam,
            runtime: (seam == Seam::Tasks).then(|| {
                ClientRuntime::new(
                    RUNTIME_THREADS,
                    TaskScheduling::default_for(&spec.capabilities),
                )
                .unwrap()
            }),
        }
    }

    /// A record client of `engine` through the store's seam: client
    /// `index` of `count`.
    fn client<'e>(&self, engine: &'e dyn Engine, (index, count): (usize, usize)) -> Client<'e> {
        let mut slot = ClientSlot::thread(index, count, Access::Records);
        match &self.runtime {
            None => Client {
                handle: None,
                inner: wait(engine.client(slot)).unwrap(),
            },
            Some(rt) => {
                let handle = rt.handle().clone();
                slot.runs = Runs::Task;
                let inner = handle.block_on(engine.client(slot)).unwrap();
                Client {
                    handle: Some(handle),
                    inner,
                }
            }
        }
    }

    fn open(&self, spec: &EngineSpec, mode: OpenMode) -> Box<dyn Engine> {
        self.open_with(spec, mode, &Properties::new())
            .unwrap_or_else(|e| panic!("{}: open {mode:?}: {e:#}", spec.name))
    }

    /// Opens with `extra` properties over the store's own.
    fn open_with(
        &self,
        spec: &EngineSpec,
        mode: OpenMode,
        extra: &Properties,
    ) -> anyhow::Result<Box<dyn Engine>> {
        let mut props = self.props.clone();
        for (k, v) in extra.iter() {
            props.set(k, v);
        }
        engine::open(
            spec,
            &OpenOptions {
                dir: self.dir.as_deref(),
                properties: &props,
                mode,
                runtime: self.runtime.as_ref().map(ClientRuntime::handle),
                clients: None,
            },
        )
    }

    /// `kvperf` arguments that point it at this store, through its seam:
    /// `--engine`, `--db` and `-p`s.
    fn cli_args(&self, spec: &EngineSpec) -> Vec<String> {
        let mut args = vec!["--engine".to_string(), spec.name.into()];
        if let Some(db) = &self.dir {
            args.extend(["--db".into(), db.display().to_string()]);
        }
        let mut props: Vec<String> = self.props.iter().map(|(k, v)| format!("{k}={v}")).collect();
        match self.seam {
            Seam::Threads if spec.capabilities.async_ops.available() => {
                props.push("clients=threads".into())
            }
            Seam::Threads => {}
            Seam::Tasks => props.extend([
                "clients=tasks".into(),
                format!("runtimethreads={RUNTIME_THREADS}"),
            ]),
        }
        for p in props {
            args.extend(["-p".into(), p]);
        }
        args
    }

    /// How `kvperf` runs the clients of this store's seam.
    fn clients(&self) -> Clients {
        match self.seam {
            Seam::Threads => Clients::Threads,
            Seam::Tasks => Clients::Tasks {
                runtime_threads: RUNTIME_THREADS,
                pinned: self
                    .runtime
                    .as_ref()
                    .is_some_and(|rt| rt.scheduling() == TaskScheduling::Pinned),
            },
        }
    }
}

/// A client's operations, each finished from the calling thread: at once
/// (a thread's client), or awaited on the runtime its engine was opened
/// with (a task's).
struct Client<'e> {
    handle: Option<tokio::runtime::Handle>,
    inner: Box<dyn Operations + 'e>,
}

fn finish<T>(handle: &Option<tokio::runtime::Handle>, call: Call<'_, T>) -> Result<T, OpError> {
    match handle {
        None => call.now(),
        Some(h) => h.block_on(call.into_future()),
    }
}

impl Client<'_> {
    fn read(&mut self, t: &str, k: &[u8], f: Option<&[&str]>, o: &mut Record) -> OpResult {
        finish(&self.handle, self.inner.read(t, k, f, o))
    }
    fn scan(
        &mut self,
        t: &str,
        k: &[u8],
        n: usize,
        f: Option<&[&str]>,
        o: &mut ScanResults,
    ) -> OpResult {
        finish(&self.handle, self.inner.scan(t, k, n, f, o))
    }
    fn update(&mut self, t: &str, k: &[u8], v: &Record) -> OpResult {
        finish(&self.handle, self.inner.update(t, k, v))
    }
    fn insert(&mut self, t: &str, k: &[u8], v: &Record) -> OpResult {
        finish(&self.handle, self.inner.insert(t, k, v))
    }
    fn delete(&mut self, t: &str, k: &[u8]) -> OpResult {
        finish(&self.handle, self.inner.delete(t, k))
    }
}

/// A name no other check uses (a keyspace, a database, a key prefix).
fn unique_name() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "kvperf_t{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The server a server engine talks to, started for this test on free
/// ports, with the properties that point the engine at it.
struct Server {
    _server: common::server::Server,
    props: Properties,
}

impl Server {
    /// Starts the server `spec` talks to; None (with the reason printed)
    /// when this machine cannot run it.
    fn start(spec: &EngineSpec) -> Option<Self> {
        let StoreKind::Server { server, .. } = spec.store else {
            return None;
        };
        let started = common::server::Server::start(server, spec.name)?;
        let mut props = Properties::new();
        props.set(&format!("{}.port", spec.name), &started.port.to_string());
        Some(Self {
            _server: started,
            props,
        })
    }
}

/// Engines that store data in a directory.
fn directory_engines() -> Vec<&'static EngineSpec> {
    engine::registry()
        .into_iter()
        .filter(|s| s.uses_data_dir())
        .collect()
}

/// A check: an engine and a way to get a fresh store for it.
type Check = fn(&EngineSpec, &dyn Fn() -> Store);

/// Every check of the suite, in order.
const CHECKS: [(&str, Check); 11] = [
    ("every record operation round-trips", round_trips),
    ("scans return records in key order", scans_in_order),
    ("data survives a reopen", survives_reopen),
    (
        "an existing store settles whatever its fieldcount",
        settles_whatever_its_fieldcount,
    ),
    ("a fresh store is empty", fresh_store_is_empty),
    ("the footprint counts the engine's data", footprint),
    ("several threads write at once", threads_at_once),
    ("raw key-values for db_bench", raw_key_values),
    ("YCSB data integrity", data_integrity),
    (
        "a run's status lines and recorded clients",
        status_lines_and_clients,
    ),
    (
        "a missing capability is an error",
        lacking_compaction_is_an_error,
    ),
];

#[test]
fn directory_engines_conform() {
    for spec in directory_engines() {
        for &seam in seams(spec) {
            for (what, check) in CHECKS {
                eprintln!("{} ({seam:?}): {what}", spec.name);
                check(spec, &|| Store::new(spec, None, seam));
            }
        }
    }
}

#[test]
fn server_engines_conform_against_real_servers() {
    for spec in engine::registry() {
        if !matches!(spec.store, StoreKind::Server { .. }) {
            continue;
        }
        let Some(server) = Server::start(spec) else {
            continue;
        };
        for &seam in seams(spec) {
            for (what, check) in CHECKS {
                eprintln!("{} ({seam:?}): {what}", spec.name);
                check(spec, &|| Store::new(spec, Some(&server), seam));
            }
        }
    }
}

const ONE: (usize, usize) = (0, 1);

fn key(n: u64) -> Vec<u8> {
    format!("user{n:08}").into_bytes()
}

/// A record whose field0 holds its own key, so scans can show their order.
fn record(n: u64, fields: usize) -> Record {
    let mut r = Record::new();
    r.push(b"field0", &key(n));
    for f in 1..fields {
        r.push(
            format!("field{f}").as_bytes(),
            format!("value-{n}-{f}").as_bytes(),
        );
    }
    r
}

fn field(r: &Record, name: &str) -> Option<Vec<u8>> {
    r.get(name.as_bytes()).map(<[u8]>::to_vec)
}

fn round_trips(spec: &EngineSpec, store: &dyn Fn() -> Store) {
    let store = store();
    let engine = store.open(spec, OpenMode::Fresh);
    let mut w = store.client(engine.as_ref(), ONE);
    let name = spec.name;
    let (t, k) = ("usertable", key(1));
    w.insert(t, &k, &record(1, 4)).unwrap();

    let mut out = Record::new();
    w.read(t, &k, None, &mut out).unwrap();
    assert_eq!(out.len(), 4, "{name}: read all fields");
    assert_eq!(
        field(&out, "field2").as_deref(),
        Some(&b"value-1-2"[..]),
        "{name}"
    );

    out.clear();
    w.read(t, &k, Some(&["field3"]), &mut out).unwrap();
    assert_eq!(out.len(), 1, "{name}: read one field");
    assert_eq!(
        field(&out, "field3").as_deref(),
        Some(&b"value-1-3"[..]),
        "{name}"
    );

    let mut update = Record::new();
    update.push(b"field1", b"changed");
    w.update(t, &k, &update).unwrap();
    out.clear();
    w.read(t, &k, None, &mut out).unwrap();
    assert_eq!(
        field(&out, "field1").as_deref(),
        Some(&b"changed"[..]),
        "{name}: updated"
    );
    assert_eq!(
        field(&out, "field2").as_deref(),
        Some(&b"value-1-2"[..]),
        "{name}: kept"
    );
    assert_eq!(out.len(), 4, "{name}: an update keeps the other fields");

    w.delete(t, &k).unwrap();
    out.clear();
    assert_eq!(
        w.read(t, &k, None, &mut out),
        Err(OpError::NotFound),
        "{name}"
    );
    assert_eq!(
        w.read(t, &key(99), None, &mut out),
        Err(OpError::NotFound),
        "{name}: a missing key"
    );
    if spec.capabilities.update_needs_existing {
        assert_eq!(
            w.update(t, &key(99), &update),
            Err(OpError::NotFound),
            "{name}: updating a missing key"
        );
    } else {
        // An upsert (Cassandra's UPDATE, as YCSB's binding): the record is created.
        w.update(t, &key(99), &update).unwrap();
        out.clear();
        w.read(t, &key(99), None, &mut out).unwrap();
        assert_eq!(
            field(&out, "field1").as_deref(),
            Some(&b"changed"[..]),
            "{name}: upserted"
        );
    }
    drop(w);
    engine.close().unwrap();
}

fn scans_in_order(spec: &EngineSpec, store: &dyn Fn() -> Store) {
    let store = store();
    let engine = store.open(spec, OpenMode::Fresh);
    let mut w = store.client(engine.as_ref(), ONE);
    // Inserted out of order.
    for n in (0..100u64).map(|i| (i * 37) % 100) {
        w.insert("usertable", &key(n), &record(n, 2)).unwrap();
    }
    let mut rows = ScanResults::default();
    w.scan("usertable", &key(10), 20, None, &mut rows).unwrap();
    let keys: Vec<Vec<u8>> = rows
        .rows()
        .iter()
        .filter_map(|r| field(r, "field0"))
        .collect();
    if spec.capabilities.ordered_scans {
        let expected: Vec<Vec<u8>> = (10..30).map(key).collect();
        assert_eq!(
            keys, expected,
            "{}: 20 records from key 10, in order",
            spec.name
        );
        rows.clear();
        w.scan("usertable", &key(95), 20, Some(&["field1"]), &mut rows)
            .unwrap();
        assert_eq!(rows.len(), 5, "{}: a scan stops at the last key", spec.name);
        assert!(
            rows.rows().iter().all(|r| r.len() == 1),
            "{}: one field",
            spec.name
        );
    } else {
        // Another order (Cassandra's tokens): the right number of distinct,
        // stored records, starting at the start key.
        assert_eq!(keys.len(), 20, "{}: 20 records", spec.name);
        assert_eq!(keys[0], key(10), "{}: from the start key", spec.name);
        let distinct: BTreeSet<&Vec<u8>> = keys.iter().collect();
        assert_eq!(distinct.len(), 20, "{}: distinct records", spec.name);
        assert!(
            keys.iter().all(|k| (0..100).map(key).any(|s| &s == k)),
            "{}",
            spec.name
        );
    }
    drop(w);
    engine.close().unwrap();
}

fn survives_reopen(spec: &EngineSpec, store: &dyn Fn() -> Store) {
    let store = store();
    let engine = store.open(spec, OpenMode::Fresh);
    let mut w = store.client(engine.as_ref(), ONE);
    for n in 0..50 {
        w.insert("usertable", &key(n), &record(n, 3)).unwrap();
    }
    drop(w);
    engine.close().unwrap();
    drop(engine);

    let engine = store.open(spec, OpenMode::Existing);
    let mut w = store.client(engine.as_ref(), ONE);
    for n in 50..60 {
        w.insert("usertable", &key(n), &record(n, 3)).unwrap();
    }
    let mut out = Record::new();
    for n in 0..60 {
        out.clear();
        w.read("usertable", &key(n), None, &mut out)
            .unwrap_or_else(|e| panic!("{}: key {n} after reopen: {e:?}", spec.name));
    }
    drop(w);
    engine.close().unwrap();
}

/// `kvperf settle` (and db_bench on an existing store) open a store as
/// Existing and read no records, so a store loaded with one field opens
/// and settles without being told its fieldcount (the default is 10).
fn settles_whatever_its_fieldcount(spec: &EngineSpec, store: &dyn Fn() -> Store) {
    let store = store();
    let mut one_field = Properties::new();
    one_field.set("fieldcount", "1");
    let engine = store
        .open_with(spec, OpenMode::Fresh, &one_field)
        .unwrap_or_else(|e| panic!("{}: open with fieldcount=1: {e:#}", spec.name));
    let mut w = store.client(engine.as_ref(), ONE);
    w.insert("usertable", &key(1), &record(1, 1)).unwrap();
    drop(w);
    engine.close().unwrap();
    drop(engine);

    let engine = store.open(spec, OpenMode::Existing);
    engine
        .settle(false)
        .unwrap_or_else(|e| panic!("{}: settle: {e:#}", spec.name));
    engine.close().unwrap();
}

fn fresh_store_is_empty(spec: &EngineSpec, store: &dyn Fn() -> Store) {
    let store = store();
    let engine = store.open(spec, OpenMode::Fresh);
    let mut w = store.client(engine.as_ref(), ONE);
    for n in 0..20 {
        w.insert("usertable", &key(n), &record(n, 2)).unwrap();
    }
    drop(w);
    engine.close().unwrap();
    drop(engine);
    if let Some(dir) = &store.dir {
        std::fs::write(dir.join("notes.txt"), "a user's file").unwrap();
        std::fs::create_dir(dir.join("my-folder")).unwrap();
    }

    let engine = store.open(spec, OpenMode::Fresh);
    let mut w = store.client(engine.as_ref(), ONE);
    let mut out = Record::new();
    assert_eq!(
        w.read("usertable", &key(3), None, &mut out),
        Err(OpError::NotFound),
        "{}: fresh store",
        spec.name
    );
    let mut rows = ScanResults::default();
    w.scan("usertable", &key(0), 10, None, &mut rows).unwrap();
    assert!(rows.is_empty(), "{}: a fresh store scans empty", spec.name);
    drop(w);
    engine.close().unwrap();
    if let Some(dir) = &store.dir {
        assert!(
            dir.join("notes.txt").exists(),
            "{}: a user's file",
            spec.name
        );
        assert!(
            dir.join("my-folder").exists(),
            "{}: a user's folder",
            spec.name
        );
    }
}

fn footprint(spec: &EngineSpec, store: &dyn Fn() -> Store) {
    let store = store();
    let engine = store.open(spec, OpenMode::Fresh);
    let mut w = store.client(engine.as_ref(), ONE);
    for n in 0..2000 {
        w.insert("usertable", &key(n), &record(n, 4)).unwrap();
    }
    drop(w);
    engine.close().unwrap();
    let before = engine.footprint();
    if let Some(dir) = &store.dir {
        std::fs::write(dir.join("big-foreign-file"), vec![7u8; 8 << 20]).unwrap();
    }
    let after = engine.footprint();
    match (before, after) {
        (Ok(a), Ok(b)) => {
            assert!(a > 0, "{}: a loaded store has a size", spec.name);
            assert_eq!(a, b, "{}: a foreign file is not the engine's", spec.name);
        }
        (a, b) => panic!("{}: footprint {a:?} {b:?}", spec.name),
    }
}

fn threads_at_once(spec: &EngineSpec, store: &dyn Fn() -> Store) {
    let store = store();
    let engine = store.open(spec, OpenMode::Fresh);
    let engine = engine.as_ref();
    let store = &store;
    std::thread::scope(|s| {
        for index in 0..4u64 {
            s.spawn(move || {
                let mut w = store.client(engine, (index as usize, 4));
                for n in (index * 1000)..(index * 1000 + 300) {
                    w.insert("usertable", &key(n), &record(n, 2))
                        .unwrap_or_else(|e| panic!("{}: thread {index}: {e:?}", spec.name));
                }
            });
        }
    });
    let mut w = store.client(engine, ONE);
    let mut rows = ScanResults::default();
    w.scan("usertable", &key(0), 5000, None, &mut rows).unwrap();
    assert_eq!(rows.len(), 1200, "{}: every thread's records", spec.name);
    drop(w);
    engine.close().unwrap();
}

fn raw_key_values(spec: &EngineSpec, store: &dyn Fn() -> Store) {
    if !spec.has(Capability::Kv(KvSupport::Point)) {
        eprintln!("{}: no raw key-value access; skipped", spec.name);
        return;
    }
    let store = store();
    let engine = store.open(spec, OpenMode::Fresh);
    let mut kv = wait(engine.client(ClientSlot::thread(0, 1, Access::Raw))).unwrap();
    for n in [5u64, 1, 3, 2, 4] {
        kv.put(&n.to_be_bytes(), format!("v{n}").as_bytes())
            .now()
            .unwrap();
    }
    assert_eq!(
        kv.get(&3u64.to_be_bytes()).now(),
        Ok(2),
        "{}: get",
        spec.name
    );
    kv.remove(&3u64.to_be_bytes()).now().unwrap();
    assert_eq!(
        kv.get(&3u64.to_be_bytes()).now(),
        Err(OpError::NotFound),
        "{}",
        spec.name
    );
    if spec.has(Capability::Kv(KvSupport::Ordered)) {
        let mut seen = Vec::new();
        let mut valid = kv.seek(Some(&2u64.to_be_bytes()), true).now().unwrap();
        while valid {
            let (k, v) = kv.current().expect("valid cursor");
            seen.push((k.to_vec(), v.to_vec()));
            valid = kv.next().now().unwrap();
        }
        let keys: Vec<u64> = seen
            .iter()
            .map(|(k, _)| u64::from_be_bytes(k[..8].try_into().unwrap()))
            .collect();
        assert_eq!(keys, [2, 4, 5], "{}: ordered from the seek key", spec.name);
        assert_eq!(seen[0].1, b"v2", "{}", spec.name);
        assert!(
            kv.seek(None, true).now().unwrap(),
            "{}: seek to the first key",
            spec.name
        );
        assert_eq!(kv.current().unwrap().0, 1u64.to_be_bytes(), "{}", spec.name);
    }
    drop(kv);
    engine.close().unwrap();
}

#[test]
fn what_an_engine_lacks_is_one_clear_error() {
    for spec in engine::registry() {
        for (capability, asked_by) in [
            (Capability::Compact, "settle --compact"),
            (Capability::Kv(KvSupport::Ordered), "--benchmarks=readseq"),
            (Capability::Kv(KvSupport::Point), "--benchmarks=readrandom"),
            (Capability::Adopt, "--use_existing_db"),
        ] {
            match spec.require(capability, asked_by) {
                Ok(()) => assert!(spec.has(capability)),
                Err(e) => {
                    let e = e.to_string();
                    assert!(
                        e.starts_with(&format!("engine '{}' ", spec.name))
                            && e.contains(asked_by)
                            && !e.contains('\n'),
                        "{e}"
                    );
                }
            }
        }
    }
}

fn lacking_compaction_is_an_error(spec: &EngineSpec, store: &dyn Fn() -> Store) {
    if spec.has(Capability::Compact) {
        return;
    }
    let store = store();
    let engine = store.open(spec, OpenMode::Fresh);
    let err = engine.compact().unwrap_err().to_string();
    assert!(err.contains(spec.name), "{err}");
    engine.close().unwrap();
}

#[test]
fn a_bad_option_is_a_one_line_error_with_a_hint() {
    for spec in engine::registry() {
        // Options are checked before anything is opened: no server needed.
        let store = Store::new(spec, None, Seam::Threads);
        let mut props = Properties::new();
        props.set(&format!("{}.no_such_option", spec.name), "1");
        let err = store
            .open_with(spec, OpenMode::Fresh, &props)
            .err()
            .unwrap_or_else(|| panic!("{}: an unknown option was accepted", spec.name));
        let err = format!("{err:#}");
        assert!(
            err.contains(&format!(
                "unknown {} option '{}.no_such_option'",
                spec.name, spec.name
            )),
            "{err}"
        );
        assert!(!err.contains('\n'), "{err}");
        if let Some(first) = spec.options.first() {
            let typo = format!("{}.{}x", spec.name, first.name);
            let mut props = Properties::new();
            props.set(&typo, "1");
            let err = format!(
                "{:#}",
                store
                    .open_with(spec, OpenMode::Fresh, &props)
                    .err()
                    .unwrap()
            );
            assert!(
                err.contains(&format!("did you mean '{}.{}'", spec.name, first.name)),
                "{err}"
            );
        }
    }
}

fn data_integrity(spec: &EngineSpec, store: &dyn Fn() -> Store) {
    let store = store();
    let tmp = tempfile::tempdir().unwrap();
    let shape = [
        "-p",
        "recordcount=500",
        "-p",
        "operationcount=2000",
        "-p",
        "dataintegrity=true",
        "-p",
        "fieldcount=4",
        "-p",
        "fieldlength=50",
        "-threads",
        "2",
    ];
    let args = store.cli_args(spec);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let wf = common::workload("f");
    let load = [&["load", "--fresh", "-P", &wf][..], &args, &shape].concat();
    let out = common::kvperf(tmp.path(), &load);
    assert_eq!(out.code, 0, "{}: load: {}", spec.name, out.stderr);
    let run = [&["run", "-P", &wf][..], &args, &shape].concat();
    let out = common::kvperf(tmp.path(), &run);
    assert_eq!(out.code, 0, "{}: run: {}", spec.name, out.stderr);
    let verified = common::metric(&out.stdout, "VERIFY", "Operations").unwrap_or(0.0);
    assert!(
        verified > 1000.0,
        "{}: {verified} verified reads",
        spec.name
    );
    assert_eq!(
        common::metric(&out.stdout, "VERIFY", "Return=UNEXPECTED_STATE"),
        None,
        "{}: every verified read matched",
        spec.name
    );
}

#[test]
fn a_directory_with_another_engines_store_is_refused() {
    let dirs: Vec<&EngineSpec> = engine::registry()
        .into_iter()
        .filter(|s| s.uses_data_dir())
        .collect();
    for (a, b) in dirs.iter().zip(dirs.iter().skip(1)) {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("db");
        let engine = engine::open(
            a,
            &OpenOptions {
                dir: Some(&db),
                properties: &Properties::new(),
                mode: OpenMode::Fresh,
                runtime: None,
                clients: None,
            },
        )
        .unwrap();
        let mut w = wait(engine.client(ClientSlot::thread(0, 1, Access::Records))).unwrap();
        w.insert("usertable", &key(1), &record(1, 2)).now().unwrap();
        drop(w);
        engine.close().unwrap();
        drop(engine);
        // Without kvperf's marker, the store is refused: its files are no
        // proof that kvperf made it (issue 44), though they say what it seems.
        std::fs::remove_file(db.join(".kvperf-data")).unwrap();
        let err = engine::open(
            b,
            &OpenOptions {
                dir: Some(&db),
                properties: &Properties::new(),
                mode: OpenMode::Any,
                runtime: None,
                clients: None,
            },
        )
        .err()
        .unwrap();
        let err = format!("{err:#}");
        assert!(
            err.contains(&format!(
                "holds files kvperf did not create (a {} store, it seems",
                a.name
            )),
            "{err}"
        );
        let names: BTreeSet<String> = std::fs::read_dir(&db)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            !names.is_empty(),
            "nothing of {}'s store was removed",
            a.name
        );
    }
}

/// A timed, paced `kvperf run -s` through the store's seam: every
/// operation reaches one status line (the clients hand their histograms
/// over, threads or tasks alike), intended-start groups included, and the
/// result records how the clients ran.
fn status_lines_and_clients(spec: &EngineSpec, store: &dyn Fn() -> Store) {
    let store = store();
    let tmp = tempfile::tempdir().unwrap();
    let args = store.cli_args(spec);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let shape = [
        "-p",
        "recordcount=300",
        "-p",
        "fieldcount=2",
        "-p",
        "fieldlength=10",
        "-threads",
        "3",
    ];
    let wc = common::workload("c");
    let load = [&["load", "--fresh", "-P", &wc][..], &args, &shape].concat();
    let out = common::kvperf(tmp.path(), &load);
    assert_eq!(out.code, 0, "{}: load: {}", spec.name, out.stderr);
    let json = tmp.path().join("run.json").display().to_string();
    let timed = [
        "-s",
        "-p",
        "status.interval=1",
        "-p",
        "operationcount=0",
        "-p",
        "maxexecutiontime=2.5",
        "-p",
        "target=300",
        "-p",
        "measurement.interval=both",
        "--format",
        "json",
        "--output",
        &json,
    ];
    let run = [&["run", "-P", &wc][..], &args, &shape, &timed].concat();
    let out = common::kvperf(tmp.path(), &run);
    assert_eq!(out.code, 0, "{}: run: {}", spec.name, out.stderr);
    let result: StepOutput = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let m = &result.measurements[0];
    assert_eq!(m.clients, store.clients(), "{}", spec.name);
    let count_of = |line: &str, group: &str| -> u64 {
        line.split(&format!("[{group}: Count="))
            .nth(1)
            .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
    };
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains(" sec: "))
        .collect();
    let reads: u64 = lines.iter().map(|l| count_of(l, "READ")).sum();
    let intended: u64 = lines.iter().map(|l| count_of(l, "Intended-READ")).sum();
    assert!(lines.len() >= 3, "{}: {}", spec.name, out.stderr);
    assert!(
        m.operations > 300,
        "{}: {} operations",
        spec.name,
        m.operations
    );
    assert_eq!(reads, m.operations, "{}: {}", spec.name, out.stderr);
    assert_eq!(intended, m.operations, "{}: {}", spec.name, out.stderr);
}

/// A PostgreSQL client whose session the server ends (as an administrator's
/// `pg_terminate_backend` or a restart does) fails the operation that finds
/// it gone, and the next operation opens a new session: on threads (kvperf's
/// own session, blocking) and as tasks (the same session on a tokio socket).
#[test]
fn a_postgres_session_the_server_ends_fails_one_operation_then_reconnects() {
    let Some(spec) = engine::registry()
        .into_iter()
        .find(|s| s.name == "postgres")
    else {
        common::skip_unless_ci(
            "a_postgres_session_the_server_ends",
            "built without the postgres engine",
        );
        return;
    };
    let Some(server) = Server::start(spec) else {
        return;
    };
    let port = server
        .props
        .get("postgres.port")
        .expect("set by Server::start")
        .to_string();
    for &seam in seams(spec) {
        let store = Store::new(spec, Some(&server), seam);
        let engine = store.open(spec, OpenMode::Fresh);
        let mut client = store.client(engine.as_ref(), ONE);
        client.insert("usertable", &key(1), &record(1, 2)).unwrap();
        // Every kvperf session (the engine's own too); psql names itself psql.
        let ended = std::process::Command::new("psql")
            .args(["-h", "127.0.0.1", "-p", &port, "-U", "postgres", "-d", "kvperf", "-At", "-c"])
            .arg("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'kvperf'")
            .output()
            .expect("psql runs (it comes with PostgreSQL)");
        let count = String::from_utf8_lossy(&ended.stdout).trim().to_string();
        assert!(
            ended.status.success() && count != "0",
            "{seam:?}: psql said {count:?}: {}",
            String::from_utf8_lossy(&ended.stderr)
        );
        let mut out = Record::new();
        let lost = client.read("usertable", &key(1), None, &mut out);
        assert!(
            matches!(&lost, Err(OpError::Failed(why)) if why.starts_with("PostgreSQL: ")),
            "{seam:?}: {lost:?}"
        );
        // The first reconnect has no pause (reconnect backoff starts at 0).
        client
            .read("usertable", &key(1), None, &mut out)
            .unwrap_or_else(|e| panic!("{seam:?}: {e:?}"));
        assert_eq!(
            field(&out, "field1").as_deref(),
            Some(&b"value-1-1"[..]),
            "{seam:?}"
        );
    }
}
