//! The runner's runtime for clients that are tasks: a set number of tokio
//! worker threads, whose CPU time is the client's. The engine gets a handle
//! at open and runs its driver on it, so the clients and the driver's I/O
//! share these threads and no second runtime runs.
//!
//! Two ways to share them ([`TaskScheduling`]): one multi-thread runtime
//! whose workers steal tasks from each other, or one single-thread runtime
//! per worker with each client pinned to one, its connection's I/O polled
//! by the thread that runs it (pgbench's `-j` threads, each polling its own
//! connections). Pinned wakes no other thread when a reply arrives.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use anyhow::Context;

use super::cpu::ThreadClocks;
use crate::engine::Capabilities;

/// A client task's future; it may borrow from the caller of
/// [`ClientRuntime::run_all`].
pub type TaskFuture<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// How client tasks share the runtime's worker threads (`taskscheduling`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskScheduling {
    /// One multi-thread runtime: a task runs on whichever worker is free.
    Stealing,
    /// A single-thread runtime per worker; client `i` runs on worker
    /// `i % W` with whatever it spawns, and its I/O is polled there.
    Pinned,
}

impl TaskScheduling {
    /// Pinned when each client task does its own socket I/O
    /// ([`Capabilities::tasks_own_sockets`]), else stealing: clients that
    /// hand requests to a driver's tasks wait on sockets any worker may poll.
    pub fn default_for(capabilities: &Capabilities) -> Self {
        if capabilities.tasks_own_sockets {
            TaskScheduling::Pinned
        } else {
            TaskScheduling::Stealing
        }
    }

    pub const ALL: [TaskScheduling; 2] = [TaskScheduling::Stealing, TaskScheduling::Pinned];

    /// The shape `name` names (`taskscheduling`).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            TaskScheduling::Stealing => "stealing",
            TaskScheduling::Pinned => "pinned",
        }
    }
}

pub struct ClientRuntime {
    workers: Workers,
    count: usize,
    clocks: Arc<ThreadClocks>,
}

enum Workers {
    Stealing(tokio::runtime::Runtime),
    Pinned(Vec<PinnedWorker>),
}

