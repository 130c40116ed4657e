//! The bare async client beside kvperf's Cassandra engine (the "bare
//! loop" of bench/async-seam.sh): the engine's prepared point read
//! (`SELECT * FROM ks.usertable WHERE y_id = ? LIMIT 1`) and, with
//! `--update-proportion`, its one-field update (`UPDATE ks.usertable SET
//! "fieldN" = ? WHERE y_id = ?`, a random printable value of
//! `--field-length` bytes), consistency ONE, the engine's session options,
//! issued in a closed loop for uniformly random keys of the table by N
//! clients, as kvperf's workloads C and A with
//! `requestdistribution=uniform` do; no workload generator, no runner, no
//! histograms. In one of three ways:
//!
//! - `async` (default): N tokio tasks on one multi-thread runtime, sharing
//!   one session (or one session each with `--session-per-task`);
//! - `blocking`: N OS threads, each with its own session (or one shared
//!   session with `--shared-session`), each calling `rt.block_on(...)` per
//!   read on one shared multi-thread runtime: what the engine does, without
//!   kvperf's runner;
//! - `local`: N OS threads, each with its own current-thread runtime and
//!   its own session, blocking on it (I/O driven by the calling thread).
//!
//! cargo run --release --features cassandra --example cql-async-loop -- \
//!     --port 19042 --keyspace ycsb --clients 16 --ops 100000 [--mode async|blocking|local] \
//!     [--update-proportion 0.5] [--fields 10] [--field-length 100] \
//!     [--runtime-threads 2] [--session-per-task] [--shared-session] [--server-pid PID]
//!
//! Prints one line: mode, clients, sessions, ops/s, this process's CPU per
//! operation and (with --server-pid) the server's, session setup times.

fn main() {
    if let Err(e) = bench::main() {
        eprintln!("cql-async-loop: {e}");
        std::process::exit(1);
    }
}

mod bench {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use rand::{Rng, SeedableRng};
    use scylla::client::session::Session;
    use scylla::client::session_builder::SessionBuilder;
    use scylla::deserialize::row::ColumnIterator;
    use scylla::statement::prepared::PreparedStatement;
    use scylla::statement::{Consistency, Statement};

    type Error = Box<dyn std::error::Error + Send + Sync>;

    #[derive(Clone)]
    struct Args {
        hosts: Vec<String>,
        port: u16,
        keyspace: String,
        clients: usize,
        ops: u64,
        runtime_threads: usize,
        session_per_task: bool,
        /// `blocking` mode: all threads share one session.
        shared_session: bool,
        mode: String,
        server_pid: Option<u32>,
        update_proportion: f64,
        fields: usize,
        field_length: usize,
    }

    fn args() -> Result<Args, Error> {
        let mut a = Args {
            hosts: vec!["127.0.0.1".into()],
            port: 9042,
            keyspace: "ycsb".into(),
            clients: 4,
            ops: 50_000,
            runtime_threads: 2,
            session_per_task: false,
            shared_session: false,
            mode: "async".into(),
            server_pid: None,
            update_proportion: 0.0,
            fields: 10,
            field_length: 100,
        };
        let mut it = std::env::args().skip(1);
        while let Some(flag) = it.next() {
            let mut value = || it.next().ok_or(format!("{flag} needs a value"));
            match flag.as_str() {
                "--hosts" => a.hosts = value()?.split(',').map(str::to_string).collect(),
                "--port" => a.port = value()?.parse()?,
                "--keyspace" => a.keyspace = value()?,
                "--clients" | "--tasks" => a.clients = value()?.parse()?,
                "--ops" => a.ops = value()?.parse()?,
                "--runtime-threads" => a.runtime_threads = value()?.parse()?,
                "--session-per-task" => a.session_per_task = true,
                "--shared-session" => a.shared_session = true,
                "--mode" => a.mode = value()?,
                "--server-pid" => a.server_pid = Some(value()?.parse()?),
                "--update-proportion" => a.update_proportion = value()?.parse()?,
                "--fields" => a.fields = value()?.parse()?,
                "--field-length" => a.field_length = value()?.parse()?,
                other => return Err(format!("unknown argument {other}").into()),
            }
        }
        if !["async", "blocking", "local"].contains(&a.mode.as_str()) {
            return Err("--mode is async, blocking or local".into());
        }
        Ok(a)
    }

    /// The engine's session options (src/engine/server/cassandra.rs, `Settings::builder`).
    fn builder(a: &Args) -> SessionBuilder {
        SessionBuilder::new()
            .known_nodes(a.hosts.iter().map(|h| format!("{h}:{}", a.port)))
            .connection_timeout(Duration::from_secs(10))
            .keyspaces_to_fetch([a.keyspace.clone()])
    }

