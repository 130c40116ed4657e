//! Every shell block (```sh) of README.md and docs/*.md runs, as a user
//! would paste it, at tiny sizes: each block in a fresh temporary
//! directory, by `bash -e`, with the built `kvperf` first on PATH and HOME
//! in that directory (so `~/...` finds nothing of the machine's).
//!
//! A block that needs what a test cannot have here is marked in the
//! markdown by an HTML comment on the line before its fence, which the
//! rendered page does not show:
//!
//! ```text
//! <!-- needs: server (Redis, started by `kvperf server start`) -->
//! ```
//!
//! (`needs: server`, `slurm`, `kubernetes`, `fio`, `chromium`, `machines`,
//! or `long` for a block that runs for many minutes, each with its
//! reason). README's first block, the project's two commands, is `long`
//! without a marker, so that the README opens with them.
//! A marked block runs when this machine meets its need (root for
//! `server` and `slurm`, fio or Chromium on the PATH, Kubernetes' binaries
//! cached and root for `kubernetes`), after what it takes for granted (a
//! report to screenshot, the directory a device is mounted at); else it
//! is a skip through the shared helper (a failure under CI; for
//! `kubernetes` without its cached binaries, the skip CI allows). Blocks
//! that no one machine can run (`machines`: several hosts, an allocation
//! of several nodes, a plan of the user's own) and `long` ones print `not
//! run file:line: needs ...`. Every other block must exit 0, as must every
//! block that runs. Every block, marked or not, must be free of `...`
//! placeholders. Each block's directory has a link to the clone's
//! scripts/, as a user runs them from the clone.
//!
//! Sizes shrink before a block runs (the commands are otherwise verbatim):
//! `--scale F` becomes at most `KVPERF_DOCS_SCALE` (default 0.00001);
//! `recordcount=N`, `operationcount=N`, `--num=N` and `--reads=N` at most
//! `KVPERF_DOCS_COUNT` (default 1000); `--size S` is `16M` and `--runtime
//! T` is `1s`; `plan run` gets `--set min_duration=1`, so a scaled run
//! ends on its shrunk operation count instead of lasting a plan's 10 s
//! floor (seed 000's 51 steps would take 10 minutes). Absolute directories that stand for the user's devices,
//! `/mnt/...` and `/dev/shm/...`, move under the block's directory.

use crate::common;
use crate::common::machine;

use std::path::{Path, PathBuf};
use std::process::Command;

struct Block {
    file: String,
    line: usize,
    needs: Option<String>,
    text: String,
}

fn doc_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    files.insert(0, root.join("README.md"));
    files
}

/// The ```sh blocks of `text`, dedented, with the marker before each.
fn blocks(file: &str, text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let fence = lines[i].trim_start();
        if fence != "```sh" {
            i += 1;
            continue;
        }
        let indent = lines[i].len() - fence.len();
        let needs = lines[..i]
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .and_then(|l| l.trim().strip_prefix("<!-- needs:"))
            .and_then(|l| l.strip_suffix("-->"))
            .map(|l| l.trim().to_string());
        let start = i + 1;
        let mut end = start;
        while end < lines.len() && lines[end].trim() != "```" {
            end += 1;
        }
        let body: Vec<&str> = lines[start..end]
            .iter()
            .map(|l| l.get(indent..).unwrap_or(l.trim_start()))
            .collect();
        out.push(Block {
            file: file.to_string(),
            line: i + 1,
            needs,
            text: body.join("\n") + "\n",
        });
        i = end + 1;
    }
    out
}

fn all_blocks() -> Vec<Block> {
    doc_files()
        .iter()
        .flat_map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let shown = if name == "README.md" {
                name
            } else {
                format!("docs/{name}")
            };
            let mut found = blocks(&shown, &std::fs::read_to_string(p).unwrap());
            // README's first block is the project's two commands, which
            // open the README unmarked: the quickstart builds and runs a
            // plan for minutes, and the suite is what runs this test.
            if let Some(first) = found.first_mut().filter(|_| shown == "README.md") {
                first.needs.get_or_insert_with(|| {
                    "long (the project's two commands: the quickstart builds kvperf and runs a plan; the suite runs this test)".into()
                });
            }
            found
        })
        .collect()
}

