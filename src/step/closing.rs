//! The engine's end once a step's figures are whole. Dropping a server
//! engine closes its sessions, and a session may wait for its server to
//! hang up (the `postgres` crate's client does): a server that stopped
//! answering then held the step forever, deaf to SIGINT and SIGTERM, with
//! its output not yet written. The drop runs on a thread of its own,
//! waited for at most `stalltimeout` and until an interrupt; past that the
//! step ends as a wait after the window does (exit 3, its figures written).

use std::sync::mpsc::{self, RecvTimeoutError};
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
    let (done, dropped) = mpsc::channel::<()>();
    // Without a thread to spare the closure, and the engine, drop here.
    let _ = std::thread::Builder::new()
        .name("kvperf-engine-close".into())
        .spawn(move || {
            drop(engine);
            let _ = done.send(());
        });
    // An interrupt that ended the window early was answered by ending it.
    let interrupted_before = crate::runner::interrupted();
    let started = Instant::now();
    loop {
        match dropped.recv_timeout(POLL) {
            Err(RecvTimeoutError::Timeout) => {}
            _ => return Ok(()),
        }
        if !interrupted_before && crate::runner::interrupted() {
            anyhow::bail!(
                "interrupted after the measured window, waiting for the engine's sessions to close; what was measured is kept"
            );
        }
        if let Some(limit) = limit.filter(|l| started.elapsed() >= *l) {
            anyhow::bail!(
                "the server did not answer within {} s as the engine's sessions closed after the measured window: it stopped answering (stalltimeout={}); what was measured is kept",
                limit.as_secs_f64(),
                limit.as_secs_f64()
            );
        }
    }
}
