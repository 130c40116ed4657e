//! Sleeping for tasks with a thread's precision. Tokio's timer rounds every
//! deadline up to its next millisecond tick, so a paced task sleeping on it
//! would start each operation up to 1 ms after its intended start, and
//! since latency counts from the intended start, that lateness would be
//! reported as the engine's latency. Here one thread keeps the deadlines
//! and sleeps until the earliest (a futex timeout: tens of microseconds
//! late, like a client thread's own sleep), then wakes the tasks due.
//!
//! The thread is started on first use and lives as long as the process;
//! its CPU time counts as the client's ([`cpu_seconds`]).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Condvar, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use super::cpu::ThreadClock;

/// A future that is ready at `due` (at once if `due` has passed).
pub fn sleep_until(due: Instant) -> SleepUntil {
    SleepUntil { due }
}

pub struct SleepUntil {
    due: Instant,
}

impl Future for SleepUntil {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.due {
            return Poll::Ready(());
        }
        // A second poll before the deadline (a spurious wake) adds a second
        // entry; its later wake is spurious too, which tasks tolerate.
        timer().add(self.due, cx.waker().clone());
        Poll::Pending
    }
}

/// CPU seconds the timer's thread has used (0 before its first use).
pub fn cpu_seconds() -> f64 {
    TIMER
        .get()
        .and_then(|t| t.clock.get())
        .map_or(0.0, ThreadClock::seconds)
}

struct Entry {
    due: Instant,
    /// Keeps entries with the same deadline apart (a waker has no order).
    seq: u64,
    waker: Waker,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.due, self.seq) == (other.due, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.due, self.seq).cmp(&(other.due, other.seq))
    }
}

#[derive(Default)]
struct Queue {
    entries: BinaryHeap<Reverse<Entry>>,
    next_seq: u64,
}

struct Timer {
    queue: Mutex<Queue>,
    /// Signalled when a new earliest deadline arrives.
    changed: Condvar,
    clock: OnceLock<ThreadClock>,
}

static TIMER: OnceLock<Timer> = OnceLock::new();

fn timer() -> &'static Timer {
    TIMER.get_or_init(|| {
        std::thread::Builder::new()
            .name("kvperf-timer".into())
            .spawn(|| {
                let timer = timer();
                if let Some(clock) = ThreadClock::current() {
                    let _ = timer.clock.set(clock);
                }
                timer.run()
            })
            .expect("the timer thread starts");
        Timer {
            queue: Mutex::new(Queue::default()),
            changed: Condvar::new(),
            clock: OnceLock::new(),
        }
    })
}

impl Timer {
    fn add(&self, due: Instant, waker: Waker) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let earliest = q.entries.peek().is_none_or(|Reverse(e)| due < e.due);
        let seq = q.next_seq;
        q.next_seq += 1;
        q.entries.push(Reverse(Entry { due, seq, waker }));
        if earliest {
            self.changed.notify_one();
        }
    }

    fn run(&self) -> ! {
        let mut due_now = Vec::new();
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let now = Instant::now();
            while q.entries.peek().is_some_and(|Reverse(e)| e.due <= now) {
                let Reverse(entry) = q.entries.pop().expect("peeked");
                due_now.push(entry.waker);
            }
            if !due_now.is_empty() {
                // Wake outside the lock: a waker may schedule a task at once.
                drop(q);
                due_now.drain(..).for_each(Waker::wake);
                q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
                continue;
            }
            q = match q.entries.peek() {
                None => self.changed.wait(q).unwrap_or_else(|e| e.into_inner()),
                Some(Reverse(e)) => {
                    let left = e.due.saturating_duration_since(now);
                    let waited = self.changed.wait_timeout(q, left);
                    waited.unwrap_or_else(|e| e.into_inner()).0
                }
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn tasks_wake_at_their_deadline_not_at_the_next_millisecond() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let late: Vec<Duration> = rt.block_on(async {
            let mut late = Vec::new();
            for i in 0..50u64 {
                // Deadlines between millisecond ticks, 0.3 to 0.8 ms ahead.
                let due = Instant::now() + Duration::from_micros(300 + i * 10);
                sleep_until(due).await;
                late.push(Instant::now() - due);
            }
            late
        });
        let mut sorted = late.clone();
        sorted.sort();
        // Never early; the median well under tokio's 1 ms rounding (its
        // median lateness would be about 0.5 ms). A busy machine delays
        // some wakes, so only the median is held to it.
        assert!(sorted[25] < Duration::from_micros(400), "{sorted:?}");
        assert!(cpu_seconds() > 0.0);
    }

    #[test]
    fn past_deadlines_are_ready_at_once() {
        let mut cx = Context::from_waker(Waker::noop());
        let mut sleep = sleep_until(Instant::now() - Duration::from_millis(1));
        assert!(Pin::new(&mut sleep).poll(&mut cx).is_ready());
    }
}
