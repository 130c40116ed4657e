//! YCSB's bindings by the names its users type (`-db` classes, the
//! binding names of `bin/ycsb` and go-ycsb) and the engines that stand for
//! them. Here, beside the engines, so that no other module names one.

/// The engine for a YCSB binding: its class (`-db`), its name in
/// `bin/ycsb` or go-ycsb, or a kvperf engine's name.
pub fn engine_for_binding(binding: &str) -> Option<&'static str> {
    let class = binding.replace("com.yahoo.ycsb.", "site.ycsb.");
    let engine = match class.as_str() {
        "site.ycsb.db.rocksdb.RocksDBClient" | "rocksdb" => "rocksdb",
        "site.ycsb.db.RedisClient" | "redis" => "redis",
        "site.ycsb.db.MongoDbClient"
        | "site.ycsb.db.AsyncMongoDbClient"
        | "mongodb"
        | "mongodb-async" => "mongodb",
        "site.ycsb.db.CassandraCQLClient" | "cassandra-cql" | "cassandra" => "cassandra",
        "site.ycsb.postgrenosql.PostgreNoSQLDBClient" | "postgrenosql" | "pg" | "postgresql" => {
            "postgres"
        }
        // YCSB's BasicDB does nothing per operation: the driver alone.
        "site.ycsb.BasicDB" | "basic" => "null",
        other => super::KNOWN_ENGINES
            .iter()
            .map(|(name, _)| *name)
            .find(|name| *name == other)?,
    };
    Some(engine)
}