fn env_f64(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The block's commands at tiny sizes (see the module's comment).
fn shrink(text: &str, dir: &Path) -> String {
    let scale = env_f64("KVPERF_DOCS_SCALE", 0.00001);
    let count = env_f64("KVPERF_DOCS_COUNT", 1000.0) as u64;
    let dir = dir.display().to_string();
    let mut out = String::new();
    for line in text.lines() {
        let mut previous = "";
        let mut words = Vec::new();
        for word in line.split(' ') {
            let mut new = word.to_string();
            match previous {
                "--scale" => {
                    if let Ok(f) = word.parse::<f64>() {
                        new = f.min(scale).to_string();
                    }
                }
                "--size" => new = "16M".into(),
                "--runtime" => new = "1s".into(),
                _ => {}
            }
            for key in ["recordcount=", "operationcount=", "--num=", "--reads="] {
                let Some(at) = new.find(key) else { continue };
                let (head, n) = new.split_at(at + key.len());
                if let Ok(n) = n.parse::<u64>() {
                    new = format!("{head}{}", n.min(count));
                }
            }
            new = new
                .replace("/mnt/", &format!("{dir}/mnt/"))
                .replace("/dev/shm/", &format!("{dir}/shm/"));
            words.push(new);
            previous = word;
        }
        let joined = words.join(" ");
        out.push_str(&joined.replacen(
            "kvperf plan run ",
            "kvperf plan run --set min_duration=1 ",
            1,
        ));
        out.push('\n');
    }
    out
}

/// Whether this machine meets a block's needs (its marker's first word).
enum Meets {
    /// Yes, once the commands before it have run.
    Yes(String),
    /// Not on any one machine (several machines, a plan of the user's
    /// own), or a block that runs for many minutes: not run, said so.
    Elsewhere,
    /// Not here, but it could be: a skip (a failure under CI).
    NotHere(String),
    /// Kubernetes' binaries are not cached: the skip CI allows (their
    /// build takes about half an hour; tests/kubernetes.rs says the same).
    NotBuilt(String),
}

fn meets(needs: &str) -> Meets {
    let on_path = |program: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {program}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let kind = needs.split_whitespace().next().unwrap_or("");
    match kind {
        "machines" | "long" => Meets::Elsewhere,
        "server" | "slurm" if !root => Meets::NotHere(format!("needs {needs}: not root")),
        "server" | "slurm" => Meets::Yes(String::new()),
        "fio" | "chromium" if !on_path(kind) => Meets::NotHere(format!(
            "needs {needs}: no {kind} on the PATH (scripts/ensure-deps.sh --with-chromium installs it)"
        )),
        // The directory a user has mounted there.
        "fio" => Meets::Yes("mkdir -p mnt/nvme\n".into()),
        // The report it screenshots, made first.
        "chromium" => Meets::Yes(
            "kvperf run --engine null -P workloada -p operationcount=1000 --format json --output r.json\nkvperf report r.json --out reports/seed-000\n".into(),
        ),
        "kubernetes" => {
            let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
            let built = Command::new(repo.join("scripts/k8s-apiserver.sh"))
                .arg("built")
                .output()
                .ok()
                .filter(|o| o.status.success());
            // `BIN: ...`, where BIN is KVPERF_K8S_CACHE/bin-VERSION: the
            // block's HOME is its own, so the cache is named to it.
            let cache = built.as_ref().and_then(|o| {
                let text = String::from_utf8_lossy(&o.stdout);
                let bin = Path::new(text.split(':').next()?.trim());
                Some(bin.parent()?.display().to_string())
            });
            match (cache, root) {
                (None, _) => Meets::NotBuilt(format!(
                    "needs {needs}: Kubernetes' binaries are not cached (scripts/k8s-apiserver.sh build)"
                )),
                (Some(_), false) => Meets::NotHere(format!("needs {needs}: not root")),
                (Some(cache), true) => Meets::Yes(format!("export KVPERF_K8S_CACHE='{cache}'\n")),
            }
        }
        _ => Meets::NotHere(format!("needs {needs}: a need this test does not know")),
    }
}

