//! The seam between workloads and engines: one trait, [`Operations`],
//! whose calls return a [`Call`]. A blocking engine makes its call before
//! returning and hands back the result (no allocation unless it failed); an
//! engine with an async driver hands back its future ([`Call::waiting`]),
//! which a client task awaits. A workload writes each operation once, as
//! async code: a client task awaits it, a client thread runs it with
//! [`wait`], which finishes a done call in one poll.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;

use super::{Failure, OpError, Record, ScanResults, SetupFuture};

/// The outcome of one operation: made already, or still to await. Awaited
/// (it is [`IntoFuture`]) or finished on a thread with [`Call::now`].
///
/// Two words, returned in registers: a blocking engine's result is the
/// driver's hottest path, and a three-word `Call` came back through memory,
/// whose read-back stalled every operation (bench/RESULTS.md, the driver
/// against its floor). So the rare cases, a failure's words and an async
/// driver's future, sit behind one pointer, and "not found" is its null.
pub struct Call<'a, T = ()>(Result<T, NotOk<'a, T>>);

/// A [`Call`] that did not succeed at once: one pointer wide.
enum NotOk<'a, T> {
    NotFound,
    Rare(Box<Rare<'a, T>>),
}

enum Rare<'a, T> {
    Failed(Failure),
    /// An async driver's operation: boxed because a trait object's method
    /// cannot return `impl Future`.
    Waiting(Operation<'a, T>),
}

type Operation<'a, T> = Pin<Box<dyn Future<Output = Result<T, OpError>> + Send + 'a>>;

impl<T> From<Result<T, OpError>> for Call<'_, T> {
    #[inline]
    fn from(result: Result<T, OpError>) -> Self {
        Call(result.map_err(|err| match err {
            OpError::NotFound => NotOk::NotFound,
            OpError::Failed(words) => NotOk::Rare(Box::new(Rare::Failed(words))),
        }))
    }
}

impl<'a, T> Call<'a, T> {
    /// An operation still to await (an async driver's).
    pub fn waiting(op: impl Future<Output = Result<T, OpError>> + Send + 'a) -> Self {
        Call(Err(NotOk::Rare(Box::new(Rare::Waiting(Box::pin(op))))))
    }

    /// Whether the call is made already (a blocking engine's).
    pub fn is_done(&self) -> bool {
        !matches!(&self.0, Err(NotOk::Rare(rare)) if matches!(**rare, Rare::Waiting(_)))
    }

    /// The result if the call is made, else the operation to await.
    #[inline]
    fn settled(self) -> Result<Result<T, OpError>, Operation<'a, T>> {
        match self.0 {
            Ok(value) => Ok(Ok(value)),
            Err(NotOk::NotFound) => Ok(Err(OpError::NotFound)),
            Err(NotOk::Rare(rare)) => match *rare {
                Rare::Failed(words) => Ok(Err(OpError::Failed(words))),
                Rare::Waiting(operation) => Err(operation),
            },
        }
    }

    /// The result, blocking this thread until it is there ([`wait`]).
    #[inline]
    pub fn now(self) -> Result<T, OpError> {
        match self.settled() {
            Ok(result) => result,
            Err(operation) => wait(operation),
        }
    }
}

impl<'a, T> IntoFuture for Call<'a, T> {
    type Output = Result<T, OpError>;
    type IntoFuture = Awaited<'a, T>;

    #[inline]
    fn into_future(self) -> Awaited<'a, T> {
        match self.settled() {
            Ok(result) => Awaited::Done(Some(result)),
            Err(operation) => Awaited::Waiting(operation),
        }
    }
}

/// A [`Call`] being awaited.
pub enum Awaited<'a, T> {
    /// Made already; `None` once polled to its end.
    Done(Option<Result<T, OpError>>),
    Waiting(Operation<'a, T>),
}

// Neither variant is pinned in place: `Done` is moved out of, `Waiting`
// is pinned in its box.
impl<T> Unpin for Awaited<'_, T> {}

impl<T> Future for Awaited<'_, T> {
    type Output = Result<T, OpError>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Awaited::Done(result) => {
                Poll::Ready(result.take().expect("a Call polled after its end"))
            }
            Awaited::Waiting(operation) => operation.as_mut().poll(cx),
        }
    }
}

