//! MongoDB (or any server speaking its wire protocol, such as FerretDB)
//! through the `mongodb` crate's blocking `sync` API.
//!
//! The document layout is YCSB 0.17.0's `mongodb` binding: one document
//! per record in collection `usertable` of database `ycsb`, `_id` the key
//! as a string, every field a BSON binary (subtype 0; YCSB stores the
//! `byte[]`). Each runner thread has its own `Client` (a client per thread;
//! YCSB's binding shares one), connected before the thread's first
//! operation. Writes use write concern `w: 1` and reads the primary by
//! default, as YCSB's default URL.
//!
//! Operations as YCSB's binding: `read` is `find_one` by `_id` (with a
//! projection for given fields); `insert` is `insert_one`, so inserting an
//! existing key fails (duplicate key); `update` is `update_one` with
//! `$set`, NotFound when nothing matched; `delete` is `delete_one`,
//! NotFound when nothing was deleted; `scan` is `find({_id: {$gte: key}})`
//! sorted by `_id`, in key order. Differences: a scan that finds nothing is
//! Ok with no records (YCSB's binding reports ERROR), and the collection is
//! the engine's (`collection`) whatever YCSB's `table` says.
//!
//! Raw key-values (`kvperf bench`) live in collection `<collection>_kv` as
//! `{_id: binary key, v: binary value}`; the cursor reads them sorted by
//! `_id` in batches. MongoDB orders binaries by length first, then bytes:
//! key order for db_bench's keys, which all have one length.
//!
//! The footprint is `collStats`' `totalSize` (data plus indexes) of both
//! collections, as the server reports it. Compaction is the `compact`
//! command (MongoDB; FerretDB v1 answers it too, with SQLite's VACUUM).
//! Nothing runs in the background that a client could wait for.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use mongodb::bson::spec::BinarySubtype;
use mongodb::bson::{
    doc, Binary, Bson, Document, RawBinaryRef, RawBsonRef, RawDocument, RawDocumentBuf,
};
use mongodb::options::{
    Acknowledgment, ClientOptions, Credential, ReadPreference, SelectionCriteria, ServerAddress,
};
use mongodb::sync::{Client, Collection, Database};

use super::options::OptionValues;
use super::{
    ready, Access, AsyncOps, Capabilities, ClientSlot, Engine, EngineInfo, EngineOption,
    EngineSpec, KvSupport, OpError, OpResult, OpenMode, OpenOptions, Operations, Record,
    ScanResults, SetupFuture, StoreKind,
};
use crate::error::InputError;
use crate::properties::{redacted, scrubbed, url_credentials, Properties};

pub static SPEC: EngineSpec = EngineSpec {
    name: "mongodb",
    about: "MongoDB wire-protocol server via the mongodb crate (sync API); `kvperf server start ferretdb` runs FerretDB",
    feature: "mongodb",
    store: StoreKind::Server {
        server: "ferretdb",
        namespace: "mongodb.database",
    },
    capabilities: Capabilities {
        background_work: false,
        // The `compact` command.
        compact: true,
        kv: KvSupport::Ordered,
        adopt: true,
        ordered_scans: true,
        update_needs_existing: true,
        async_ops: AsyncOps::Unavailable,
    },
    options: &[
        EngineOption { name: "url", default: "", help: "mongodb:// connection string; when given it wins over host and port (its password is never recorded)" },
        EngineOption { name: "host", default: "127.0.0.1", help: "server host" },
        EngineOption { name: "port", default: "27017", help: "server port" },
        EngineOption { name: "database", default: "ycsb", help: "database (default: the url's database if it names one, else ycsb)" },
        EngineOption { name: "collection", default: "usertable", help: "collection of the records; raw key-values go to <collection>_kv" },
        EngineOption { name: "write_concern", default: "1", help: "w: a number of nodes (1, YCSB's default) or majority; the url's w= wins" },
        EngineOption { name: "read_preference", default: "primary", help: "primary, primary_preferred, secondary, secondary_preferred or nearest; the url's readPreference= wins" },
        EngineOption { name: "username", default: "", help: "user (SCRAM); default: environment KVPERF_MONGODB_USERNAME" },
        EngineOption { name: "password", default: "", help: "its password; default: environment KVPERF_MONGODB_PASSWORD (never recorded)" },
        EngineOption { name: "connect_timeout_s", default: "10", help: "seconds to wait for the server at open" },
    ],
    open,
    // Every db_bench engine flag configures an embedded store.
    db_bench: |flags, _| flags.given(),
};

