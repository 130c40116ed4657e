//! The start line of a run: every thread opens its state, then waits here
//! until all have arrived, so the clock starts for all at once. Unlike a
//! `Barrier`, the gate can be called off when a thread cannot be started,
//! so the threads already waiting return instead of hanging.

use std::sync::{Condvar, Mutex};

pub struct StartGate {
    threads: usize,
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    arrived: usize,
    open: bool,
    aborted: bool,
}

impl StartGate {
    pub fn new(threads: usize) -> Self {
        Self {
            threads,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        }
    }

    /// A worker is ready; blocks until the gate opens (true) or the run is
    /// called off (false).
    pub fn arrive_and_wait(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.arrived += 1;
        self.changed.notify_all();
        while !state.open && !state.aborted {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        !state.aborted
    }

    /// Blocks the coordinator until every worker has arrived.
    pub fn wait_until_all_arrived(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while state.arrived < self.threads {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Like [`wait_until_all_arrived`](Self::wait_until_all_arrived), for at
    /// most `timeout`: whether every worker has arrived.
    pub fn all_arrived_within(&self, timeout: std::time::Duration) -> bool {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (state, _) = self
            .changed
            .wait_timeout_while(state, timeout, |s| s.arrived < self.threads)
            .unwrap_or_else(|e| e.into_inner());
        state.arrived >= self.threads
    }

    pub fn open(&self) {
        self.set(|s| s.open = true);
    }

    pub fn abort(&self) {
        self.set(|s| s.aborted = true);
    }

    /// Whether the run was called off.
    pub fn aborted(&self) -> bool {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).aborted
    }

    fn set(&self, change: impl FnOnce(&mut State)) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        change(&mut state);
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_threads_return_when_the_gate_is_called_off() {
        let gate = StartGate::new(3);
        std::thread::scope(|s| {
            let waiting: Vec<_> = (0..2).map(|_| s.spawn(|| gate.arrive_and_wait())).collect();
            gate.abort();
            for w in waiting {
                assert!(!w.join().unwrap());
            }
        });
    }

    #[test]
    fn the_gate_opens_once_all_have_arrived() {
        let gate = StartGate::new(2);
        std::thread::scope(|s| {
            let waiting: Vec<_> = (0..2).map(|_| s.spawn(|| gate.arrive_and_wait())).collect();
            gate.wait_until_all_arrived();
            gate.open();
            for w in waiting {
                assert!(w.join().unwrap());
            }
        });
    }
}