#[test]
fn shell_blocks_hold_no_placeholders() {
    let all = all_blocks();
    assert!(all.len() >= 10, "found only {} blocks", all.len());
    for b in &all {
        for (i, line) in b.text.lines().enumerate() {
            let command = line.split(" #").next().unwrap_or(line);
            assert!(
                !command.contains("..."),
                "{}:{}: a placeholder in a command: {line}",
                b.file,
                b.line + 1 + i
            );
        }
    }
}

#[test]
fn every_shell_block_runs_or_says_what_it_needs() {
    let kvperf = Path::new(env!("CARGO_BIN_EXE_kvperf"));
    let path = format!(
        "{}:{}",
        kvperf.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = 0;
    for b in all_blocks() {
        let at = format!("{}:{}", b.file, b.line);
        let prelude = match b.needs.as_deref().map(meets) {
            None => String::new(),
            Some(Meets::Yes(prelude)) => prelude,
            Some(Meets::Elsewhere) => {
                println!("not run {at}: needs {}", b.needs.as_deref().unwrap_or(""));
                continue;
            }
            Some(Meets::NotHere(why)) => {
                common::skip_unless_ci(&at, &why);
                continue;
            }
            Some(Meets::NotBuilt(why)) => {
                common::note_skip(&format!("SKIPPED {at}: {why}"));
                continue;
            }
        };
        // A block that sets up a machine-wide service also stops it at its
        // end: the tests that use the service wait while it runs.
        let _alone = match b.needs.as_deref().and_then(|n| n.split_whitespace().next()) {
            Some("slurm") => Some(machine::SLURM.alone()),
            Some("kubernetes") => Some(machine::KUBERNETES.alone()),
            _ => None,
        };
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("home")).unwrap();
        // The blocks run from a clone's top directory: its scripts/ is there.
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        std::os::unix::fs::symlink(repo.join("scripts"), tmp.path().join("scripts")).unwrap();
        let script = format!("{prelude}{}", shrink(&b.text, tmp.path()));
        let started = std::time::Instant::now();
        let out = Command::new("timeout")
            .args(["900", "bash", "-e", "-c", &script])
            .current_dir(tmp.path())
            .env("PATH", &path)
            .env("HOME", tmp.path().join("home"))
            .output()
            .unwrap();
        let tail = |bytes: &[u8]| {
            let text = String::from_utf8_lossy(bytes).into_owned();
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(15)..].join("\n")
        };
        assert!(
            out.status.success(),
            "{at} failed ({}):\n{script}\n--- stdout:\n{}\n--- stderr:\n{}",
            out.status,
            tail(&out.stdout),
            tail(&out.stderr)
        );
        println!("ran {at} in {:.1} s", started.elapsed().as_secs_f64());
        ran += 1;
    }
    assert!(ran >= 5, "only {ran} blocks ran");
}

#[test]
fn sizes_shrink_and_devices_move_into_the_blocks_directory() {
    let dir = Path::new("/tmp/b");
    let text = "kvperf plan run seed-000 --scale 0.001 --db mine=/mnt/nvme/kv --db t=/dev/shm/kv\n\
                kvperf run -p recordcount=1000000 -p operationcount=20 --num=5000000 --size 8G --runtime 30s\n";
    let got = shrink(text, dir);
    assert!(got.contains("--scale 0.00001 "), "{got}");
    assert!(got.contains("mine=/tmp/b/mnt/nvme/kv"), "{got}");
    assert!(got.contains("t=/tmp/b/shm/kv"), "{got}");
    assert!(got.contains("recordcount=1000 "), "{got}");
    assert!(got.contains("operationcount=20 "), "{got}");
    assert!(got.contains("--num=1000 --size 16M --runtime 1s"), "{got}");
    assert!(
        got.starts_with("kvperf plan run --set min_duration=1 seed-000 "),
        "{got}"
    );
}

#[test]
fn markers_are_read_from_the_line_before_the_fence() {
    let text = "a\n\n<!-- needs: server (Redis) -->\n```sh\nkvperf server start redis\n```\n\n   ```sh\n   kvperf engines\n   ```\n";
    let got = blocks("x.md", text);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].needs.as_deref(), Some("server (Redis)"));
    assert_eq!(got[0].line, 4);
    assert_eq!(got[1].needs, None);
    assert_eq!(got[1].text, "kvperf engines\n");
}
