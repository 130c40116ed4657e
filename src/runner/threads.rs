//! Clients on threads: one OS thread per client, each opening its engine
//! worker before a common start line and keeping it open until every
//! thread has reached the finish line (so the end of the window can still
//! read the connections' counters).

use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use super::client::{ClientDone, ClientLoop, Pause};
use super::gate::StartGate;
use super::{status, watch_for_stalls, Clock, Ended, RunSpec, Shared, Workload};
use crate::engine::ThreadSlot;
use crate::error::InputError;

/// A worker's arrival at the finish line: once, explicitly after its
/// operations, or when it is dropped (an error or a panic).
struct Arrival<'a> {
    gate: &'a StartGate,
    arrived: bool,
}

impl<'a> Arrival<'a> {
    fn new(gate: &'a StartGate) -> Self {
        Self {
            gate,
            arrived: false,
        }
    }

    fn arrive_now(mut self) {
        self.arrived = true;
        self.gate.arrive_and_wait();
    }
}

impl Drop for Arrival<'_> {
    fn drop(&mut self) {
        if !self.arrived {
            self.gate.arrive_and_wait();
        }
    }
}

/// Memory mappings one client thread costs: its stack and guard page,
/// and the signal stack and guard page Rust's runtime gives each thread.
const MAPS_PER_THREAD: u64 = 4;
/// Mappings left for everything else (the engine, the allocator, files).
const MAPS_SPARE: u64 = 4096;

/// About how many more threads this process can start, by the kernel's
/// limit on a process's memory mappings (`vm.max_map_count`), and that
/// limit; None where it cannot be read. Past it a thread still starts but
/// cannot map its signal stack, and Rust's runtime aborts the whole
/// process (exit 134, a backtrace, no result): other limits (threads,
/// memory) fail the start itself, which is one line.
fn thread_room() -> Option<(u64, u64)> {
    let max: u64 = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()?
        .trim()
        .parse()
        .ok()?;
    // This process's own map (a line per mapping), not a user's input.
    let used =
        std::fs::read_to_string("/proc/self/maps").map_or(0, |maps| maps.lines().count() as u64);
    let room = max.saturating_sub(used).saturating_sub(MAPS_SPARE) / MAPS_PER_THREAD;
    Some((room, max))
}

/// Refuses more client threads than this process can start, before any
/// per-client state is made (a slot per client: 99,999,999 took 12.5 GB).
pub(super) fn check_room(threads: usize) -> Result<(), InputError> {
    match thread_room().filter(|(room, _)| threads as u64 > *room) {
        Some((room, max)) => Err(InputError::Invalid(format!(
            "{threads} client threads are more than this system lets one process start (about {room}, as vm.max_map_count is {max}); use fewer threads"
        ))),
        None => Ok(()),
    }
}

pub(super) fn run(
    workload: &dyn Workload,
    spec: &RunSpec,
    shared: &Shared,
    threads: usize,
) -> anyhow::Result<Ended> {
    let gate = StartGate::new(threads);
    let finish = StartGate::new(threads);
    std::thread::scope(|scope| {
        let mut workers = Vec::with_capacity(threads);
        for index in 0..threads {
            let (gate, finish) = (&gate, &finish);
            let spawned = std::thread::Builder::new()
                .name(format!("kvperf-{index}"))
                .spawn_scoped(scope, move || {
                    client_thread(workload, spec, shared, (gate, finish), index, threads)
                });
            match spawned {
                Ok(handle) => workers.push(handle),
                Err(err) => {
                    gate.abort();
                    for worker in workers {
                        let _ = worker.join();
                    }
                    return Err(InputError::Invalid(format!(
                        "cannot start thread {} of {threads} ({err}); use fewer threads",
                        index + 1
                    ))
                    .into());
                }
            }
        }

        gate.wait_until_all_arrived();
        if gate.aborted() {
            // A thread could not set up: its error, before anything is measured.
            let errors = workers.into_iter().filter_map(|w| w.join().ok()?.err());
            return Err(errors
                .into_iter()
                .next()
                .unwrap_or_else(|| anyhow::anyhow!("a client thread could not start")));
        }
        // The window opens: an interrupt from here is the window's to answer.
        if let Some(before) = &spec.before_window {
            before.opens();
        }
        let clock = Clock::start(shared, spec);
        clock.watch_for_window(scope);
        gate.open();
        let status = status::spawn(scope, &spec.status, shared, spec, clock.measure_start);
        match spec.stall_timeout.zip(spec.stall_keeper.as_ref()) {
            Some(stall) => watch_for_stalls(
                |wait| finish.all_arrived_within(wait),
                shared,
                stall,
                clock.window_start(),
                "threads",
            ),
            None => finish.wait_until_all_arrived(),
        }
        let costs = clock.close();
        finish.open();
        let clients = workers
            .into_iter()
            .map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a worker thread panicked")))
            })
            .collect();
        shared.all_done.store(true, Relaxed);
        Ok(Ended {
            clock,
            clients,
            costs,
            // The status thread holds the window's histograms: without them
            // there is nothing to report, so its panic fails the run.
            recorded: status.join().map_err(|_| {
                anyhow::anyhow!("the status thread panicked; the window's figures are lost")
            })?,
            runtime_cpu_s: None,
        })
    })
}

/// Client thread `index` of `threads`: sets up its state, waits at `gate`
/// with the others, runs its loop and arrives at `finish`; `None` when
/// another thread's setup called the run off.
fn client_thread(
    workload: &dyn Workload,
    spec: &RunSpec,
    shared: &Shared,
    (gate, finish): (&StartGate, &StartGate),
    index: usize,
    threads: usize,
) -> anyhow::Result<Option<ClientDone>> {
    // Open per-thread state before the clock starts; a
    // failure (or a panic) still passes the gate so nobody
    // waits for it.
    let setup = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        workload.thread(ThreadSlot {
            index,
            count: threads,
        })
    }))
    .unwrap_or_else(|_| Err(anyhow::anyhow!("the engine panicked")));
    if setup.is_err() {
        // Nobody starts: a run a client short would measure
        // another study, and the others would run a whole
        // window before the failure was reported.
        gate.abort();
    }
    if !gate.arrive_and_wait() {
        // This thread's setup failed, or another's did.
        return match setup {
            Err(err) => Err(err.context(format!("thread {index} setup"))),
            Ok(_) => Ok(None),
        };
    }
    // Arrives at the finish line however this thread ends.
    let arrival = Arrival::new(finish);
    let background = workload.is_background(index);
    let Ok(mut work) = setup else {
        unreachable!("a failed setup calls the run off before the gate opens")
    };
    let quota = workload.thread_quota(spec.operations, threads, index);
    let mut client = ClientLoop::new(shared, spec, index, quota, background, true);
    'ops: while client.going() {
        let (pacer, phase_start, k) = client.schedule();
        let intended = match pacer.due(phase_start, k) {
            Some(due) => loop {
                match client.pause(due) {
                    Pause::Sleep(until) => {
                        std::thread::sleep(until.saturating_duration_since(Instant::now()))
                    }
                    Pause::Due => break due,
                    Pause::Recheck => continue 'ops,
                }
            },
            None => phase_start,
        };
        let step = work.step(&mut client.meter, intended);
        client.record(step);
    }
    let done = client.finish();
    work.finished();
    arrival.arrive_now();
    drop(work);
    Ok(Some(done))
}
