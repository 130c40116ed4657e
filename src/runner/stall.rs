//! What a step keeps when the process must end around calls nothing can
//! cancel (a stall, a wait after the window that outlived `stalltimeout`
//! or was interrupted, an interrupt before the window): the stuck clients
//! can never be joined, so the runner hands the reason and what the window
//! measured to the step's [`StallKeeper`], which keeps them and ends the
//! process. The keeper travels with the step (in [`super::RunSpec`], the
//! watching before and after the window); the runner itself never exits.

use std::sync::{Arc, Mutex};

use super::{lock, RunOutcome};

/// What the step keeps of a stall: its output with the reason and what
/// the window measured.
type Keep = Box<dyn Fn(&str, Option<&RunOutcome>) + Send + Sync>;

/// The step's answer to a stall: what it keeps (set again as what it has
/// measured grows) and how the process ends after it, given by the
/// command that runs the step.
#[derive(Clone)]
pub struct StallKeeper(Arc<Keeper>);

struct Keeper {
    /// Kept first, whatever the step sets later: what a command measured
    /// before this step (fit --check's replay).
    first: Mutex<Option<Keep>>,
    keep: Mutex<Option<Keep>>,
    end: fn(&str) -> !,
}

impl std::fmt::Debug for StallKeeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StallKeeper")
    }
}

impl StallKeeper {
    /// A keeper that keeps nothing yet and ends the process with `end`
    /// (which says why).
    pub fn new(end: fn(&str) -> !) -> Self {
        Self(Arc::new(Keeper {
            first: Mutex::new(None),
            keep: Mutex::new(None),
            end,
        }))
    }

    /// Sets what to keep when a stall ends the process (`keep` gets the
    /// reason, and what the window had measured when a window was running),
    /// in place of what was set before: what a step has measured so far
    /// grows as its benchmarks finish.
    pub fn keep(&self, keep: impl Fn(&str, Option<&RunOutcome>) + Send + Sync + 'static) {
        *lock(&self.0.keep) = Some(Box::new(keep));
    }

    /// Sets what is kept before anything [`StallKeeper::keep`] sets, which
    /// does not replace it.
    pub fn keep_first(&self, keep: impl Fn(&str, Option<&RunOutcome>) + Send + Sync + 'static) {
        *lock(&self.0.first) = Some(Box::new(keep));
    }

    /// Keeps what was measured, then ends the process saying `why`.
    pub(super) fn keep_and_end(&self, why: &str, measured: Option<&RunOutcome>) -> ! {
        if let Some(first) = lock(&self.0.first).as_ref() {
            first(why, measured);
        }
        if let Some(keep) = lock(&self.0.keep).as_ref() {
            keep(why, measured);
        }
        (self.0.end)(why)
    }
}