const MONGODB_CRATE_VERSION: &str = match option_env!("KVPERF_MONGODB_VERSION") {
    Some(v) => v,
    None => "3",
};

/// Largest batch the db_bench cursor reads at once.
const LARGEST_FILL: usize = 1024;

struct Settings {
    options: ClientOptions,
    /// Where the server is, for messages (no credentials).
    address: String,
    database: String,
    collection: String,
    /// Secrets to scrub from any message.
    secrets: Vec<String>,
    effective: BTreeMap<String, String>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // ClientOptions' own Debug redacts the credential; still, show only what is needed.
        f.debug_struct("Settings")
            .field("address", &self.address)
            .field("database", &self.database)
            .field("collection", &self.collection)
            .field("effective", &self.effective)
            .finish()
    }
}

/// The option, else the environment variable, else nothing.
fn option_or_env(v: &OptionValues, name: &str, var: &str) -> Option<String> {
    let given = v.text(name);
    if !given.is_empty() {
        return Some(given);
    }
    std::env::var(var).ok().filter(|s| !s.is_empty())
}

/// A driver error in a few words: a server error's code name, code and
/// message (without the raw reply the driver's own text appends).
fn describe(e: &mongodb::error::Error) -> String {
    use mongodb::error::{ErrorKind, WriteFailure};
    match e.kind.as_ref() {
        ErrorKind::Command(c) => format!("{} ({}): {}", c.code_name, c.code, c.message),
        ErrorKind::Write(WriteFailure::WriteError(w)) => format!(
            "{} ({}): {}",
            w.code_name.as_deref().unwrap_or("write error"),
            w.code,
            w.message
        ),
        ErrorKind::Write(WriteFailure::WriteConcernError(w)) => {
            format!("write concern {} ({}): {}", w.code_name, w.code, w.message)
        }
        _ => e.to_string(),
    }
}

/// `text` with every secret replaced.
fn scrub(text: &str, secrets: &[String]) -> String {
    scrubbed(text, secrets.iter().map(String::as_str))
}

/// The password inside `mongodb://user:PASSWORD@host`, if any.
fn url_password(url: &str) -> Option<String> {
    url_credentials(url).map(|c| c.password.to_string())
}

