//! Where an async driver runs: on the runner's runtime when the run's
//! clients are tasks, else on a runtime of the engine's own, which client
//! threads and the engine's lifecycle calls block on.

use super::options::OptionValues;
use crate::error::InputError;

/// The workers of the engine's own runtime (`server_option!(runtime_threads,
/// ..)`, 1 to 64), refused when given with clients as tasks, which run the
/// driver on the runner's runtime instead.
pub fn runtime_threads(v: &OptionValues, tasks: bool) -> Result<usize, InputError> {
    let threads = v.u64_at_most("runtime_threads", 64)?.max(1) as usize;
    if tasks && v.is_given("runtime_threads") {
        return Err(InputError::property(
            &v.key("runtime_threads"),
            "sizes the engine's own runtime, which clients=tasks does not start (the driver runs on the runner's runtime: set runtimethreads)",
        ));
    }
    Ok(threads)
}

pub enum DriverRuntime {
    /// The engine's own (clients on threads, and `kvperf bench`, block on it).
    Own(tokio::runtime::Runtime),
    /// The runner's (clients are tasks on it).
    Runner(tokio::runtime::Handle),
}

impl DriverRuntime {
    /// The runner's runtime when it lends one ([`super::OpenOptions::runtime`]),
    /// else a new one of `threads` workers named `thread_name`; `driver`
    /// names the engine in the error.
    pub fn new(
        runner: Option<&tokio::runtime::Handle>,
        threads: usize,
        thread_name: &str,
        driver: &str,
    ) -> anyhow::Result<Self> {
        Ok(match runner {
            Some(handle) => DriverRuntime::Runner(handle.clone()),
            None => DriverRuntime::Own(
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(threads)
                    .thread_name(thread_name)
                    .enable_all()
                    .build()
                    .map_err(|e| {
                        anyhow::anyhow!("{driver}: cannot start the driver's runtime: {e}")
                    })?,
            ),
        })
    }

    /// Runs `work` to its end on the calling thread, never a runtime thread
    /// (the engine's lifecycle calls and the blocking workers).
    pub fn block_on<F: std::future::Future>(&self, work: F) -> F::Output {
        match self {
            DriverRuntime::Own(rt) => rt.block_on(work),
            DriverRuntime::Runner(handle) => handle.block_on(work),
        }
    }
}

/// The record operations of a client thread on an async driver: `$worker`
/// holds the driver's runtime (`rt: &DriverRuntime`) and an async client
/// (`client`) whose `read`, `scan` (of a [`super::ScanRequest`]), `update`,
/// `insert` and `delete` are async; each runs to its end on the runtime, blocking the thread
/// (`clients=threads`), and becomes a done call (`blocking_records!`).
macro_rules! blocking_on_driver {
    ($worker:ty) => {
        impl $worker {
            fn read(
                &mut self,
                _table: &str,
                key: &[u8],
                fields: Option<&[&str]>,
                out: &mut $crate::engine::Record,
            ) -> $crate::engine::OpResult {
                self.rt.block_on(self.client.read(key, fields, out))
            }

            fn scan(
                &mut self,
                _table: &str,
                start_key: &[u8],
                count: usize,
                fields: Option<&[&str]>,
                out: &mut $crate::engine::ScanResults,
            ) -> $crate::engine::OpResult {
                let asked = $crate::engine::ScanRequest {
                    start_key,
                    count,
                    fields,
                };
                self.rt.block_on(self.client.scan(asked, out))
            }

            fn update(
                &mut self,
                _table: &str,
                key: &[u8],
                values: &$crate::engine::Record,
            ) -> $crate::engine::OpResult {
                self.rt.block_on(self.client.update(key, values))
            }

            fn insert(
                &mut self,
                _table: &str,
                key: &[u8],
                values: &$crate::engine::Record,
            ) -> $crate::engine::OpResult {
                self.rt.block_on(self.client.insert(key, values))
            }

            fn delete(&mut self, _table: &str, key: &[u8]) -> $crate::engine::OpResult {
                self.rt.block_on(self.client.delete(key))
            }
        }

        $crate::engine::blocking_records!($worker);
    };
}
pub(crate) use blocking_on_driver;
