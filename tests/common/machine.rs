//! Services of the whole machine that tests share (the single-node Slurm
//! cluster, the single-node Kubernetes): the tests that use one hold it
//! shared, side by side; a documentation block that may stop it (its last
//! line is `... stop`) holds it alone, and the users set it up again after.
//! Every test runs in one process (tests/suite.rs), so a lock is enough.

use std::sync::{Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// One service; the lock's value counts the times a holder alone may have
/// stopped it.
pub struct Service {
    stops: RwLock<u64>,
}

pub static SLURM: Service = Service::new();
pub static KUBERNETES: Service = Service::new();

impl Service {
    const fn new() -> Self {
        Self {
            stops: RwLock::new(0),
        }
    }

    /// Held by a test that uses the service.
    pub fn shared(&self) -> RwLockReadGuard<'_, u64> {
        self.stops.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Held by a block that may stop the service: waits for its users.
    pub fn alone(&self) -> RwLockWriteGuard<'_, u64> {
        let mut stops = self.stops.write().unwrap_or_else(PoisonError::into_inner);
        *stops += 1;
        stops
    }
}

/// The outcome of a service's set-up, made once for each time it may have
/// been stopped.
pub struct Ready<T> {
    last: Mutex<Option<(u64, T)>>,
}

impl<T: Clone> Ready<T> {
    pub const fn new() -> Self {
        Self {
            last: Mutex::new(None),
        }
    }

    /// `set_up`'s outcome for the service as `held` finds it: run again
    /// when a holder alone came between (one set-up at a time).
    pub fn get(&self, held: &RwLockReadGuard<'_, u64>, set_up: impl FnOnce() -> T) -> T {
        let stops = **held;
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((made, outcome)) = last.as_ref() {
            if *made == stops {
                return outcome.clone();
            }
        }
        let outcome = set_up();
        *last = Some((stops, outcome.clone()));
        outcome
    }
}