fn hosts_text(hosts: &[ServerAddress]) -> String {
    hosts
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

impl Settings {
    fn from_properties(props: &Properties) -> Result<Self, InputError> {
        let v = OptionValues::new(&SPEC, props);
        let url = v.text("url");
        let mut secrets: Vec<String> = url_password(&url).into_iter().collect();
        let url_given = !url.is_empty();
        let connect_timeout = Duration::from_secs(v.u64_at_most("connect_timeout_s", 3600)?.max(1));
        let mut options = if url_given {
            if !url.starts_with("mongodb://") {
                return Err(InputError::property(
                    "mongodb.url",
                    format!("'{}' does not start with mongodb://", redacted("url", &url)),
                ));
            }
            ClientOptions::parse(url.as_str()).run().map_err(|e| {
                InputError::property(
                    "mongodb.url",
                    format!(
                        "'{}' is not a connection string: {}",
                        redacted("url", &url),
                        scrub(&e.to_string(), &secrets)
                    ),
                )
            })?
        } else {
            let port = v.u64("port")?;
            let port = u16::try_from(port).ok().filter(|p| *p > 0).ok_or_else(|| {
                InputError::property("mongodb.port", format!("{port} is not a TCP port"))
            })?;
            let host = v.text("host");
            if host.is_empty() {
                return Err(InputError::property("mongodb.host", "is empty"));
            }
            let mut o = ClientOptions::default();
            o.hosts = vec![ServerAddress::Tcp {
                host,
                port: Some(port),
            }];
            o
        };
        let address = hosts_text(&options.hosts);
        // Without a timeout of its own the driver tries for 30 s.
        if options.server_selection_timeout.is_none() {
            options.server_selection_timeout = Some(connect_timeout);
        }
        if options.connect_timeout.is_none() {
            options.connect_timeout = Some(connect_timeout);
        }
        options.app_name.get_or_insert_with(|| "kvperf".into());

        let w = v.text("write_concern");
        if options.write_concern.as_ref().is_none_or(|c| c.w.is_none()) {
            let ack = match w.as_str() {
                "majority" => Acknowledgment::Majority,
                n => match n.parse::<u32>() {
                    Ok(0) => {
                        return Err(InputError::property(
                            "mongodb.write_concern",
                            "0 (unacknowledged writes) is not supported by the Rust driver; use 1 or majority",
                        ))
                    }
                    Ok(n) => Acknowledgment::Nodes(n),
                    Err(_) => {
                        return Err(InputError::property(
                            "mongodb.write_concern",
                            format!("'{n}' is not a number of nodes or majority"),
                        ))
                    }
                },
            };
            let mut concern = options.write_concern.take().unwrap_or_default();
            concern.w = Some(ack);
            options.write_concern = Some(concern);
        }
        let preference = v.choice(
            "read_preference",
            &[
                "primary",
                "primary_preferred",
                "secondary",
                "secondary_preferred",
                "nearest",
            ],
        )?;
        if options.selection_criteria.is_none() {
            let rp = match preference.as_str() {
                "primary_preferred" => ReadPreference::PrimaryPreferred { options: None },
                "secondary" => ReadPreference::Secondary { options: None },
                "secondary_preferred" => ReadPreference::SecondaryPreferred { options: None },
                "nearest" => ReadPreference::Nearest { options: None },
                _ => ReadPreference::Primary,
            };
            options.selection_criteria = Some(SelectionCriteria::ReadPreference(rp));
        }

        let username = option_or_env(&v, "username", "KVPERF_MONGODB_USERNAME");
        let password = option_or_env(&v, "password", "KVPERF_MONGODB_PASSWORD");
        if let Some(p) = &password {
            secrets.push(p.clone());
        }
        match (&username, options.credential.is_some()) {
            (Some(user), false) => {
                options.credential = Some(
                    Credential::builder()
                        .username(user.clone())
                        .password(password.clone())
                        .build(),
                );
            }
            (None, false) if password.is_some() => {
                return Err(InputError::property(
                    "mongodb.password",
                    "is set but no username is (mongodb.username or KVPERF_MONGODB_USERNAME)",
                ))
            }
            _ => {}
        }

        let database = match props.get("mongodb.database") {
            Some(d) => d.to_string(),
            None => options
                .default_database
                .clone()
                .filter(|d| !d.is_empty() && d != "admin")
                .unwrap_or_else(|| v.text("database")),
        };
        let collection = v.text("collection");
        for (key, name) in [
            ("mongodb.database", &database),
            ("mongodb.collection", &collection),
        ] {
            if name.is_empty()
                || name.contains(['\0', '$'])
                || (key == "mongodb.database" && name.contains(['/', '\\', '.', ' ', '"']))
            {
                return Err(InputError::property(
                    key,
                    format!("'{name}' is not a valid name"),
                ));
            }
        }

        let mut effective = v.effective();
        effective.insert("database".into(), database.clone());
        if let Some(user) = &username {
            effective.insert("username".into(), user.clone());
        }
        if password.is_some() {
            effective.insert("password".into(), "(redacted)".into());
        }
        let wc = options.write_concern.as_ref().and_then(|c| c.w.clone());
        effective.insert(
            "write_concern".into(),
            match wc {
                Some(Acknowledgment::Majority) => "majority".into(),
                Some(Acknowledgment::Nodes(n)) => n.to_string(),
                Some(Acknowledgment::Custom(s)) => s,
                _ => w,
            },
        );
        if let Some(SelectionCriteria::ReadPreference(rp)) = &options.selection_criteria {
            let mode = match rp {
                ReadPreference::Primary => "primary",
                ReadPreference::PrimaryPreferred { .. } => "primary_preferred",
                ReadPreference::Secondary { .. } => "secondary",
                ReadPreference::SecondaryPreferred { .. } => "secondary_preferred",
                ReadPreference::Nearest { .. } => "nearest",
                _ => "other",
            };
            effective.insert("read_preference".into(), mode.into());
        }
        Ok(Self {
            options,
            address,
            database,
            collection,
            secrets,
            effective,
        })
    }

    fn client(&self) -> anyhow::Result<Client> {
        Client::with_options(self.options.clone()).map_err(|e| self.unreachable(&e))
    }

    fn unreachable(&self, e: &mongodb::error::Error) -> anyhow::Error {
        anyhow::anyhow!(
            "cannot reach MongoDB at {} ({}); is the server running? `kvperf server start ferretdb` starts one (set -p mongodb.host and mongodb.port, or mongodb.url, to reach another)",
            self.address,
            scrub(&describe(e), &self.secrets)
        )
    }

    fn kv_collection(&self) -> String {
        format!("{}_kv", self.collection)
    }
}

/// A number in a command's answer (servers mix int32, int64 and double).
fn number(doc: &Document, key: &str) -> Option<u64> {
    match doc.get(key)? {
        Bson::Int32(n) => Some((*n).max(0) as u64),
        Bson::Int64(n) => Some((*n).max(0) as u64),
        Bson::Double(n) if n.is_finite() => Some(n.max(0.0) as u64),
        _ => None,
    }
}

fn open(opts: &OpenOptions) -> anyhow::Result<Box<dyn Engine>> {
    let settings = Settings::from_properties(opts.properties)?;
    let client = settings.client()?;
    let admin = client.database("admin");
    admin
        .run_command(doc! {"ping": 1})
        .run()
        .map_err(|e| settings.unreachable(&e))?;
    let build = admin
        .run_command(doc! {"buildInfo": 1})
        .run()
        .map_err(|e| {
            anyhow::anyhow!(
                "MongoDB at {}: buildInfo failed: {}",
                settings.address,
                scrub(&describe(&e), &settings.secrets)
            )
        })?;
    let server = build.get_str("version").unwrap_or("unknown");
    let version = match build.get_str("ferretdbVersion") {
        Ok(ferret) => {
            format!("{server} (FerretDB {ferret}; mongodb crate {MONGODB_CRATE_VERSION})")
        }
        Err(_) => format!("MongoDB {server} (mongodb crate {MONGODB_CRATE_VERSION})"),
    };

    let db = client.database(&settings.database);
    let command_error = |what: &str, e: mongodb::error::Error| {
        anyhow::anyhow!(
            "MongoDB at {}: {what} failed: {}",
            settings.address,
            scrub(&describe(&e), &settings.secrets)
        )
    };
    let names = db
        .list_collection_names()
        .run()
        .map_err(|e| command_error("listing collections", e))?;
    let kv = settings.kv_collection();
    match opts.mode {
        OpenMode::Existing => {
            if !names.iter().any(|n| *n == settings.collection || *n == kv) {
                return Err(InputError::Invalid(format!(
                    "MongoDB at {} has no collection {}.{} (nor {kv}): load it first (kvperf load --fresh), or name its database with -p mongodb.database",
                    settings.address, settings.database, settings.collection
                ))
                .into());
            }
        }
        OpenMode::Fresh => {
            for name in [&settings.collection, &kv] {
                if names.contains(name) {
                    db.collection::<Document>(name)
                        .drop()
                        .run()
                        .map_err(|e| command_error(&format!("dropping {name}"), e))?;
                }
            }
            db.create_collection(&settings.collection)
                .run()
                .map_err(|e| command_error(&format!("creating {}", settings.collection), e))?;
        }
        OpenMode::Any => {}
    }
    let pids = local_pids(&settings.options.hosts);
    let data_dir = pids.iter().find_map(|&pid| data_dir_of(pid));
    Ok(Box::new(MongoEngine {
        settings,
        db,
        version,
        pids,
        data_dir,
    }))
}

/// Whether `host` is an address of this machine (a bind succeeds only on
/// local addresses; all of 127.0.0.0/8 is local).
fn is_local(host: &str) -> bool {
    if host == "localhost" {
        return true;
    }
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback() || std::net::UdpSocket::bind((ip, 0)).is_ok(),
        Err(_) => false,
    }
}

