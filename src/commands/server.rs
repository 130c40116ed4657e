//! `kvperf server start|stop|status NAME`: database servers on 127.0.0.1,
//! installed and started by kvperf, for the server engines.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::error::InputError;
use crate::server::{self, Action, Instance};

#[derive(Debug, Subcommand)]
pub enum ServerCommand {
    /// Install (if missing) and start a server, and wait until it answers.
    #[command(
        long_about = "Install the server if it is missing (Debian packages for redis and\n\
        postgres, Cassandra 5.0 jars from Maven Central, FerretDB v1.24.0 built from the Go\n\
        module proxy), start it on 127.0.0.1 in a data directory kvperf owns, and wait until\n\
        it answers. `kvperf load|run --engine E` then finds it on its default address.\n\
        Servers: redis (engine redis), postgres (engine postgres), cassandra (engine\n\
        cassandra; --nodes 3 for a cluster on 127.0.0.1-3), ferretdb (engine mongodb).\n\n\
        Example:\n  kvperf server start postgres -p pg_sync_commit=off"
    )]
    Start(ServerArgs),
    /// Stop a server started by kvperf, cleanly, and wait until it is gone.
    Stop(ServerArgs),
    /// Say whether a server started by kvperf is running and answering.
    Status(ServerArgs),
}

#[derive(Debug, Args)]
pub struct ServerArgs {
    /// redis, postgres, cassandra or ferretdb.
    pub name: String,
    /// Data directory (default: /var/lib/kvperf/servers/NAME as root,
    /// ~/.local/share/kvperf/servers/NAME otherwise).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Port (default: the server's usual one).
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,
    /// Nodes (cassandra only: 127.0.0.1, 127.0.0.2, ...).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=9))]
    pub nodes: u32,
    /// Server setting, passed to its start script: persist=1 (redis),
    /// pg_shared_buffers=1GB, pg_sync_commit=off, pg_fsync=off (postgres),
    /// cassandra_heap=2G (cassandra), ferretdb_handler=postgresql,
    /// ferretdb_pg_id_index=gin (ferretdb); repeatable.
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    pub settings: Vec<String>,
}

/// Settings each server's script reads.
const SETTINGS: [(&str, &[&str]); 4] = [
    ("redis", &["persist"]),
    (
        "postgres",
        &[
            "pg_shared_buffers",
            "pg_sync_commit",
            "pg_fsync",
            "pg_max_connections",
            "pg_extra_conf",
        ],
    ),
    (
        "cassandra",
        &[
            "cassandra_heap",
            "cassandra_storage_port",
            "cassandra_version",
        ],
    ),
    (
        "ferretdb",
        &[
            "ferretdb_handler",
            "ferretdb_pg_url",
            "ferretdb_pg_id_index",
            "ferretdb_debug_port",
        ],
    ),
];

pub fn run(command: ServerCommand) -> anyhow::Result<()> {
    let (args, action) = match command {
        ServerCommand::Start(a) => (a, Action::Start),
        ServerCommand::Stop(a) => (a, Action::Stop),
        ServerCommand::Status(a) => (a, Action::Status),
    };
    let instance = instance(&args)?;
    // For status, "not running" is an answer, not a failure of the command.
    let answer = instance.run(action)?;
    crate::say!("{}", answer.line);
    Ok(())
}

/// The server instance `args` name, with its settings checked.
pub fn instance(args: &ServerArgs) -> anyhow::Result<Instance> {
    let server = server::find(&args.name)?;
    if args.nodes > 1 && server.name != "cassandra" {
        return Err(InputError::Invalid(format!(
            "--nodes {}: only cassandra runs as a cluster here",
            args.nodes
        ))
        .into());
    }
    let known = SETTINGS
        .iter()
        .find(|(n, _)| *n == server.name)
        .map_or(&[][..], |(_, s)| *s);
    let mut settings = BTreeMap::new();
    for assignment in &args.settings {
        let (key, value) = assignment.split_once('=').ok_or_else(|| {
            InputError::Invalid(format!("-p expects key=value, got '{assignment}'"))
        })?;
        if !known.contains(&key) {
            let hint = crate::error::did_you_mean(key, known.iter().copied())
                .map(|n| format!(" (did you mean '{n}'?)"))
                .unwrap_or_default();
            return Err(InputError::Invalid(format!(
                "unknown {} setting '{key}'{hint}; known: {}",
                server.name,
                known.join(", ")
            ))
            .into());
        }
        settings.insert(format!("KVPERF_{}", key.to_uppercase()), value.to_string());
    }
    Ok(Instance {
        server,
        dir: args
            .dir
            .clone()
            .unwrap_or_else(|| server::default_dir(server)),
        port: args.port.unwrap_or(server.default_port),
        nodes: args.nodes,
        settings,
    })
}
