//! The engine's end once a step's figures are whole. Dropping a server
//! engine closes its sessions, and a session may wait for its server to
//! hang up (the `postgres` crate's client does): a server that stopped
//! answering then held the step forever, deaf to SIGINT and SIGTERM, with
//! its output not yet written. The drop runs on a thread of its own,
//! waited for at most `stalltimeout` and until an interrupt; past that the
//! step ends as a wait after the window does (exit 3, its figures written).

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::engine::{Engine, EngineSpec, StoreKind};

/// How often the wait looks for an interrupt.
const POLL: Duration = Duration::from_millis(50);

/// Drops `engine`; a server engine's drop is bounded by `limit`
/// (`stalltimeout`; None: only an interrupt ends it). An embedded store's
/// drop (its own close) is waited for, as before. Err: the drop was left
/// running (the caller must not drop what it may still use, a runtime).
pub fn close_sessions(
    spec: &EngineSpec,
    engine: Box<dyn Engine>,
    limit: Option<Duration>,
) -> anyhow::Result<()> {
    if !matches!(spec.store, StoreKind::Server { .. }) {
        drop(engine);
        return Ok(());
    }
    bounded(
        move || drop(engine),
        limit,
        |ended| {
            match ended {
        Ended::Interrupted => "interrupted after the measured window, waiting for the engine's sessions to close; what was measured is kept".to_string(),
        Ended::Unanswered(limit) => format!(
            "the server did not answer within {} s as the engine's sessions closed after the measured window: it stopped answering (stalltimeout={}); what was measured is kept",
            limit.as_secs_f64(),
            limit.as_secs_f64()
        ),
    }
        },
    )
}

/// Closes `engine` (a server's last flush, Cassandra's) and drops it, as
/// [`close_sessions`] drops it: a server's bounded by `limit`, until an
/// interrupt (pass 16: `bench`'s close after its last benchmark waited
/// out the driver's 30 s, deaf to SIGINT and stalltimeout). `after` names
/// what was measured before it ("the last benchmark").
pub fn close_engine(
    spec: &EngineSpec,
    engine: Box<dyn Engine>,
    limit: Option<Duration>,
    after: &'static str,
) -> anyhow::Result<()> {
    if !matches!(spec.store, StoreKind::Server { .. }) {
        return engine.close();
    }
    let close = move || {
        let closed = engine.close();
        drop(engine);
        closed
    };
    bounded(close, limit, |ended| {
        match ended {
        Ended::Interrupted => format!(
            "interrupted after {after}, waiting for the engine to close (its last flush); what was measured is kept"
        ),
        Ended::Unanswered(limit) => format!(
            "the server did not answer within {} s as the engine closed after {after} (its last flush): it stopped answering (stalltimeout={}); what was measured is kept",
            limit.as_secs_f64(),
            limit.as_secs_f64()
        ),
    }
    })?
}

/// How a [`bounded`] wait ended without its call's answer.
pub enum Ended {
    /// At SIGINT or SIGTERM (one that came before the wait is not its to answer).
    Interrupted,
    /// Past its limit.
    Unanswered(Duration),
}

/// A [`bounded`] wait that ended without its call's answer, in `words`'
/// words: its caller's error, which a plan recognises (its step interrupted
/// there is said with the wait).
#[derive(Debug)]
pub struct Unanswered(pub String);

impl std::fmt::Display for Unanswered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unanswered {}

/// Runs `call` on a thread of its own and waits for it at most `limit`
/// (None: no limit) and until an interrupt: a call to a server blocks in
/// reads nothing here can cancel, so it is left running (the process is
/// about to end). Err([`Unanswered`]) in `words` when it was.
pub fn bounded<T: Send + 'static>(
    call: impl FnOnce() -> T + Send + 'static,
    limit: Option<Duration>,
    words: impl Fn(Ended) -> String,
) -> anyhow::Result<T> {
    let call = Arc::new(Mutex::new(Some(call)));
    let (done, answered) = mpsc::channel::<T>();
    let theirs = call.clone();
    let spawned = std::thread::Builder::new()
        .name("kvperf-bounded-call".into())
        .spawn(move || {
            if let Some(call) = take(&theirs) {
                let _ = done.send(call());
            }
        });
    if spawned.is_err() {
        // Without a thread to spare the call runs here, unbounded, as before.
        let call = take(&call).expect("not taken by a thread that never ran");
        return Ok(call());
    }
    // An interrupt that ended the window early was answered by ending it.
    let interrupted_before = crate::runner::interrupted();
    let started = Instant::now();
    loop {
        match answered.recv_timeout(POLL) {
            Ok(answer) => return Ok(answer),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                anyhow::bail!("internal: a call kvperf waited for panicked")
            }
        }
        if !interrupted_before && crate::runner::interrupted() {
            return Err(Unanswered(words(Ended::Interrupted)).into());
        }
        if let Some(limit) = limit.filter(|l| started.elapsed() >= *l) {
            return Err(Unanswered(words(Ended::Unanswered(limit))).into());
        }
    }
}

/// The call, once: the thread's or, without one, the caller's.
fn take<F>(call: &Mutex<Option<F>>) -> Option<F> {
    call.lock().unwrap_or_else(|e| e.into_inner()).take()
}