/// The processes listening on the servers' ports, when every server is local.
fn local_pids(hosts: &[ServerAddress]) -> Vec<u32> {
    let mut pids = Vec::new();
    for h in hosts {
        match h {
            ServerAddress::Tcp { host, port } if is_local(host) => {
                pids.extend(crate::host::processes::listeners_on(port.unwrap_or(27017)));
            }
            _ => return Vec::new(),
        }
    }
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Where a local server keeps its files: FerretDB's `--sqlite-url=file:DIR/`
/// (else its `--state-dir`), mongod's `--dbpath`.
fn data_dir_of(pid: u32) -> Option<PathBuf> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let value = |flag: &str| {
        args.iter().enumerate().find_map(|(i, a)| {
            a.strip_prefix(&format!("{flag}="))
                .map(str::to_string)
                .or_else(|| (a == flag).then(|| args.get(i + 1).cloned()).flatten())
        })
    };
    let dir = if let Some(url) = value("--sqlite-url") {
        let path = url.strip_prefix("file:").unwrap_or(&url);
        let path = path.split('?').next().unwrap_or(path);
        PathBuf::from(path)
    } else if let Some(dbpath) = value("--dbpath") {
        PathBuf::from(dbpath)
    } else {
        // FerretDB with PostgreSQL keeps its data in PostgreSQL.
        return None;
    };
    let dir = if dir.is_relative() {
        crate::host::processes::cwd_of(pid)?.join(dir)
    } else {
        dir
    };
    dir.is_dir().then_some(dir)
}