/// A thread driving a single-thread runtime until the runtime is dropped.
struct PinnedWorker {
    handle: tokio::runtime::Handle,
    stop: Arc<tokio::sync::Notify>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PinnedWorker {
    fn start(index: usize, clocks: &Arc<ThreadClocks>) -> anyhow::Result<Self> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the clients' runtime")?;
        let handle = rt.handle().clone();
        let stop = Arc::new(tokio::sync::Notify::new());
        let (clocks, until) = (clocks.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name(format!("kvperf-task-{index}"))
            .spawn(move || {
                clocks.register();
                // Runs every task spawned on `handle` until told to stop.
                rt.block_on(until.notified());
                drop(rt);
                clocks.unregister();
            })
            .context("cannot start a thread of the clients' runtime")?;
        Ok(Self {
            handle,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for PinnedWorker {
    fn drop(&mut self) {
        self.stop.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl std::fmt::Debug for ClientRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ClientRuntime({} workers, {})",
            self.count,
            self.scheduling().name()
        )
    }
}

impl ClientRuntime {
    pub fn new(count: usize, scheduling: TaskScheduling) -> anyhow::Result<Self> {
        let count = count.max(1);
        let clocks = Arc::new(ThreadClocks::default());
        let workers = match scheduling {
            TaskScheduling::Stealing => {
                let (started, stopping) = (clocks.clone(), clocks.clone());
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(count)
                    .thread_name("kvperf-task")
                    .enable_all()
                    .on_thread_start(move || started.register())
                    .on_thread_stop(move || stopping.unregister())
                    .build()
                    .context("cannot start the clients' runtime")?;
                Workers::Stealing(rt)
            }
            TaskScheduling::Pinned => Workers::Pinned(
                (0..count)
                    .map(|index| PinnedWorker::start(index, &clocks))
                    .collect::<anyhow::Result<_>>()?,
            ),
        };
        Ok(Self {
            workers,
            count,
            clocks,
        })
    }

    /// What the engine runs its driver on (pinned: the first worker's;
    /// what a client task spawns runs on that client's worker).
    pub fn handle(&self) -> &tokio::runtime::Handle {
        match &self.workers {
            Workers::Stealing(rt) => rt.handle(),
            Workers::Pinned(workers) => &workers[0].handle,
        }
    }

    pub fn workers(&self) -> usize {
        self.count
    }

    pub fn scheduling(&self) -> TaskScheduling {
        match self.workers {
            Workers::Stealing(_) => TaskScheduling::Stealing,
            Workers::Pinned(_) => TaskScheduling::Pinned,
        }
    }

    /// CPU seconds of the runtime's threads and of the pacing timer's, so
    /// far: the clients' and the driver's work.
    pub fn cpu_seconds(&self) -> f64 {
        self.clocks.seconds() + super::timer::cpu_seconds()
    }

    /// Runs every future as a task on the runtime's workers and returns
    /// once all have ended, with how many panicked. Unlike `spawn`, the
    /// futures may borrow from the caller (like `std::thread::scope`).
    /// Pinned, the i-th future runs on worker `i % W`, so a client's setup
    /// and its operations share a worker. Call it from outside the runtime
    /// (the runner's own thread).
    pub fn run_all<'a>(&self, futures: Vec<TaskFuture<'a>>) -> usize {
        // Past this point nothing may unwind before every task has ended.
        let guard = AbortOnUnwind;
        let handles: Vec<_> = futures
            .into_iter()
            .enumerate()
            .map(|(index, f)| {
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
                match &self.workers {
                    Workers::Stealing(rt) => rt.spawn(f),
                    Workers::Pinned(workers) => workers[index % workers.len()].handle.spawn(f),
                }
            })
            .collect();
        // Pinned, the workers' own threads drive the tasks; this thread
        // only waits for their ends.
        let panicked = self.handle().block_on(async {
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
        for scheduling in TaskScheduling::ALL {
            let rt = ClientRuntime::new(2, scheduling).unwrap();
            assert_eq!(rt.scheduling(), scheduling);
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
            assert_eq!(rt.run_all(futures), 1, "{scheduling:?}");
            assert_eq!(counts[3], 0);
            assert!(counts.iter().enumerate().all(|(i, c)| i == 3 || *c == 8000));
            assert!(rt.cpu_seconds() > 0.0);
        }
    }

    /// The thread each poll of a task ran on, and of a task it spawned.
    fn threads_of_each_task(rt: &ClientRuntime, tasks: usize) -> Vec<Vec<String>> {
        let name = || std::thread::current().name().unwrap_or("").to_string();
        let mut seen: Vec<Vec<String>> = vec![Vec::new(); tasks];
        let futures = seen
            .iter_mut()
            .map(|polls| {
                Box::pin(async move {
                    for _ in 0..50 {
                        polls.push(name());
                        tokio::task::yield_now().await;
                    }
                    polls.push(tokio::spawn(async move { name() }).await.unwrap());
                }) as TaskFuture<'_>
            })
            .collect();
        assert_eq!(rt.run_all(futures), 0);
        seen
    }

    #[test]
    fn a_pinned_task_and_what_it_spawns_stay_on_its_worker() {
        let rt = ClientRuntime::new(2, TaskScheduling::Pinned).unwrap();
        for (i, polls) in threads_of_each_task(&rt, 6).iter().enumerate() {
            let worker = format!("kvperf-task-{}", i % 2);
            assert!(polls.iter().all(|t| *t == worker), "task {i}: {polls:?}");
        }
    }

    #[test]
    fn stealing_tasks_run_on_the_runtimes_workers() {
        let rt = ClientRuntime::new(2, TaskScheduling::Stealing).unwrap();
        for polls in threads_of_each_task(&rt, 6) {
            assert!(polls.iter().all(|t| t == "kvperf-task"), "{polls:?}");
        }
    }
}