/// `op` as a [`Call`]: boxed to be awaited when `waits`, else run to its
/// end at once ([`run_now`]): every call under it must be done when its
/// future is made (a blocking connection). `waits` is meant to be a
/// constant of the connection type, so only one branch is compiled in.
#[inline]
pub fn call<'a, T>(
    waits: bool,
    op: impl Future<Output = Result<T, OpError>> + Send + 'a,
) -> Call<'a, T> {
    if waits {
        Call::waiting(op)
    } else {
        run_now(op).into()
    }
}

/// Runs to its end an operation written as async code whose calls never
/// wait: a blocking connection's calls are made, and done, when their
/// futures are created, so one poll completes it.
#[inline]
pub fn run_now<F: Future>(operation: F) -> F::Output {
    let mut operation = std::pin::pin!(operation);
    match operation
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => unreachable!("a blocking call returned a pending future"),
    }
}

/// Runs `f` to its end on this thread. The first poll costs nothing more
/// than a call (a done call is finished by it); a future that is not
/// ready parks the thread until its waker unparks it. The future must not
/// need a runtime's context (tokio I/O): a client thread's engine blocks
/// on its own runtime instead.
#[inline]
pub fn wait<F: IntoFuture>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f.into_future());
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => park_until_ready(f),
    }
}

#[cold]
fn park_until_ready<F: Future>(mut f: Pin<&mut F>) -> F::Output {
    let waker = Waker::from(Arc::new(Unparker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        // A wake between this poll and `park` leaves the token set, so
        // `park` returns at once; a spurious return polls again.
        if let Poll::Ready(output) = f.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park();
    }
}

/// Wakes a thread parked in [`wait`].
struct Unparker(Thread);

impl Wake for Unparker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Which client a [`super::Engine::client`] serves, and how it is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientSlot {
    /// This client's index among `count` (YCSB's thread id).
    pub index: usize,
    pub count: usize,
    pub runs: Runs,
    pub access: Access,
}

impl ClientSlot {
    /// Client `index` of `count`, on a thread of its own.
    pub const fn thread(index: usize, count: usize, access: Access) -> Self {
        ClientSlot {
            index,
            count,
            runs: Runs::Thread,
            access,
        }
    }
}

/// How a client is driven.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// On a thread of its own, through [`wait`]: its calls should be
    /// made already (an async driver blocks on the engine's own runtime).
    Thread,
    /// As a task on the runner's runtime ([`super::Capabilities::async_ops`]):
    /// an async driver returns [`Call::waiting`].
    Task,
}

/// Which half of [`Operations`] a client will use, so an engine prepares
/// only that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// YCSB's record operations.
    Records,
    /// Raw key-value operations for db_bench ([`super::Capabilities::kv`]).
    Raw,
}

/// A client made at once (a blocking engine's): the setup future is ready.
pub fn ready<'a>(
    client: anyhow::Result<Box<dyn Operations + 'a>>,
) -> SetupFuture<'a, Box<dyn Operations + 'a>> {
    Box::pin(std::future::ready(client))
}