pub struct MongoEngine {
    settings: Settings,
    /// The engine's own client's database (open, footprint, compact).
    db: Database,
    version: String,
    pids: Vec<u32>,
    data_dir: Option<PathBuf>,
}

impl MongoEngine {
    fn failed(&self, what: &str, e: mongodb::error::Error) -> anyhow::Error {
        anyhow::anyhow!(
            "MongoDB at {}: {what} failed: {}",
            self.settings.address,
            scrub(&describe(&e), &self.settings.secrets)
        )
    }

    /// A client of its own for a runner thread, connected.
    fn connected_client(&self) -> anyhow::Result<Client> {
        let client = self.settings.client()?;
        client
            .database("admin")
            .run_command(doc! {"ping": 1})
            .run()
            .map_err(|e| self.settings.unreachable(&e))?;
        Ok(client)
    }

    fn existing_collections(&self) -> anyhow::Result<Vec<String>> {
        let names = self
            .db
            .list_collection_names()
            .run()
            .map_err(|e| self.failed("listing collections", e))?;
        Ok([
            self.settings.collection.clone(),
            self.settings.kv_collection(),
        ]
        .into_iter()
        .filter(|c| names.contains(c))
        .collect())
    }

    fn records(&self, _: ClientSlot) -> anyhow::Result<Box<dyn Operations + '_>> {
        let client = self.connected_client()?;
        let coll = client
            .database(&self.settings.database)
            .collection::<RawDocumentBuf>(&self.settings.collection);
        Ok(Box::new(MongoWorker {
            coll,
            secrets: &self.settings.secrets,
            _client: client,
        }))
    }

    fn raw(&self, _: ClientSlot) -> anyhow::Result<Box<dyn Operations + '_>> {
        let client = self.connected_client()?;
        let coll = client
            .database(&self.settings.database)
            .collection::<RawDocumentBuf>(&self.settings.kv_collection());
        Ok(Box::new(MongoKvWorker {
            coll,
            secrets: &self.settings.secrets,
            cursor: Batch::default(),
            _client: client,
        }))
    }
}

impl Engine for MongoEngine {
    fn info(&self) -> EngineInfo {
        EngineInfo {
            name: "mongodb".into(),
            version: self.version.clone(),
            options: self.settings.effective.clone(),
        }
    }

    fn client(&self, slot: ClientSlot) -> SetupFuture<'_, Box<dyn Operations + '_>> {
        ready(match slot.access {
            Access::Records => self.records(slot),
            Access::Raw => self.raw(slot),
        })
    }

    /// Nothing runs in the background that a client can wait for; writes
    /// are acknowledged by the write concern.
    fn settle(&self, _flush: bool) -> anyhow::Result<()> {
        Ok(())
    }

    /// The `compact` command on both collections.
    fn compact(&self) -> anyhow::Result<()> {
        for name in self.existing_collections()? {
            self.db
                .run_command(doc! {"compact": &name})
                .run()
                .map_err(|e| self.failed(&format!("compact {name}"), e))?;
        }
        Ok(())
    }

    /// `collStats` totalSize (storage plus indexes) of both collections.
    fn footprint(&self) -> Result<u64, String> {
        let names = self.existing_collections().map_err(|e| e.to_string())?;
        let mut total = 0;
        for name in names {
            let stats = self
                .db
                .run_command(doc! {"collStats": &name})
                .run()
                .map_err(|e| format!("{:#}", self.failed(&format!("collStats {name}"), e)))?;
            let size = number(&stats, "totalSize").or_else(|| {
                Some(number(&stats, "storageSize")? + number(&stats, "totalIndexSize").unwrap_or(0))
            });
            total += size.ok_or_else(|| {
                format!(
                    "collStats of {name} at {} reports no totalSize or storageSize",
                    self.settings.address
                )
            })?;
        }
        Ok(total)
    }

