//! CPU time of the client's threads: a client thread reads its own clock;
//! a runtime's worker threads are read from outside through their CPU
//! clocks, registered as each thread starts.

use std::sync::Mutex;
use std::thread::ThreadId;

/// CPU seconds the calling thread has used.
pub fn thread_cpu_seconds() -> f64 {
    clock_seconds(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn clock_seconds(clock: libc::clockid_t) -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes only into `ts`. A thread's CPU clock is
    // read only while the thread lives (see ThreadClocks), else it fails
    // and `ts` stays zero.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// The CPU clock of one thread, readable from any thread while it lives.
#[derive(Debug, Clone, Copy)]
pub struct ThreadClock(libc::clockid_t);

impl ThreadClock {
    /// The calling thread's clock (None if the system has none for it;
    /// Linux always does).
    pub fn current() -> Option<Self> {
        let mut clock: libc::clockid_t = 0;
        // SAFETY: writes only into `clock`.
        let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
        (rc == 0).then_some(Self(clock))
    }

    pub fn seconds(&self) -> f64 {
        clock_seconds(self.0)
    }
}

/// The CPU clocks of a runtime's threads: each registers as it starts and
/// leaves its total behind as it stops, so the sum covers every thread the
/// runtime ever had.
#[derive(Debug, Default)]
pub struct ThreadClocks {
    state: Mutex<ClocksState>,
}

#[derive(Debug, Default)]
struct ClocksState {
    live: Vec<(ThreadId, ThreadClock)>,
    exited_s: f64,
}

impl ThreadClocks {
    /// Called on a new thread of the runtime.
    pub fn register(&self) {
        if let Some(clock) = ThreadClock::current() {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            s.live.push((std::thread::current().id(), clock));
        }
    }

    /// Called on a runtime thread just before it ends.
    pub fn unregister(&self) {
        let me = std::thread::current().id();
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.live.retain(|(id, _)| *id != me);
        s.exited_s += thread_cpu_seconds();
    }

    /// CPU seconds of every thread registered so far. The lock keeps a
    /// thread from ending while its clock is read.
    pub fn seconds(&self) -> f64 {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.exited_s + s.live.iter().map(|(_, c)| c.seconds()).sum::<f64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spin(seconds: f64) {
        let t0 = thread_cpu_seconds();
        while thread_cpu_seconds() - t0 < seconds {
            std::hint::black_box(0);
        }
    }

    #[test]
    fn threads_that_ended_still_count() {
        let clocks = ThreadClocks::default();
        std::thread::scope(|s| {
            s.spawn(|| {
                clocks.register();
                spin(0.05);
                clocks.unregister();
            });
        });
        // Met twice: once the thread has spun, and once it was read.
        let meet = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            s.spawn(|| {
                clocks.register();
                spin(0.05);
                meet.wait();
                meet.wait();
                clocks.unregister();
            });
            meet.wait();
            // One thread ended, one alive: both counted, read from here.
            let both = clocks.seconds();
            assert!((0.1..1.0).contains(&both), "{both}");
            meet.wait();
        });
        assert!(clocks.seconds() >= 0.1);
    }
}
