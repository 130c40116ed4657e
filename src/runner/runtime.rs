//! The runner's runtime for clients that are tasks: a tokio multi-thread
//! runtime with a set number of worker threads, whose CPU time is the
//! client's. The engine gets its handle at open and runs its driver on it,
//! so the clients and the driver's I/O share these threads (a response
//! wakes its client on the worker that read it) and no second runtime runs.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use anyhow::Context;

use super::cpu::ThreadClocks;

/// A client task's future; it may borrow from the caller of
/// [`ClientRuntime::run_all`].
pub type TaskFuture<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

pub struct ClientRuntime {
    rt: tokio::runtime::Runtime,
    workers: usize,
    clocks: Arc<ThreadClocks>,
}

impl std::fmt::Debug for ClientRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClientRuntime({} workers)", self.workers)
    }
}

impl ClientRuntime {
    pub fn new(workers: usize) -> anyhow::Result<Self> {
        let clocks = Arc::new(ThreadClocks::default());
        let (started, stopping) = (clocks.clone(), clocks.clone());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers.max(1))
            .thread_name("kvperf-task")
            .enable_all()
            .on_thread_start(move || started.register())
            .on_thread_stop(move || stopping.unregister())
            .build()
            .context("cannot start the clients' runtime")?;
        Ok(Self {
            rt,
            workers: workers.max(1),
            clocks,
        })
    }

    /// What the engine runs its driver on.
    pub fn handle(&self) -> &tokio::runtime::Handle {
        self.rt.handle()
    }

    pub fn workers(&self) -> usize {
        self.workers
    }

    /// CPU seconds of the runtime's threads and of the pacing timer's, so
    /// far: the clients' and the driver's work.
    pub fn cpu_seconds(&self) -> f64 {
        self.clocks.seconds() + super::timer::cpu_seconds()
    }

    /// Runs every future as a task on the runtime's workers and returns
    /// once all have ended, with how many panicked. Unlike `spawn`, the
    /// futures may borrow from the caller (like `std::thread::scope`).
    /// Call it from outside the runtime (the runner's own thread).
    pub fn run_all<'a>(&self, futures: Vec<TaskFuture<'a>>) -> usize {
        // Past this point nothing may unwind before every task has ended.
        let guard = AbortOnUnwind;
        let handles: Vec<_> = futures
            .into_iter()
            .map(|f| {
                // SAFETY: tokio wants 'static because it cannot know when a
                // task ends; here it is known. The borrowed data lives for
                // 'a, beyond this call, and this call returns only after
                // awaiting every task's JoinHandle, which resolves after
                // the task's future has been dropped (completed, panicked or
                // cancelled). `self` borrows the runtime, so it cannot shut
                // down meanwhile. If anything here unwinds before that, the
                // guard aborts the process instead of letting tasks outlive
                // their borrows.
                let f: TaskFuture<'static> = unsafe { std::mem::transmute(f) };
                self.rt.spawn(f)
            })
            .collect();
        let panicked = self.rt.block_on(async {
            let mut panicked = 0;
            for handle in handles {
                panicked += usize::from(handle.await.is_err());
            }
            panicked
        });
        std::mem::forget(guard);
        panicked
    }
}

struct AbortOnUnwind;

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        eprintln!("kvperf: internal error while client tasks were running; aborting");
        std::process::abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_borrow_from_the_caller_and_a_panic_is_counted_not_spread() {
        let rt = ClientRuntime::new(2).unwrap();
        let mut counts = [0u64; 8];
        let label = String::from("borrowed");
        let futures: Vec<TaskFuture<'_>> = counts
            .iter_mut()
            .enumerate()
            .map(|(i, count)| {
                let label = &label;
                Box::pin(async move {
                    if i == 3 {
                        panic!("task {i} fails on purpose");
                    }
                    for _ in 0..1000 {
                        tokio::task::yield_now().await;
                        *count += label.len() as u64;
                    }
                }) as TaskFuture<'_>
            })
            .collect();
        assert_eq!(rt.run_all(futures), 1);
        assert_eq!(counts[3], 0);
        assert!(counts.iter().enumerate().all(|(i, c)| i == 3 || *c == 8000));
        assert!(rt.cpu_seconds() > 0.0);
    }
}
