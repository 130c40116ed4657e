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
    #[command(long_about = start_about())]
    Start(ServerArgs),
    /// Stop a server started by kvperf, cleanly, and wait until it is gone.
    Stop(ServerArgs),
    /// Say whether a server started by kvperf is running and answering.
    Status(ServerArgs),
}

#[derive(Debug, Args)]
pub struct ServerArgs {
    #[arg(help = names_help())]
    pub name: String,
    /// Data directory (default: /var/lib/kvperf/servers/NAME as root,
    /// ~/.local/share/kvperf/servers/NAME otherwise).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Port (default: the server's usual one).
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = node_count, help = nodes_help())]
    pub nodes: u32,
    /// Server setting, passed to its start script (each server's settings:
    /// `kvperf server start --help`); repeatable.
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    pub settings: Vec<String>,
}

/// `kvperf server start --help`: every server, its engine and settings.
fn start_about() -> String {
    let mut text = String::from(
        "Install the server if it is missing, start it on 127.0.0.1 in a data directory\n\
         kvperf owns, and wait until it answers. `kvperf load|run --engine E` then finds it\n\
         on its default address. Servers, and their settings (-p KEY=VALUE):\n",
    );
    let width = server::SERVERS
        .iter()
        .flat_map(|s| s.settings)
        .map(|setting| setting.name.len())
        .max()
        .unwrap_or(0);
    for s in &server::SERVERS {
        let nodes = if s.max_nodes > 1 {
            format!(
                "; --nodes up to {}, on 127.0.0.1-{}",
                s.max_nodes, s.max_nodes
            )
        } else {
            String::new()
        };
        text.push_str(&format!(
            "\n  {}: {} (engine {}, port {}{nodes})\n",
            s.name, s.about, s.engine, s.default_port
        ));
        for setting in s.settings {
            text.push_str(&format!("    {:width$}  {}\n", setting.name, setting.about));
        }
    }
    text.trim_end().to_string()
}

/// `--nodes`: 1 or more; each server's most is checked with its entry.
fn node_count(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("expected a node count of 1 or more".into()),
    }
}

fn names_help() -> String {
    let names: Vec<&str> = server::SERVERS.iter().map(|s| s.name).collect();
    format!("The server: {}", names.join(", "))
}

fn nodes_help() -> String {
    let clusters: Vec<String> = server::SERVERS
        .iter()
        .filter(|s| s.max_nodes > 1)
        .map(|s| format!("{} up to {}", s.name, s.max_nodes))
        .collect();
    format!(
        "Nodes, on 127.0.0.1, 127.0.0.2, ... ({}; the others 1)",
        clusters.join(", ")
    )
}

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

/// The server instance `args` name, with its node count and settings checked.
pub fn instance(args: &ServerArgs) -> anyhow::Result<Instance> {
    let server = server::find(&args.name)?;
    server.check_nodes(args.nodes)?;
    let mut settings = BTreeMap::new();
    for assignment in &args.settings {
        let (key, value) = assignment.split_once('=').ok_or_else(|| {
            InputError::Invalid(format!("-p expects key=value, got '{assignment}'"))
        })?;
        let var = server.setting_var(key)?;
        server::check_setting(server, key, value)?;
        settings.insert(var, value.to_string());
    }
    if args.port == Some(0) {
        return Err(
            InputError::Invalid("--port 0: a server needs a port from 1 to 65535".into()).into(),
        );
    }
    Ok(Instance {
        server,
        dir: args
            .dir
            .clone()
            .unwrap_or_else(|| server::default_dir(server)),
        port: args.port.unwrap_or(server.default_port),
        port_given: args.port.is_some(),
        nodes: args.nodes,
        settings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(name: &str, nodes: u32, settings: &[String]) -> ServerArgs {
        ServerArgs {
            name: name.into(),
            dir: Some("/nonexistent".into()),
            port: None,
            nodes,
            settings: settings.to_vec(),
        }
    }

    #[test]
    fn the_help_lists_every_server_its_engine_and_settings() {
        let help = start_about();
        for s in &server::SERVERS {
            assert!(help.contains(&format!("  {}: ", s.name)), "{help}");
            assert!(help.contains(&format!("(engine {}, ", s.engine)), "{help}");
            for setting in s.settings {
                assert!(help.contains(setting.name), "{help}");
                assert!(help.contains(setting.about), "{help}");
            }
        }
        assert!(names_help().contains(server::SERVERS[3].name));
    }

    #[test]
    fn nodes_and_settings_are_checked_against_the_registry() {
        let single = server::SERVERS.iter().find(|s| s.max_nodes == 1).unwrap();
        let err = instance(&args(single.name, 2, &[])).unwrap_err();
        assert_eq!(crate::error::exit_code(&err), 2);
        let cluster = server::SERVERS.iter().find(|s| s.max_nodes > 1).unwrap();
        let shown = err.to_string();
        assert!(
            shown.contains(cluster.name) && !shown.contains('\n'),
            "{shown}"
        );
        let i = instance(&args(cluster.name, cluster.max_nodes, &[])).unwrap();
        assert_eq!((i.nodes, i.port), (cluster.max_nodes, cluster.default_port));

        let setting = single.settings[0].name;
        let given = [format!("{setting}=1")];
        let i = instance(&args(single.name, 1, &given)).unwrap();
        let var = format!("KVPERF_{}", setting.to_uppercase());
        assert_eq!(i.settings[&var], "1");
        let typo = [format!("{}x=1", setting)];
        let err = instance(&args(single.name, 1, &typo)).unwrap_err();
        assert_eq!(crate::error::exit_code(&err), 2);
        assert!(
            err.to_string()
                .contains(&format!("did you mean '{setting}'")),
            "{err}"
        );
        assert!(node_count("0").is_err() && node_count("x").is_err());
        assert_eq!(node_count("3"), Ok(3));
    }
}