    /// CPU seconds (user + system) of a process from /proc.
    fn cpu_s(pid: &str) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<u64> = rest
            .split_whitespace()
            .map(|v| v.parse().unwrap_or(0))
            .collect();
        let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
        // SAFETY: sysconf has no preconditions.
        ticks as f64 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64
    }

    /// The read, and the update of each field.
    struct Statements {
        read: PreparedStatement,
        updates: Vec<PreparedStatement>,
    }

    async fn prepare(session: &Session, text: String) -> Result<PreparedStatement, Error> {
        let mut stmt = Statement::new(text);
        stmt.set_consistency(Consistency::One);
        stmt.set_is_idempotent(true);
        Ok(session.prepare(stmt).await?)
    }

    async fn prepared(a: &Args, session: &Session) -> Result<Arc<Statements>, Error> {
        let ks = &a.keyspace;
        let read = format!("SELECT * FROM {ks}.usertable WHERE y_id = ? LIMIT 1");
        let mut updates = Vec::new();
        for f in 0..a.fields {
            let text = format!("UPDATE {ks}.usertable SET \"field{f}\" = ? WHERE y_id = ?");
            updates.push(prepare(session, text).await?);
        }
        Ok(Arc::new(Statements {
            read: prepare(session, read).await?,
            updates,
        }))
    }

    /// One read, its bytes touched as the engine copies them.
    async fn read(session: &Session, stmt: &PreparedStatement, key: &str) -> Result<usize, Error> {
        let rows = session
            .execute_unpaged(stmt, (key,))
            .await?
            .into_rows_result()?;
        let mut n = 0;
        for row in rows.rows::<ColumnIterator>()? {
            for col in row? {
                n += col?.slice.map_or(0, |s| s.as_slice().len());
            }
        }
        Ok(n)
    }

    /// One operation for a uniformly random key: a read, or (with the
    /// update proportion) an update of one random field.
    async fn operation(
        a: &Args,
        session: &Session,
        stmts: &Statements,
        keys: &[String],
        rng: &mut rand::rngs::SmallRng,
    ) -> Result<(), Error> {
        let key = &keys[rng.gen_range(0..keys.len())];
        if a.update_proportion > 0.0 && rng.gen::<f64>() < a.update_proportion {
            let field = rng.gen_range(0..stmts.updates.len());
            let value: String = (0..a.field_length)
                .map(|_| rng.gen_range(b' '..=b'~') as char)
                .collect();
            let stmt = &stmts.updates[field];
            session
                .execute_unpaged(stmt, (value.as_str(), key.as_str()))
                .await?;
        } else {
            read(session, &stmts.read, key).await?;
        }
        Ok(())
    }

    async fn operations(
        a: &Args,
        session: &Session,
        stmts: &Statements,
        keys: &[String],
        seed: u64,
        count: u64,
    ) -> Result<(), Error> {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        for _ in 0..count {
            operation(a, session, stmts, keys, &mut rng).await?;
        }
        Ok(())
    }

    /// Operations done, seconds, client CPU s, server CPU s, sessions.
    type Outcome = (u64, f64, f64, Option<f64>, usize);

    /// Clients as tokio tasks sharing one session (or one each).
    fn clients_as_tasks(
        a: &Args,
        rt: &tokio::runtime::Runtime,
        keys: &Arc<Vec<String>>,
        per_client: u64,
        setup: &mut Vec<Duration>,
    ) -> Result<Outcome, Error> {
        let n_sessions = if a.session_per_task { a.clients } else { 1 };
        let mut sessions = Vec::new();
        for _ in 0..n_sessions {
            let t = Instant::now();
            let s = Arc::new(rt.block_on(builder(a).build())?);
            setup.push(t.elapsed());
            let stmt = rt.block_on(prepared(a, &s))?;
            sessions.push((s, stmt));
        }
        let (c0, s0) = (cpu_s("self"), a.server_pid.map(|p| cpu_s(&p.to_string())));
        let start = Instant::now();
        rt.block_on(async {
            let mut handles = Vec::new();
            for task in 0..a.clients {
                let (s, stmts) = sessions[task % n_sessions].clone();
                let (keys, a) = (keys.clone(), a.clone());
                handles.push(tokio::spawn(async move {
                    operations(&a, &s, &stmts, &keys, task as u64, per_client).await
                }));
            }
            for h in handles {
                h.await??;
            }
            Ok::<(), Error>(())
        })?;
        Ok(outcome(a, per_client, (start, c0, s0), n_sessions))
    }

    /// Clients on threads, each blocking on the shared runtime (`blocking`)
    /// or its own (`local`).
    fn clients_on_threads(
        mode: &str,
        a: &Args,
        rt: tokio::runtime::Runtime,
        keys: &Arc<Vec<String>>,
        per_client: u64,
        setup: &mut Vec<Duration>,
    ) -> Result<Outcome, Error> {
        // Each client thread: its own session (and, for `local`, its own
        // runtime), or one session shared by all (`--shared-session`).
        let barrier = Arc::new(std::sync::Barrier::new(a.clients + 1));
        let shared_session = if mode == "blocking" && a.shared_session {
            let s = Arc::new(rt.block_on(builder(a).build())?);
            let stmt = rt.block_on(prepared(a, &s))?;
            Some((s, stmt))
        } else {
            None
        };
        let rt = Arc::new(rt);
        let mut handles = Vec::new();
        for client in 0..a.clients {
            let (a, keys, barrier, shared) = (a.clone(), keys.clone(), barrier.clone(), rt.clone());
            let one = shared_session.clone();
            let local = mode == "local";
            handles.push(std::thread::spawn(move || -> Result<Duration, Error> {
                let own;
                let rt: &tokio::runtime::Runtime = if local {
                    own = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()?;
                    &own
                } else {
                    &shared
                };
                let t = Instant::now();
                let (session, stmts) = match one {
                    Some(pair) => pair,
                    None => {
                        let s = Arc::new(rt.block_on(builder(&a).build())?);
                        let stmt = rt.block_on(prepared(&a, &s))?;
                        (s, stmt)
                    }
                };
                let took = t.elapsed();
                barrier.wait();
                let mut rng = rand::rngs::SmallRng::seed_from_u64(client as u64);
                for _ in 0..per_client {
                    rt.block_on(operation(&a, &session, &stmts, &keys, &mut rng))?;
                }
                Ok(took)
            }));
        }
        barrier.wait();
        let (c0, s0) = (cpu_s("self"), a.server_pid.map(|p| cpu_s(&p.to_string())));
        let start = Instant::now();
        for h in handles {
            setup.push(h.join().map_err(|_| "a client thread panicked")??);
        }
        let sessions = if shared_session.is_some() {
            1
        } else {
            a.clients
        };
        Ok(outcome(a, per_client, (start, c0, s0), sessions))
    }

    /// The figures of a run that started at `start` with the client's and
    /// the server's CPU seconds `c0` and `s0`.
    fn outcome(
        a: &Args,
        per_client: u64,
        (start, c0, s0): (Instant, f64, Option<f64>),
        sessions: usize,
    ) -> Outcome {
        let secs = start.elapsed().as_secs_f64();
        let server = a
            .server_pid
            .zip(s0)
            .map(|(p, s0)| cpu_s(&p.to_string()) - s0);
        (
            per_client * a.clients as u64,
            secs,
            cpu_s("self") - c0,
            server,
            sessions,
        )
    }

    pub fn main() -> Result<(), Error> {
        let a = args()?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(a.runtime_threads)
            .enable_all()
            .build()?;
        // Every key, to read existing records only.
        let keys: Arc<Vec<String>> = Arc::new(rt.block_on(async {
            let s = builder(&a).build().await?;
            let all = s
                .query_unpaged(format!("SELECT y_id FROM {}.usertable", a.keyspace), ())
                .await?
                .into_rows_result()?;
            let mut keys = Vec::new();
            for row in all.rows::<(String,)>()? {
                keys.push(row?.0);
            }
            Ok::<_, Error>(keys)
        })?);
        if keys.is_empty() {
            return Err("the table is empty: load it first".into());
        }
        let per_client = a.ops / a.clients as u64;
        let mut setup = Vec::new();
        let (ops, secs, client_cpu, server_cpu, sessions) = match a.mode.as_str() {
            "async" => clients_as_tasks(&a, &rt, &keys, per_client, &mut setup)?,
            mode => clients_on_threads(mode, &a, rt, &keys, per_client, &mut setup)?,
        };
        let avg_setup_ms =
            setup.iter().map(Duration::as_secs_f64).sum::<f64>() / setup.len().max(1) as f64 * 1e3;
        let max_setup_ms = setup.iter().map(Duration::as_secs_f64).fold(0.0, f64::max) * 1e3;
        println!(
            "mode={} clients={} sessions={sessions} runtime_threads={} ops={ops} secs={secs:.2} ops_per_s={:.0} client_cpu_per_op_us={:.1} server_cpu_per_op_us={} session_setup_avg_ms={avg_setup_ms:.1} session_setup_max_ms={max_setup_ms:.1}",
            a.mode,
            a.clients,
            a.runtime_threads,
            ops as f64 / secs,
            client_cpu / ops as f64 * 1e6,
            server_cpu.map_or("-".into(), |s| format!("{:.1}", s / ops as f64 * 1e6)),
        );
        Ok(())
    }
}