/// A blocking engine's client of the kind `slot` asks for, made at once:
/// its record operations (`records`) or its raw key-value ones (`raw`).
/// What every embedded engine's [`super::Engine::client`] is.
pub fn ready_client<'a, E: ?Sized>(
    engine: &'a E,
    slot: ClientSlot,
    records: impl FnOnce(&'a E, ClientSlot) -> anyhow::Result<Box<dyn Operations + 'a>>,
    raw: impl FnOnce(&'a E, ClientSlot) -> anyhow::Result<Box<dyn Operations + 'a>>,
) -> SetupFuture<'a, Box<dyn Operations + 'a>> {
    ready(match slot.access {
        Access::Records => records(engine, slot),
        Access::Raw => raw(engine, slot),
    })
}

fn lacks<'a, T>(what: &str) -> Call<'a, T> {
    Err(OpError::failed(format!(
        "this client has no {what}: it was made for other operations"
    )))
    .into()
}

/// One client's operations: YCSB's record operations (`DB` interface) and
/// db_bench's raw key-value ones. A client serves one [`Access`]; the
/// other half keeps its default, an error naming what is missing, which
/// callers never see because they check [`super::Capabilities`] first.
/// A client has one operation in flight, so `&mut self` is held until its
/// [`Call`] is done. `fields: None` means all fields, as YCSB's `null`
/// field set does.
pub trait Operations: Send {
    fn read<'a>(
        &'a mut self,
        _table: &'a str,
        _key: &'a [u8],
        _fields: Option<&'a [&'a str]>,
        _out: &'a mut Record,
    ) -> Call<'a> {
        lacks("record operations")
    }
    /// Up to `count` records from `start_key` on, in key order.
    fn scan<'a>(
        &'a mut self,
        _table: &'a str,
        _start_key: &'a [u8],
        _count: usize,
        _fields: Option<&'a [&'a str]>,
        _out: &'a mut ScanResults,
    ) -> Call<'a> {
        lacks("record operations")
    }
    /// Replaces or adds the given fields of an existing record.
    fn update<'a>(&'a mut self, _table: &'a str, _key: &'a [u8], _values: &'a Record) -> Call<'a> {
        lacks("record operations")
    }
    fn insert<'a>(&'a mut self, _table: &'a str, _key: &'a [u8], _values: &'a Record) -> Call<'a> {
        lacks("record operations")
    }
    fn delete<'a>(&'a mut self, _table: &'a str, _key: &'a [u8]) -> Call<'a> {
        lacks("record operations")
    }

    /// Reads `key` and returns its value's length, without copying the
    /// value out (db_bench reads into a pinned slice); `NotFound` when absent.
    fn get<'a>(&'a mut self, _key: &'a [u8]) -> Call<'a, usize> {
        lacks("raw key-value access")
    }
    fn put<'a>(&'a mut self, _key: &'a [u8], _value: &'a [u8]) -> Call<'a> {
        lacks("raw key-value access")
    }
    /// Removes `key` (raw; [`Operations::delete`] removes a record).
    fn remove<'a>(&'a mut self, _key: &'a [u8]) -> Call<'a> {
        lacks("raw key-value access")
    }
    /// Positions the client's one cursor at the first key ≥ `target` (the
    /// first key of all when `None`); returns whether it points at an
    /// entry. `fresh` drops the old cursor first, so it sees the latest writes.
    fn seek<'a>(&'a mut self, _target: Option<&'a [u8]>, _fresh: bool) -> Call<'a, bool> {
        lacks("ordered key iteration")
    }
    /// Moves the cursor on; returns whether it points at an entry.
    fn next(&mut self) -> Call<'_, bool> {
        lacks("ordered key iteration")
    }
    /// The entry under the cursor; `None` without one.
    fn current(&self) -> Option<(&[u8], &[u8])> {
        None
    }
}

/// [`Operations`]' record half, its five signatures written once: each
/// method hands `self`, its name, the table and its other arguments to
/// `$call!` (after the tokens given with it), which makes the [`Call`].
/// Used by [`blocking_records!`] and [`async_records!`].
#[allow(unused_macros)] // a build with only the null engine uses none
macro_rules! record_operations {
    (impl[$($generics:tt)*] $client:ty, $call:ident!($($given:tt)*)) => {
        impl<$($generics)*> $crate::engine::Operations for $client {
            fn read<'a>(
                &'a mut self,
                table: &'a str,
                key: &'a [u8],
                fields: Option<&'a [&'a str]>,
                out: &'a mut $crate::engine::Record,
            ) -> $crate::engine::Call<'a> {
                $crate::engine::$call!($($given)* self, read, table, (key, fields, out))
            }
            fn scan<'a>(
                &'a mut self,
                table: &'a str,
                start_key: &'a [u8],
                count: usize,
                fields: Option<&'a [&'a str]>,
                out: &'a mut $crate::engine::ScanResults,
            ) -> $crate::engine::Call<'a> {
                $crate::engine::$call!($($given)* self, scan, table, (start_key, count, fields, out))
            }
            fn update<'a>(
                &'a mut self,
                table: &'a str,
                key: &'a [u8],
                values: &'a $crate::engine::Record,
            ) -> $crate::engine::Call<'a> {
                $crate::engine::$call!($($given)* self, update, table, (key, values))
            }
            fn insert<'a>(
                &'a mut self,
                table: &'a str,
                key: &'a [u8],
                values: &'a $crate::engine::Record,
            ) -> $crate::engine::Call<'a> {
                $crate::engine::$call!($($given)* self, insert, table, (key, values))
            }
            fn delete<'a>(&'a mut self, table: &'a str, key: &'a [u8]) -> $crate::engine::Call<'a> {
                $crate::engine::$call!($($given)* self, delete, table, (key))
            }
        }
    };
}
pub(crate) use record_operations;

/// [`Operations`]' record half for a blocking client whose inherent
/// methods `read`, `scan`, `update`, `insert` and `delete` (same arguments)
/// make the calls and return their result: each becomes a done [`Call`].
#[allow(unused_macros)] // a build with only the null engine uses none
macro_rules! blocking_records {
    ($client:ty) => {
        $crate::engine::record_operations!(impl[] $client, blocking_record_call!());
    };
}
pub(crate) use blocking_records;

