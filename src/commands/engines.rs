//! `kvperf engines`: every engine compiled in, what it can do and its options.

use crate::engine::{self, AsyncOps, EventSupport, KvSupport, StoreKind};

pub fn list() -> anyhow::Result<()> {
    let compiled = engine::registry();
    for spec in &compiled {
        crate::say!("{:<10} {}", spec.name, spec.about);
        if let Some(library) = engine::loaded_library(spec.name) {
            crate::say!("{:<10} library: {library}", "");
        }
        let store = match spec.store {
            StoreKind::Directory { .. } => "a data directory (--db)",
            StoreKind::Server { .. } => "a database server",
            StoreKind::Nothing => "nothing",
        };
        let c = &spec.capabilities;
        let mut can = vec!["read, scan, update, insert, delete"];
        if c.background_work {
            can.push("settle (waits for background work)");
        }
        if c.compact {
            can.push("compact");
        }
        match c.kv {
            KvSupport::Ordered => can.push("kvperf bench (ordered key-value)"),
            KvSupport::Point => can.push("kvperf bench (point key-value; no readseq/seekrandom)"),
            KvSupport::None => {}
        }
        if c.adopt {
            can.push("adopt a store kvperf did not load");
        }
        if c.stats_report {
            can.push("report its state (bench's stats, levelstats)");
        }
        let when = match c.async_ops {
            AsyncOps::Unavailable => None,
            AsyncOps::OnRequest => Some("clients=tasks; threads by default".to_string()),
            AsyncOps::ByDefault => Some("clients run as tasks by default".to_string()),
            AsyncOps::ByDefaultFrom(least) => Some(format!(
                "clients run as tasks by default from {least} clients up, fewer on threads"
            )),
        };
        let scheduling = if c.tasks_own_sockets {
            "each task pinned to one worker"
        } else {
            "tasks on work-stealing workers"
        };
        let tasks = when.map(|when| format!("async operations ({when}; {scheduling})"));
        can.extend(tasks.as_deref());
        crate::say!(
            "{:<10} keeps its data in {store}; can: {}",
            "",
            can.join(", ")
        );
        match c.events {
            EventSupport::Reports(kinds) => {
                let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
                crate::say!("{:<10} events: {}", "", names.join(", "));
            }
            EventSupport::Unavailable(why) => crate::say!("{:<10} events: none ({why})", ""),
        }
        if spec.options.is_empty() {
            crate::say!("{:<10} no options", "");
        } else {
            crate::say!("{:<10} options (-p {}.NAME=VALUE):", "", spec.name);
            for o in spec.options {
                let default = if o.default.is_empty() {
                    "(not set)"
                } else {
                    o.default
                };
                crate::say!("{:<12} {:<40} {default:<12} {}", "", o.name, o.help);
            }
        }
    }
    let missing: Vec<String> = engine::KNOWN_ENGINES
        .iter()
        .filter(|(name, _)| !compiled.iter().any(|s| s.name == *name))
        .map(|(name, feature)| format!("{name} (Cargo feature {feature})"))
        .collect();
    if !missing.is_empty() {
        crate::say!("not compiled in: {}", missing.join(", "));
    }
    Ok(())
}
