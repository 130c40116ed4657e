//! A thread that does one thing every interval, on a fixed schedule, from
//! just before a run until just after it: what the engine-events sampler
//! and the power sampler share. The thing done is the caller's; this
//! module only keeps the schedule, the first tick before the caller goes
//! on, and the last tick after it asks to stop.

use std::sync::mpsc;
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

/// A running periodic thread; [`Periodic::stop`] ends it with one last
/// tick and hands back its state.
pub struct Periodic<'scope, S> {
    stop: mpsc::Sender<()>,
    thread: ScopedJoinHandle<'scope, S>,
}

/// Starts calling `tick(&mut state)` every `interval` on a thread of
/// `scope` named `name`; returns once the first tick is done. A tick that
/// takes longer than the interval delays the next, never the schedule
/// after it (ticks are due at `n × interval` from the first).
pub fn every<'scope, 'env, S, F>(
    scope: &'scope Scope<'scope, 'env>,
    name: &str,
    interval: Duration,
    mut state: S,
    mut tick: F,
) -> Periodic<'scope, S>
where
    S: Send + 'scope,
    F: FnMut(&mut S) + Send + 'scope,
{
    let (stop, stopped) = mpsc::channel::<()>();
    let (ticked, first_tick) = mpsc::channel::<()>();
    let interval = interval.max(Duration::from_millis(1));
    let thread = std::thread::Builder::new()
        .name(name.into())
        .spawn_scoped(scope, move || {
            let began = Instant::now();
            for n in 1u32.. {
                tick(&mut state);
                if n == 1 {
                    let _ = ticked.send(());
                }
                let next = interval.saturating_mul(n);
                let wait = next.saturating_sub(began.elapsed());
                match stopped.recv_timeout(wait) {
                    Err(mpsc::RecvTimeoutError::Timeout) => continue,
                    _ => break,
                }
            }
            // Just after the run.
            tick(&mut state);
            state
        })
        .expect("a sampler thread starts");
    // The first tick is made before the caller goes on (before the run).
    let _ = first_tick.recv();
    Periodic { stop, thread }
}

impl<S> Periodic<'_, S> {
    /// Stops the thread after one last tick; None if it panicked.
    pub fn stop(self) -> Option<S> {
        let _ = self.stop.send(());
        self.thread.join().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_before_the_caller_goes_on_and_once_more_at_stop() {
        std::thread::scope(|s| {
            let p = every(s, "test", Duration::from_secs(3600), 0u32, |n| *n += 1);
            // An hour apart: only the first tick before, the last at stop.
            assert_eq!(p.stop(), Some(2));
        });
    }
}