/// One record method of [`blocking_records!`]: the inherent method's
/// result, done.
#[allow(unused_macros)] // a build with only the null engine uses none
macro_rules! blocking_record_call {
    ($this:ident, $op:ident, $table:ident, ($($arg:ident),*)) => {
        Self::$op($this, $table, $($arg),*).into()
    };
}
pub(crate) use blocking_record_call;

/// [`Operations`]' raw half for a blocking client whose inherent methods
/// `get`, `put`, `delete`, `seek`, `next` and `current` make the calls;
/// `blocking_raw!(Client, unordered: WHY)` for a client whose store keeps
/// no key order (its capabilities say so): seek and next fail with `WHY`;
/// `blocking_raw!(Client, refilled)` for a client whose cursor is the
/// [`super::kv::KvBatch`] in its field `cursor`, read by its inherent
/// `fill(`[`super::kv::Start`]`)` (SQLite, PostgreSQL): every seek queries
/// afresh, as no statement stays open between calls, so `fresh` changes
/// nothing.
#[allow(unused_macros)] // a build with only the null engine uses none
macro_rules! blocking_raw {
    ($client:ty, refilled) => {
        impl $crate::engine::Operations for $client {
            $crate::engine::operations::blocking_raw_point!();
            fn seek<'a>(
                &'a mut self,
                target: Option<&'a [u8]>,
                _fresh: bool,
            ) -> $crate::engine::Call<'a, bool> {
                use $crate::engine::kv::Start;
                self.cursor.reset();
                self.fill(target.map_or(Start::First, Start::AtOrAfter))
                    .into()
            }
            fn next(&mut self) -> $crate::engine::Call<'_, bool> {
                $crate::engine::kv::next_entry(
                    self,
                    |w| &mut w.cursor,
                    |w, after| w.fill($crate::engine::kv::Start::After(after)),
                )
                .into()
            }
            fn current(&self) -> Option<(&[u8], &[u8])> {
                self.cursor.current()
            }
        }
    };
    ($client:ty, unordered: $why:expr) => {
        impl $crate::engine::Operations for $client {
            $crate::engine::operations::blocking_raw_point!();
            fn seek<'a>(
                &'a mut self,
                _target: Option<&'a [u8]>,
                _fresh: bool,
            ) -> $crate::engine::Call<'a, bool> {
                Err($crate::engine::OpError::Failed($why.into())).into()
            }
            fn next(&mut self) -> $crate::engine::Call<'_, bool> {
                Err($crate::engine::OpError::Failed($why.into())).into()
            }
        }
    };
    ($client:ty) => {
        impl $crate::engine::Operations for $client {
            $crate::engine::operations::blocking_raw_point!();
            fn seek<'a>(
                &'a mut self,
                target: Option<&'a [u8]>,
                fresh: bool,
            ) -> $crate::engine::Call<'a, bool> {
                Self::seek(self, target, fresh).into()
            }
            fn next(&mut self) -> $crate::engine::Call<'_, bool> {
                Self::next(self).into()
            }
            fn current(&self) -> Option<(&[u8], &[u8])> {
                Self::current(self)
            }
        }
    };
}
pub(crate) use blocking_raw;

/// The point half of [`blocking_raw!`]: get, put and remove.
#[allow(unused_macros)] // a build with only the null engine uses none
macro_rules! blocking_raw_point {
    () => {
        fn get<'a>(&'a mut self, key: &'a [u8]) -> $crate::engine::Call<'a, usize> {
            Self::get(self, key).into()
        }
        fn put<'a>(&'a mut self, key: &'a [u8], value: &'a [u8]) -> $crate::engine::Call<'a> {
            Self::put(self, key, value).into()
        }
        fn remove<'a>(&'a mut self, key: &'a [u8]) -> $crate::engine::Call<'a> {
            Self::delete(self, key).into()
        }
    };
}
pub(crate) use blocking_raw_point;

/// What a YCSB scan asks of a server client's inherent async `scan`
/// ([`async_records!`]): up to `count` records from `start_key` on, with
/// `fields` (`None`: all of them).
#[derive(Debug, Clone, Copy)]
pub struct ScanRequest<'a> {
    pub start_key: &'a [u8],
    pub count: usize,
    pub fields: Option<&'a [&'a str]>,
}