    fn close(&self) -> anyhow::Result<()> {
        Ok(())
    }

    fn data_location(&self) -> Option<PathBuf> {
        self.data_dir.clone()
    }

    fn server_pids(&self) -> Vec<u32> {
        self.pids.clone()
    }
}

fn op_failed(e: mongodb::error::Error, secrets: &[String]) -> OpError {
    OpError::Failed(format!("MongoDB: {}", scrub(&describe(&e), secrets)))
}

fn key_text(key: &[u8]) -> Result<&str, OpError> {
    std::str::from_utf8(key).map_err(|_| {
        OpError::Failed("MongoDB: the key is not UTF-8 (YCSB's _id is a string)".into())
    })
}

/// A field name usable as a BSON key.
fn field_name(name: &[u8]) -> Result<&str, OpError> {
    match std::str::from_utf8(name) {
        Ok(n) if !n.is_empty() && !n.contains('\0') => Ok(n),
        _ => Err(OpError::Failed(
            "MongoDB: a field name is empty, not UTF-8 or holds a NUL byte".into(),
        )),
    }
}

fn binary(bytes: &[u8]) -> RawBinaryRef<'_> {
    RawBinaryRef {
        subtype: BinarySubtype::Generic,
        bytes,
    }
}

/// `{field: 1, ...}` for the given fields; None for all.
fn projection(fields: Option<&[&str]>) -> Result<Option<Document>, OpError> {
    let Some(fields) = fields else {
        return Ok(None);
    };
    let mut p = Document::new();
    for f in fields {
        p.insert(field_name(f.as_bytes())?, Bson::Int32(1));
    }
    Ok(Some(p))
}

/// Copies the binary fields of `doc` (all but `_id`, as YCSB's binding) into `out`.
fn copy_fields(doc: &RawDocument, out: &mut Record, secrets: &[String]) -> OpResult {
    for element in doc.iter() {
        let (name, value) = element
            .map_err(|e| OpError::Failed(format!("MongoDB: {}", scrub(&e.to_string(), secrets))))?;
        if let RawBsonRef::Binary(b) = value {
            if name != "_id" {
                out.push(name.as_bytes(), b.bytes);
            }
        }
    }
    Ok(())
}

pub struct MongoWorker<'e> {
    coll: Collection<RawDocumentBuf>,
    secrets: &'e [String],
    _client: Client,
}

super::blocking_records!(MongoWorker<'_>);

impl MongoWorker<'_> {
    fn read(
        &mut self,
        _table: &str,
        key: &[u8],
        fields: Option<&[&str]>,
        out: &mut Record,
    ) -> OpResult {
        let key = key_text(key)?;
        let mut find = self.coll.find_one(doc! {"_id": key});
        if let Some(p) = projection(fields)? {
            find = find.projection(p);
        }
        match find.run().map_err(|e| op_failed(e, self.secrets))? {
            Some(doc) => copy_fields(&doc, out, self.secrets),
            None => Err(OpError::NotFound),
        }
    }

    fn scan(
        &mut self,
        _table: &str,
        start_key: &[u8],
        count: usize,
        fields: Option<&[&str]>,
        out: &mut ScanResults,
    ) -> OpResult {
        let key = key_text(start_key)?;
        let limit = i64::try_from(count).unwrap_or(i64::MAX);
        let mut find = self
            .coll
            .find(doc! {"_id": {"$gte": key}})
            .sort(doc! {"_id": 1})
            .limit(limit)
            .batch_size(u32::try_from(count).unwrap_or(u32::MAX).max(1));
        if let Some(p) = projection(fields)? {
            find = find.projection(p);
        }
        let cursor = find.run().map_err(|e| op_failed(e, self.secrets))?;
        for doc in cursor {
            let doc = doc.map_err(|e| op_failed(e, self.secrets))?;
            copy_fields(&doc, out.next_slot(), self.secrets)?;
        }
        Ok(())
    }

    fn update(&mut self, _table: &str, key: &[u8], values: &Record) -> OpResult {
        let key = key_text(key)?;
        let mut set = Document::new();
        for (name, value) in values.fields() {
            set.insert(
                field_name(name)?,
                Binary {
                    subtype: BinarySubtype::Generic,
                    bytes: value.to_vec(),
                },
            );
        }
        let result = self
            .coll
            .update_one(doc! {"_id": key}, doc! {"$set": set})
            .run()
            .map_err(|e| op_failed(e, self.secrets))?;
        if result.matched_count == 0 {
            return Err(OpError::NotFound);
        }
        Ok(())
    }

    /// `insert_one`: an existing key is an error (duplicate key), as YCSB.
    fn insert(&mut self, _table: &str, key: &[u8], values: &Record) -> OpResult {
        let key = key_text(key)?;
        let mut doc = RawDocumentBuf::new();
        doc.append_ref("_id", key);
        for (name, value) in values.fields() {
            doc.append_ref(field_name(name)?, binary(value));
        }
        self.coll
            .insert_one(doc)
            .run()
            .map_err(|e| op_failed(e, self.secrets))?;
        Ok(())
    }

    /// NotFound when nothing was deleted (YCSB's binding).
    fn delete(&mut self, _table: &str, key: &[u8]) -> OpResult {
        let key = key_text(key)?;
        let result = self
            .coll
            .delete_one(doc! {"_id": key})
            .run()
            .map_err(|e| op_failed(e, self.secrets))?;
        if result.deleted_count == 0 {
            return Err(OpError::NotFound);
        }
        Ok(())
    }
}

