//! Clients as tasks: each of the N clients is one task on the runner's
//! runtime (W worker threads), a closed loop with one operation in flight,
//! exactly as a client thread is. Waiting for an engine's answer parks the
//! task, not a thread, so a worker runs other clients (and the driver's
//! I/O) meanwhile.
//!
//! Every client is made before the clock starts; a client that cannot be
//! made fails the run before anything is measured. The clients' engine
//! workers (and connections) stay open until the last one has ended.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::OnceLock;

use super::client::{ClientDone, ClientLoop, Pause};
use super::runtime::TaskFuture;
use super::timer::sleep_until;
use super::{
    status, watch_for_stalls, ClientRuntime, Clock, Ended, RunSpec, Shared, Workload, WorkloadTask,
};
use crate::engine::ThreadSlot;

pub(super) fn run(
    workload: &dyn Workload,
    spec: &RunSpec,
    shared: &Shared,
    count: usize,
    rt: &ClientRuntime,
) -> anyhow::Result<Ended> {
    let mut clients = make_clients(workload, count, rt)?;
    // The window opens: an interrupt from here is the window's to answer.
    if let Some(before) = &spec.before_window {
        before.opens();
    }
    let clock = Clock::start(shared, spec);
    // The runtime's CPU when the measured window opens: now, or when the
    // first client leaves its warmup.
    let cpu_at_window = OnceLock::new();
    if spec.warmup.is_zero() {
        let _ = cpu_at_window.set(rt.cpu_seconds());
    }
    std::thread::scope(|scope| {
        clock.watch_for_window(scope);
        let status = status::spawn(scope, &spec.status, shared, spec, clock.measure_start);
        let mut done: Vec<Option<ClientDone>> = (0..count).map(|_| None).collect();
        let loops = clients
            .iter_mut()
            .zip(done.iter_mut())
            .enumerate()
            .map(|(index, (work, out))| {
                let quota = workload.thread_quota(spec.operations, count, index);
                let background = workload.is_background(index);
                let cpu_at_window = &cpu_at_window;
                Box::pin(async move {
                    let mut client = ClientLoop::new(shared, spec, index, quota, background, false);
                    'ops: while client.going() {
                        if client.in_window() {
                            cpu_at_window.get_or_init(|| rt.cpu_seconds());
                        }
                        let (pacer, phase_start, k) = client.schedule();
                        let intended = match pacer.due(phase_start, k) {
                            Some(due) => loop {
                                match client.pause(due) {
                                    Pause::Sleep(until) => sleep_until(until).await,
                                    Pause::Due => break due,
                                    Pause::Recheck => continue 'ops,
                                }
                            },
                            None => phase_start,
                        };
                        let step = work.step(&mut client.meter, intended).await;
                        client.record(step);
                    }
                    *out = Some(client.finish());
                }) as TaskFuture<'_>
            })
            .collect();
        // The watchdog sees the clients end when `ended` is dropped.
        let (ended, watch) = std::sync::mpsc::channel::<()>();
        if let Some(stall) = spec.stall_timeout.zip(spec.stall_keeper.as_ref()) {
            let window = clock.window_start();
            scope.spawn(move || {
                let ended_within = |wait| {
                    !matches!(
                        watch.recv_timeout(wait),
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                    )
                };
                watch_for_stalls(ended_within, shared, stall, window, "client tasks");
            });
        }
        rt.run_all(loops);
        drop(ended);
        let cpu_at_end = rt.cpu_seconds();
        let costs = clock.close();
        drop(clients);
        shared.all_done.store(true, Relaxed);
        let clients = done
            .into_iter()
            .map(|d| {
                d.map(Some)
                    .ok_or_else(|| anyhow::anyhow!("a client task panicked"))
            })
            .collect();
        Ok(Ended {
            clients,
            costs,
            // The status thread holds the window's histograms: without them
            // there is nothing to report, so its panic fails the run.
            recorded: status.join().map_err(|_| {
                anyhow::anyhow!("the status thread panicked; the window's figures are lost")
            })?,
            runtime_cpu_s: Some(cpu_at_end - cpu_at_window.get().copied().unwrap_or(cpu_at_end)),
            clock,
        })
    })
}

/// Every client, made concurrently on the runtime (an engine may open a
/// session for each, which takes a round trip or more).
fn make_clients<'w>(
    workload: &'w dyn Workload,
    count: usize,
    rt: &ClientRuntime,
) -> anyhow::Result<Vec<Box<dyn WorkloadTask + 'w>>> {
    type Made<'w> = Option<anyhow::Result<Box<dyn WorkloadTask + 'w>>>;
    let mut made: Vec<Made<'w>> = (0..count).map(|_| None).collect();
    let setups = made
        .iter_mut()
        .enumerate()
        .map(|(index, out)| {
            Box::pin(async move {
                *out = Some(workload.task(ThreadSlot { index, count }).await);
            }) as TaskFuture<'_>
        })
        .collect();
    rt.run_all(setups);
    made.into_iter()
        .enumerate()
        .map(|(index, made)| {
            let client = made.unwrap_or_else(|| Err(anyhow::anyhow!("the engine panicked")));
            client.map_err(|e| e.context(format!("client {index} setup")))
        })
        .collect()
}