/// [`Operations`]' record half for a server client whose inherent async
/// methods `read`, `scan`, `update`, `insert` and `delete` take no table
/// (one table per store; `scan` takes a [`ScanRequest`]): each call is
/// [`call`]`(waits, ...)`, with `waits` a constant of the client's
/// connection. Generics go in the brackets:
/// `async_records!(impl[T: Transport] Records<'_, T>, T::WAITS)`.
#[allow(unused_macros)] // a build with only the null engine uses none
macro_rules! async_records {
    (impl[$($generics:tt)*] $client:ty, $waits:expr) => {
        $crate::engine::record_operations!(impl[$($generics)*] $client, async_record_call!($waits;));
    };
}
pub(crate) use async_records;

/// One record method of [`async_records!`]: the inherent async method's
/// future as a [`Call`] that waits when `$waits` says so; the table is
/// the store's own.
#[allow(unused_macros)] // a build with only the null engine uses none
macro_rules! async_record_call {
    ($waits:expr; $this:ident, scan, $table:ident, ($start_key:ident, $count:ident, $fields:ident, $out:ident)) => {{
        let _ = $table;
        let asked = $crate::engine::ScanRequest {
            start_key: $start_key,
            count: $count,
            fields: $fields,
        };
        $crate::engine::call($waits, Self::scan($this, asked, $out))
    }};
    ($waits:expr; $this:ident, $op:ident, $table:ident, ($($arg:ident),*)) => {{
        let _ = $table;
        $crate::engine::call($waits, Self::$op($this, $($arg),*))
    }};
}
pub(crate) use async_record_call;

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;
    use std::time::Duration;

    #[test]
    fn a_done_call_completes_on_its_first_poll_without_a_box() {
        let c: Call<'_, usize> = Ok(7).into();
        assert!(c.is_done());
        let mut awaited = c.into_future();
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(Pin::new(&mut awaited).poll(&mut cx), Poll::Ready(Ok(7)));
        assert_eq!(call(false, async { Ok::<_, OpError>(3) }).now(), Ok(3));
        assert!(call(false, async { Ok::<_, OpError>(()) }).is_done());
        let failed: Call<'_> = Err(OpError::failed("disk full")).into();
        assert!(failed.is_done());
        assert_eq!(failed.now(), Err(OpError::failed("disk full")));
        assert_eq!(
            Call::<()>::from(Err(OpError::NotFound)).now(),
            Err(OpError::NotFound)
        );
    }

    /// A future that is pending until `open` is set, then ready; it wakes
    /// whatever waker it last saw when opened from elsewhere.
    #[derive(Clone, Default)]
    struct Gate(Arc<(AtomicBool, Mutex<Option<Waker>>)>);

    impl Gate {
        fn open(&self) {
            self.0 .0.store(true, Ordering::SeqCst);
            if let Some(w) = self.0 .1.lock().unwrap().take() {
                w.wake();
            }
        }
    }

    impl Future for Gate {
        type Output = Result<u32, OpError>;
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            *self.0 .1.lock().unwrap() = Some(cx.waker().clone());
            if self.0 .0.load(Ordering::SeqCst) {
                Poll::Ready(Ok(42))
            } else {
                Poll::Pending
            }
        }
    }

    #[test]
    fn a_waiting_call_is_awaited_on_a_runtime() {
        let gate = Gate::default();
        let c = call(true, gate.clone());
        assert!(!c.is_done());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let opener = gate.clone();
        let got = rt.block_on(async move {
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                opener.open();
            });
            c.await
        });
        assert_eq!(got, Ok(42));
    }

    #[test]
    fn wait_on_a_thread_finishes_a_future_woken_from_another_thread() {
        let gate = Gate::default();
        let opener = gate.clone();
        let other = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            opener.open();
        });
        assert_eq!(call(true, gate).now(), Ok(42));
        other.join().unwrap();
    }

    struct RecordsOnly;
    impl Operations for RecordsOnly {
        fn read<'a>(
            &'a mut self,
            _: &'a str,
            _: &'a [u8],
            _: Option<&'a [&'a str]>,
            _: &'a mut Record,
        ) -> Call<'a> {
            Ok(()).into()
        }
    }

    #[test]
    fn a_raw_op_on_a_records_client_names_what_is_missing() {
        let mut client = RecordsOnly;
        let mut out = Record::new();
        assert_eq!(client.read("t", b"k", None, &mut out).now(), Ok(()));
        let err = client.get(b"k").now().unwrap_err();
        assert!(
            matches!(&err, OpError::Failed(m) if m.contains("no raw key-value access")),
            "{err:?}"
        );
        assert!(client.seek(None, true).now().is_err());
        assert!(client.current().is_none());
    }
}