/// Entries copied out of one query: the db_bench cursor.
#[derive(Default)]
struct Batch {
    data: Vec<u8>,
    /// Per entry: where its key starts, where its value starts, where it ends.
    spans: Vec<(usize, usize, usize)>,
    pos: usize,
    /// The last fill found fewer entries than it asked for.
    at_end: bool,
    /// Entries the next fill asks for.
    next_fill: usize,
}

impl Batch {
    fn current(&self) -> Option<(&[u8], &[u8])> {
        let &(start, value_start, end) = self.spans.get(self.pos)?;
        Some((&self.data[start..value_start], &self.data[value_start..end]))
    }

    fn last_key(&self) -> Option<Vec<u8>> {
        let &(start, value_start, _) = self.spans.last()?;
        Some(self.data[start..value_start].to_vec())
    }
}

/// Where a batch starts.
enum Start {
    First,
    AtOrAfter(Vec<u8>),
    After(Vec<u8>),
}

/// Raw keys and values for `kvperf bench`.
pub struct MongoKvWorker<'e> {
    coll: Collection<RawDocumentBuf>,
    secrets: &'e [String],
    cursor: Batch,
    _client: Client,
}

impl MongoKvWorker<'_> {
    fn fill(&mut self, from: Start) -> Result<bool, OpError> {
        let asked = self.cursor.next_fill.max(1);
        self.cursor.next_fill = (asked * 2).clamp(16, LARGEST_FILL);
        let filter = match &from {
            Start::First => Document::new(),
            Start::AtOrAfter(k) => doc! {"_id": {"$gte": bin(k)}},
            Start::After(k) => doc! {"_id": {"$gt": bin(k)}},
        };
        let cursor = self
            .coll
            .find(filter)
            .sort(doc! {"_id": 1})
            .limit(asked as i64)
            .batch_size(asked as u32)
            .run()
            .map_err(|e| op_failed(e, self.secrets))?;
        let c = &mut self.cursor;
        c.data.clear();
        c.spans.clear();
        c.pos = 0;
        for doc in cursor {
            let doc = doc.map_err(|e| op_failed(e, self.secrets))?;
            let (Ok(Some(RawBsonRef::Binary(k))), Ok(Some(RawBsonRef::Binary(v)))) =
                (doc.get("_id"), doc.get("v"))
            else {
                return Err(OpError::Failed(
                    "MongoDB: a raw key-value document is not {_id: binary, v: binary}".into(),
                ));
            };
            let start = c.data.len();
            c.data.extend_from_slice(k.bytes);
            let value_start = c.data.len();
            c.data.extend_from_slice(v.bytes);
            c.spans.push((start, value_start, c.data.len()));
        }
        c.at_end = c.spans.len() < asked;
        Ok(!c.spans.is_empty())
    }
}

fn bin(bytes: &[u8]) -> Binary {
    Binary {
        subtype: BinarySubtype::Generic,
        bytes: bytes.to_vec(),
    }
}

