//! The engines and the servers name each other, and no one else names
//! them: tests of both registries together, here because engine/ stands
//! above server/ (an engine names the server it needs).

use super::{registry, StoreKind, KNOWN_ENGINES};
use crate::server::{find, SERVERS};

/// Servers name known engines, and an engine's server names it back.
#[test]
fn servers_and_engines_refer_to_each_other() {
    for s in &SERVERS {
        assert!(
            KNOWN_ENGINES.iter().any(|(e, _)| *e == s.engine),
            "server {}: no engine '{}'",
            s.name,
            s.engine
        );
    }
    for spec in registry() {
        if let StoreKind::Server { server, .. } = spec.store {
            let s = find(server).unwrap_or_else(|e| panic!("engine {}: {e}", spec.name));
            assert_eq!(s.engine, spec.name, "server {server} names another engine");
        }
    }
}

/// No code outside src/server/ and src/engine/ spells a server's name
/// (comments and test modules aside), and `kvperf server`'s command
/// names no server or server engine at all.
#[test]
fn no_other_source_names_a_server_or_an_engine() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut pending = vec![src.clone()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            // src/testing: the engines' own test helpers (test-only).
            // src/trace/import: the trace formats kvperf reads are
            // named after the tools that write them (RocksDB's query
            // trace), not engines kvperf chooses between.
            if path == src.join("server")
                || path == src.join("engine")
                || path == src.join("testing")
                || path == src.join("trace").join("import")
            {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    assert!(files.len() > 20, "found only {files:?}");
    let mut found = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        for line in code_lines(&text) {
            // Every server and engine but null (a word of its own in
            // YCSB's field sets); the default engine is named only by
            // engine::DEFAULT_ENGINE.
            let engines = super::KNOWN_ENGINES.iter().map(|(name, _)| *name);
            let names = SERVERS.iter().map(|s| s.name).chain(engines);
            for name in names.filter(|n| *n != "null") {
                if line.contains(&format!("\"{name}\"")) {
                    found.push(format!("{}: {}", path.display(), line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "server or engine names outside src/server and src/engine:\n{found:#?}"
    );

    let command = std::fs::read_to_string(src.join("commands/server.rs"))
        .unwrap()
        .to_lowercase();
    for s in &SERVERS {
        for word in [s.name, s.engine] {
            assert!(
                !has_word(&command, word),
                "src/commands/server.rs names '{word}'"
            );
        }
    }
}

/// The lines of a Rust file that are code: no comment lines, no
/// `#[cfg(test)] mod ... { ... }` (rustfmt closes it with a `}` at
/// column 0).
fn code_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut iter = text.lines().peekable();
    while let Some(line) = iter.next() {
        if line.trim() == "#[cfg(test)]"
            && iter
                .peek()
                .is_some_and(|l| l.trim_start().starts_with("mod "))
        {
            for l in iter.by_ref() {
                if l == "}" {
                    break;
                }
            }
        } else if !line.trim_start().starts_with("//") {
            lines.push(line);
        }
    }
    lines
}

fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !part(before) && !part(after)
    })
}

#[test]
fn source_checks_see_what_they_look_for() {
    let text = "fn a() { f(\"redis\") }\n// \"redis\"\n#[cfg(test)]\nmod tests {\n    \"redis\"\n}\nfn b() {}\n";
    assert_eq!(code_lines(text), ["fn a() { f(\"redis\") }", "fn b() {}"]);
    assert!(has_word("only redis here", "redis"));
    assert!(!has_word("postgresql", "postgres"));
    assert!(!has_word("pg_max_connections", "max"));
}
