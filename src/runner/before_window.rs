//! Before the measured window (the step's checks, the engine's opening
//! and schema checks, its first counters and events poll, the clients
//! opening their sessions) nothing is measured yet, but a step still
//! answers SIGINT/SIGTERM with its output written and the interrupt as
//! its error (exit 3), and a server that stops answering ends the step
//! at a deadline derived from `stalltimeout`, naming what it waited for.
//!
//! Those calls block in reads that nothing here can cancel (a stopped
//! server's socket), so the watcher has the step's [`StallKeeper`] end
//! the process around them (as a stall and the waits after the window do). The watching travels in the
//! run specification ([`super::RunSpec::before_window`]) and ends when the
//! runner opens the window ([`BeforeWindow::opens`]).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::{lock, stop_on_interrupt, StallKeeper, INTERRUPTED, WARMUP_POLL};

/// What a bounded wait gets past `stalltimeout`: a wait the engine bounds
/// itself by `stalltimeout` in all (a PostgreSQL lock held by another
/// session, 1 s at a time) ends first, with its own words.
pub const GRACE: Duration = Duration::from_secs(5);

/// A handle on the watching of one step before its window: the step names
/// what it waits for ([`Self::now`]); the runner ends the watching as the
/// window opens ([`Self::opens`]).
#[derive(Clone)]
pub struct BeforeWindow(Arc<Watched>);

impl std::fmt::Debug for BeforeWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BeforeWindow")
    }
}

struct Watched {
    state: Mutex<State>,
    changed: Condvar,
    watcher: Mutex<Option<std::thread::JoinHandle<()>>>,
    keeper: StallKeeper,
    /// A wait between a sequence's windows (`bench`'s): what the earlier
    /// ones measured is kept, and the words say so.
    between: bool,
}

struct State {
    waiting_for: &'static str,
    /// `stalltimeout` for a call a server answers at once; None: only an
    /// interrupt ends the wait (an embedded store's recovery may be long).
    limit: Option<Duration>,
    since: Instant,
    over: bool,
}

impl BeforeWindow {
    /// Starts watching, waiting for `what` (not bounded until [`Self::now`]
    /// gives a limit). SIGINT and SIGTERM no longer end the process by
    /// default from here: the step answers them, through `keeper`.
    pub fn watch(what: &'static str, keeper: StallKeeper) -> Self {
        Self::watching(what, keeper, false)
    }

    /// [`Self::watch`] for a wait after a window and before the next
    /// (pass 16: `bench`'s compaction on a stopped server was deaf to
    /// SIGTERM; its close between benchmarks said "nothing was measured").
    pub fn watch_between(what: &'static str, keeper: StallKeeper) -> Self {
        Self::watching(what, keeper, true)
    }

    fn watching(what: &'static str, keeper: StallKeeper, between: bool) -> Self {
        stop_on_interrupt();
        let watched = Arc::new(Watched {
            state: Mutex::new(State {
                waiting_for: what,
                limit: None,
                since: Instant::now(),
                over: false,
            }),
            changed: Condvar::new(),
            watcher: Mutex::new(None),
            keeper,
            between,
        });
        let this = Self(watched.clone());
        let watcher = std::thread::Builder::new()
            .name("kvperf-before-window".into())
            .spawn(move || watch_until_over(&watched));
        // Without the watcher (no thread to spare) the step is as before:
        // the window still answers interrupts itself.
        *lock(&this.0.watcher) = watcher.ok();
        this
    }

    /// Names what the step waits for now ("the engine to open"), for at
    /// most `limit` (`stalltimeout`) plus [`GRACE`]; None: until an interrupt.
    pub fn now(&self, what: &'static str, limit: Option<Duration>) {
        let mut state = lock(&self.0.state);
        *state = State {
            waiting_for: what,
            limit,
            since: Instant::now(),
            over: state.over,
        };
        self.0.changed.notify_all();
    }

    /// The window opens (or the step ends before it): the watching ends,
    /// and an interrupt from now on is the window's to answer. One that
    /// came before still ends the step here, as "before the window".
    pub fn opens(&self) {
        lock(&self.0.state).over = true;
        self.0.changed.notify_all();
        let watcher = lock(&self.0.watcher).take();
        if let Some(watcher) = watcher {
            let _ = watcher.join();
        }
    }
}

/// Ends the watching when the step leaves the scope that began it.
pub struct Watching(pub BeforeWindow);

impl Drop for Watching {
    fn drop(&mut self) {
        self.0.opens();
    }
}

fn watch_until_over(watched: &Watched) {
    let (when, kept) = match watched.between {
        false => ("before the measured window", "nothing was measured"),
        true => ("between measured windows", "what was measured is kept"),
    };
    let mut state = lock(&watched.state);
    loop {
        if INTERRUPTED.load(Relaxed) {
            watched.keeper.keep_and_end(
                &format!(
                    "interrupted {when}, waiting for {}; {kept}",
                    state.waiting_for
                ),
                None,
            );
        }
        if state.over {
            return;
        }
        if let Some(limit) = state.limit.filter(|l| state.since.elapsed() >= *l + GRACE) {
            watched.keeper.keep_and_end(
                &format!(
                    "the server did not answer within {} s while kvperf waited for {}, {when}: it stopped answering (stalltimeout={}); {kept}",
                    (limit + GRACE).as_secs_f64(),
                    state.waiting_for,
                    limit.as_secs_f64()
                ),
                None,
            );
        }
        state = watched
            .changed
            .wait_timeout(state, WARMUP_POLL)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}