super::blocking_raw!(MongoKvWorker<'_>);

impl MongoKvWorker<'_> {
    fn get(&mut self, key: &[u8]) -> Result<usize, OpError> {
        let found = self
            .coll
            .find_one(doc! {"_id": bin(key)})
            .run()
            .map_err(|e| op_failed(e, self.secrets))?;
        match found {
            Some(doc) => match doc.get("v") {
                Ok(Some(RawBsonRef::Binary(v))) => Ok(v.bytes.len()),
                _ => Err(OpError::Failed(
                    "MongoDB: the document has no binary v".into(),
                )),
            },
            None => Err(OpError::NotFound),
        }
    }

    /// An upsert: db_bench's put overwrites.
    fn put(&mut self, key: &[u8], value: &[u8]) -> OpResult {
        let mut doc = RawDocumentBuf::new();
        doc.append_ref("_id", binary(key));
        doc.append_ref("v", binary(value));
        self.coll
            .replace_one(doc! {"_id": bin(key)}, doc)
            .upsert(true)
            .run()
            .map_err(|e| op_failed(e, self.secrets))?;
        Ok(())
    }

    /// Deleting a missing key is Ok (as the embedded engines).
    fn delete(&mut self, key: &[u8]) -> OpResult {
        self.coll
            .delete_one(doc! {"_id": bin(key)})
            .run()
            .map_err(|e| op_failed(e, self.secrets))?;
        Ok(())
    }

    /// Every seek queries afresh, so `fresh` changes nothing.
    fn seek(&mut self, target: Option<&[u8]>, _fresh: bool) -> Result<bool, OpError> {
        self.cursor.next_fill = 1;
        self.fill(target.map_or(Start::First, |t| Start::AtOrAfter(t.to_vec())))
    }

    fn next(&mut self) -> Result<bool, OpError> {
        let c = &mut self.cursor;
        if c.pos < c.spans.len() {
            c.pos += 1;
        }
        if c.pos < c.spans.len() {
            return Ok(true);
        }
        if c.at_end {
            return Ok(false);
        }
        match c.last_key() {
            Some(last) => self.fill(Start::After(last)),
            None => Ok(false),
        }
    }

    fn current(&self) -> Option<(&[u8], &[u8])> {
        self.cursor.current()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_never_show() {
        let mut p = Properties::new();
        p.set("mongodb.url", "mongodb://bob:hunter2@127.0.0.1:1/shop");
        let s = Settings::from_properties(&p).unwrap();
        assert_eq!(s.database, "shop", "the url's database");
        assert_eq!(
            s.effective["url"],
            "mongodb://bob:(redacted)@127.0.0.1:1/shop"
        );
        assert!(!format!("{s:?}").contains("hunter2"));
        assert_eq!(
            scrub("auth failed for hunter2", &s.secrets),
            "auth failed for (redacted)"
        );

        let mut p = Properties::new();
        p.set("mongodb.username", "alice");
        p.set("mongodb.password", "s3cret");
        let s = Settings::from_properties(&p).unwrap();
        assert!(!format!("{s:?} {:?}", s.effective).contains("s3cret"));
        assert_eq!(s.effective["password"], "(redacted)");
        assert_eq!(s.database, "ycsb");
        assert_eq!(s.address, "127.0.0.1:27017");
    }

    #[test]
    fn a_url_password_holding_at_colon_or_slash_never_shows() {
        for url in [
            "mongodb://bob:hun@ter2@127.0.0.1:1/shop",
            "mongodb://bob:hun:ter2@127.0.0.1:1/shop",
            "mongodb://bob:hun/ter2@127.0.0.1:1/shop",
        ] {
            let mut p = Properties::new();
            p.set("mongodb.url", url);
            let shown = match Settings::from_properties(&p) {
                Ok(s) => format!("{s:?} {:?}", s.effective),
                Err(e) => e.to_string(),
            };
            assert!(!shown.contains("ter2"), "{url}: {shown}");
        }
    }

    #[test]
    fn write_concern_and_names_are_checked() {
        let mut p = Properties::new();
        p.set("mongodb.write_concern", "0");
        let err = Settings::from_properties(&p).unwrap_err().to_string();
        assert!(err.contains("not supported"), "{err}");
        let mut p = Properties::new();
        p.set("mongodb.write_concern", "majority");
        assert_eq!(
            Settings::from_properties(&p).unwrap().effective["write_concern"],
            "majority"
        );
        let mut p = Properties::new();
        p.set("mongodb.url", "http://x");
        assert!(Settings::from_properties(&p).is_err());
        let mut p = Properties::new();
        p.set("mongodb.database", "a.b");
        assert!(Settings::from_properties(&p).is_err());
    }
}
