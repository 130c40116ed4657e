//! kvperf's own PostgreSQL session for its record clients: the extended
//! query protocol on a socket the client itself reads and writes, blocking
//! on a client thread ([`std::net::TcpStream`]) or awaiting on the runner's
//! runtime as a client task ([`TaskStream`]).
//!
//! Why not the `postgres` crates: the blocking `postgres` client is
//! tokio-postgres under a tokio runtime of its own, so each call goes
//! through a channel to the connection future, a codec and an epoll park
//! (about 6 us of client CPU and one more wake-up per read than libpq,
//! bench/RESULTS.md 6h); and a tokio-postgres client task hands every call
//! to its connection's task and back. Here a call is one write of Bind,
//! Execute and Sync, then reads up to ReadyForQuery by the client itself,
//! as libpq's (and pgbench's) calls are. The messages are built and parsed
//! by `postgres-protocol` (the crate tokio-postgres uses) and parameters
//! are encoded by their `ToSql`, so only the session's sequencing is
//! written here, once, as async code: over a blocking socket every await
//! is done when reached, so a call completes in one poll.
//!
//! What it does not do (the engine's own sessions, on the `postgres`
//! crate, do): TLS, COPY, notifications, cancel. Results come in binary
//! format; the engine reads text columns, whose binary form is their UTF-8
//! bytes, and BYTEA, whose binary form is the bytes.

use std::future::{ready, Future};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres::error::SqlState;
use postgres::types::{ToSql, Type};
use postgres_protocol::authentication::{md5_hash, sasl};
use postgres_protocol::message::backend::{DataRowBody, ErrorResponseBody, Message};
use postgres_protocol::message::frontend;
use postgres_protocol::IsNull;

/// Where and as whom to connect.
pub(super) struct WireConfig<'a> {
    pub host: &'a str,
    pub port: u16,
    pub user: &'a str,
    pub password: Option<&'a str>,
    pub database: &'a str,
    /// Bounds the TCP connect and each read and write of the handshake.
    pub limit: Duration,
}

/// A failed call, in words (the server's: `ERROR: ...`, or the client's).
pub(super) type Said = String;

/// Why a session could not be opened.
#[derive(Debug)]
pub(super) enum ConnectError {
    /// No TCP connection, or closed before the handshake ended.
    Unreachable(String),
    /// Connected, but the peer did not answer within the limit.
    Silent,
    /// The peer answered with something PostgreSQL never sends.
    NotPostgres,
    /// The server asked for a password and none is set.
    PasswordMissing,
    /// The server refused the session: its SQLSTATE and words.
    Refused { code: SqlState, said: Said },
    /// Anything else (an authentication kvperf does not speak, SCRAM).
    Failed(Said),
}

/// A socket a session reads and writes: a thread's, whose calls block and
/// are done when their futures are made, or a task's, which awaits.
pub(super) trait Transport: Sized + Send {
    /// Whether calls wait (async) or are done when made (blocking).
    const WAITS: bool;
    fn open(addr: SocketAddr, limit: Duration) -> impl Future<Output = io::Result<Self>> + Send;
    /// Bounds each read and write (the handshake), or not (calls).
    fn bound(&mut self, limit: Option<Duration>) -> io::Result<()>;
    fn read_some<'a>(
        &'a mut self,
        buf: &'a mut [u8],
    ) -> impl Future<Output = io::Result<usize>> + Send + 'a;
    fn write_whole<'a>(
        &'a mut self,
        buf: &'a [u8],
    ) -> impl Future<Output = io::Result<()>> + Send + 'a;
    /// Writes what the socket takes at once, without waiting (at drop).
    fn write_now(&mut self, buf: &[u8]);
    /// A pause before reconnecting: a thread sleeps, a task waits without
    /// holding its worker thread.
    fn pause(time: Duration) -> impl Future<Output = ()> + Send;
}

impl Transport for std::net::TcpStream {
    const WAITS: bool = false;
    fn open(addr: SocketAddr, limit: Duration) -> impl Future<Output = io::Result<Self>> + Send {
        let stream = std::net::TcpStream::connect_timeout(&addr, limit);
        ready(stream.and_then(|s| s.set_nodelay(true).map(|_| s)))
    }
    fn bound(&mut self, limit: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(limit)?;
        self.set_write_timeout(limit)
    }
    fn read_some<'a>(
        &'a mut self,
        buf: &'a mut [u8],
    ) -> impl Future<Output = io::Result<usize>> + Send + 'a {
        ready(Read::read(self, buf))
    }
    fn write_whole<'a>(
        &'a mut self,
        buf: &'a [u8],
    ) -> impl Future<Output = io::Result<()>> + Send + 'a {
        ready(Write::write_all(self, buf))
    }
    fn write_now(&mut self, buf: &[u8]) {
        let _ = Write::write_all(self, buf);
    }
    fn pause(time: Duration) -> impl Future<Output = ()> + Send {
        std::thread::sleep(time);
        ready(())
    }
}

/// A client task's socket, on the runner's runtime.
pub(super) struct TaskStream {
    stream: tokio::net::TcpStream,
    limit: Option<Duration>,
}

/// `io` within `limit`, if there is one.
async fn within<T>(
    limit: Option<Duration>,
    io: impl Future<Output = io::Result<T>>,
) -> io::Result<T> {
    match limit {
        None => io.await,
        Some(limit) => tokio::time::timeout(limit, io)
            .await
            .unwrap_or_else(|_| Err(io::ErrorKind::TimedOut.into())),
    }
}

impl Transport for TaskStream {
    const WAITS: bool = true;
    async fn open(addr: SocketAddr, limit: Duration) -> io::Result<Self> {
        let stream = within(Some(limit), tokio::net::TcpStream::connect(addr)).await?;
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            limit: None,
        })
    }
    fn bound(&mut self, limit: Option<Duration>) -> io::Result<()> {
        self.limit = limit;
        Ok(())
    }
    async fn read_some<'a>(&'a mut self, buf: &'a mut [u8]) -> io::Result<usize> {
        use tokio::io::AsyncReadExt;
        within(self.limit, self.stream.read(buf)).await
    }
    async fn write_whole<'a>(&'a mut self, buf: &'a [u8]) -> io::Result<()> {
        use tokio::io::AsyncWriteExt;
        within(self.limit, self.stream.write_all(buf)).await
    }
    fn write_now(&mut self, buf: &[u8]) {
        let _ = self.stream.try_write(buf);
    }
    async fn pause(time: Duration) {
        tokio::time::sleep(time).await
    }
}

/// A prepared statement: its server-side name and what Describe said.
#[derive(Clone)]
pub(super) struct WireStatement(Arc<Prepared>);

struct Prepared {
    name: String,
    params: Vec<Type>,
    columns: Arc<[WireColumn]>,
}

pub(super) struct WireColumn {
    pub name: String,
    pub type_oid: u32,
}

/// One row of a result, in the binary format, with its columns.
pub(super) struct WireRow {
    body: DataRowBody,
    columns: Arc<[WireColumn]>,
}

impl WireRow {
    /// Each column with its value (None for NULL), in order; stops at the
    /// first error of `f`.
    pub fn for_each<'r, E>(
        &'r self,
        mut f: impl FnMut(&'r WireColumn, Option<&'r [u8]>) -> Result<(), E>,
    ) -> Result<Result<(), E>, Said> {
        let buffer = self.body.buffer();
        let mut ranges = self.body.ranges();
        let mut columns = self.columns.iter();
        while let Some(range) = ranges.next().map_err(|e| protocol(&e))? {
            let Some(column) = columns.next() else {
                return Err("PostgreSQL sent more values in a row than it described".into());
            };
            if let Err(e) = f(column, range.map(|r| &buffer[r])) {
                return Ok(Err(e));
            }
        }
        Ok(Ok(()))
    }
}

/// A session: its socket, and what was received but not yet parsed.
pub(super) struct WireSession<T: Transport> {
    stream: T,
    /// Received bytes not yet parsed into messages.
    received: BytesMut,
    /// The next request, sent whole by one write.
    request: BytesMut,
    /// Set by an I/O or protocol error: the session cannot be used again.
    closed: bool,
    statements: u32,
    /// Where a read puts bytes (zeroed once, not per read).
    chunk: Box<[u8; 16 * 1024]>,
}

/// A request that could not be built (a string with a NUL, a message
/// over PostgreSQL's size limit): nothing of it is sent.
fn unbuilt(e: &io::Error) -> Said {
    format!("kvperf could not build the request: {e}")
}

fn protocol(e: &io::Error) -> Said {
    format!("PostgreSQL sent what the protocol does not allow: {e}")
}

/// The server's words (`ERROR: message`, as the `postgres` crate says
/// them) and its SQLSTATE.
fn server_said(body: &ErrorResponseBody) -> (SqlState, Said) {
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    let (mut severity, mut message, mut code) = ("ERROR".to_owned(), String::new(), String::new());
    let mut fields = body.fields();
    while let Ok(Some(field)) = fields.next() {
        match field.type_() {
            b'V' => severity = text(field.value_bytes()),
            b'M' => message = text(field.value_bytes()),
            b'C' => code = text(field.value_bytes()),
            _ => {}
        }
    }
    (SqlState::from_code(&code), format!("{severity}: {message}"))
}

/// Why the handshake failed, from the error of a read or write in it.
fn handshake_failed(e: io::Error) -> ConnectError {
    match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ConnectError::Silent,
        io::ErrorKind::InvalidData => ConnectError::NotPostgres,
        io::ErrorKind::UnexpectedEof => {
            ConnectError::Unreachable("the server closed the connection".into())
        }
        _ => ConnectError::Unreachable(e.to_string()),
    }
}

impl<T: Transport> WireSession<T> {
    pub async fn connect(config: &WireConfig<'_>) -> Result<Self, ConnectError> {
        let addrs = (config.host, config.port)
            .to_socket_addrs()
            .map_err(|e| ConnectError::Unreachable(e.to_string()))?;
        let mut stream = Err(io::Error::other("no address"));
        for addr in addrs {
            stream = T::open(addr, config.limit).await;
            if stream.is_ok() {
                break;
            }
        }
        let stream = stream.map_err(|e| match e.kind() {
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ConnectError::Silent,
            _ => ConnectError::Unreachable(e.to_string()),
        })?;
        let mut session = Self {
            stream,
            received: BytesMut::with_capacity(16 * 1024),
            request: BytesMut::with_capacity(4 * 1024),
            closed: false,
            statements: 0,
            chunk: Box::new([0; 16 * 1024]),
        };
        // The handshake is bounded; calls then wait as long as the server takes.
        session
            .stream
            .bound(Some(config.limit))
            .map_err(handshake_failed)?;
        let started = session.start_up(config).await;
        if started.is_err() {
            session.closed = true;
        }
        started?;
        session.stream.bound(None).map_err(handshake_failed)?;
        Ok(session)
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }

    async fn start_up(&mut self, config: &WireConfig<'_>) -> Result<(), ConnectError> {
        let params = [
            ("user", config.user),
            ("database", config.database),
            ("application_name", "kvperf"),
            ("client_encoding", "UTF8"),
        ];
        let built = |r: io::Result<()>| r.map_err(|e| ConnectError::Failed(unbuilt(&e)));
        built(frontend::startup_message(params, &mut self.request))?;
        self.flush().await.map_err(handshake_failed)?;
        let password = || config.password.ok_or(ConnectError::PasswordMissing);
        let mut scram = None;
        loop {
            let message = self.message().await.map_err(|e| {
                // PostgreSQL never closes in the middle of a message; an
                // HTTP server's reply reads as the start of a huge one.
                let partial = e.kind() == io::ErrorKind::UnexpectedEof && !self.received.is_empty();
                if partial {
                    ConnectError::NotPostgres
                } else {
                    handshake_failed(e)
                }
            })?;
            match message {
                Message::AuthenticationOk
                | Message::ParameterStatus(_)
                | Message::BackendKeyData(_)
                | Message::NoticeResponse(_) => continue,
                Message::ReadyForQuery(_) => return Ok(()),
                Message::ErrorResponse(body) => {
                    let (code, said) = server_said(&body);
                    return Err(ConnectError::Refused { code, said });
                }
                Message::AuthenticationCleartextPassword => {
                    built(frontend::password_message(password()?.as_bytes(), &mut self.request))?;
                }
                Message::AuthenticationMd5Password(body) => {
                    let hash = md5_hash(config.user.as_bytes(), password()?.as_bytes(), body.salt());
                    built(frontend::password_message(hash.as_bytes(), &mut self.request))?;
                }
                Message::AuthenticationSasl(body) => {
                    let mut offered = false;
                    let mut mechanisms = body.mechanisms();
                    while let Ok(Some(m)) = mechanisms.next() {
                        offered |= m == sasl::SCRAM_SHA_256;
                    }
                    if !offered {
                        return Err(ConnectError::Failed(
                            "the server offers no SASL mechanism kvperf speaks (SCRAM-SHA-256)".into(),
                        ));
                    }
                    let s = sasl::ScramSha256::new(password()?.as_bytes(), sasl::ChannelBinding::unsupported());
                    built(frontend::sasl_initial_response(sasl::SCRAM_SHA_256, s.message(), &mut self.request))?;
                    scram = Some(s);
                }
                Message::AuthenticationSaslContinue(body) => {
                    let s = scram.as_mut().ok_or(ConnectError::NotPostgres)?;
                    s.update(body.data())
                        .map_err(|e| ConnectError::Failed(format!("SCRAM: {e}")))?;
                    built(frontend::sasl_response(s.message(), &mut self.request))?;
                }
                Message::AuthenticationSaslFinal(body) => {
                    let s = scram.as_mut().ok_or(ConnectError::NotPostgres)?;
                    s.finish(body.data())
                        .map_err(|e| ConnectError::Failed(format!("SCRAM: {e}")))?;
                    continue;
                }
                _ => {
                    return Err(ConnectError::Failed(
                        "the server asked for an authentication kvperf does not speak (it speaks password, md5 and SCRAM-SHA-256)".into(),
                    ))
                }
            }
            self.flush().await.map_err(handshake_failed)?;
        }
    }

    /// Runs `sql` (no parameters, no rows wanted) in one round trip.
    pub async fn simple(&mut self, sql: &str) -> Result<(), Said> {
        let built = frontend::query(sql, &mut self.request);
        self.built(built)?;
        self.send().await?;
        self.until_ready(|_| Ok(())).await
    }

    /// Prepares `sql` under a name of this session's.
    pub async fn prepare(&mut self, sql: &str) -> Result<WireStatement, Said> {
        self.statements += 1;
        let name = format!("k{}", self.statements);
        let built = frontend::parse(&name, sql, [], &mut self.request)
            .and_then(|()| frontend::describe(b'S', &name, &mut self.request));
        self.built(built)?;
        frontend::sync(&mut self.request);
        self.send().await?;
        let mut params = Vec::new();
        let mut columns = Vec::new();
        self.until_ready(|message| {
            match message {
                Message::ParameterDescription(body) => {
                    let mut oids = body.parameters();
                    while let Some(oid) = oids.next().map_err(|e| protocol(&e))? {
                        let ty = Type::from_oid(oid).ok_or_else(|| {
                            format!("a parameter of type OID {oid}, which kvperf does not encode")
                        })?;
                        params.push(ty);
                    }
                }
                Message::RowDescription(body) => {
                    let mut fields = body.fields();
                    while let Some(f) = fields.next().map_err(|e| protocol(&e))? {
                        columns.push(WireColumn {
                            name: f.name().to_owned(),
                            type_oid: f.type_oid(),
                        });
                    }
                }
                _ => {}
            }
            Ok(())
        })
        .await?;
        Ok(WireStatement(Arc::new(Prepared {
            name,
            params,
            columns: columns.into(),
        })))
    }

    /// Runs `stmt` with `params`, handing each row to `row`; the rows the
    /// command changed or returned (its tag: `UPDATE 1`).
    pub async fn run(
        &mut self,
        stmt: &WireStatement,
        params: &[&(dyn ToSql + Sync)],
        mut row: impl FnMut(WireRow) + Send,
    ) -> Result<u64, Said> {
        let prepared = &stmt.0;
        self.bind(prepared, params)?;
        let built = frontend::execute("", 0, &mut self.request);
        self.built(built)?;
        frontend::sync(&mut self.request);
        self.send().await?;
        let mut rows = 0;
        self.until_ready(|message| {
            match message {
                Message::DataRow(body) => row(WireRow {
                    body,
                    columns: prepared.columns.clone(),
                }),
                Message::CommandComplete(body) => {
                    let tag = body.tag().map_err(|e| protocol(&e))?;
                    rows = tag
                        .rsplit(' ')
                        .next()
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(0);
                }
                _ => {}
            }
            Ok(())
        })
        .await?;
        Ok(rows)
    }

    /// The first row `stmt` returns, if any.
    pub async fn query_opt(
        &mut self,
        stmt: &WireStatement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<WireRow>, Said> {
        let mut first = None;
        self.run(stmt, params, |row| {
            first.get_or_insert(row);
        })
        .await?;
        Ok(first)
    }

    /// Every row `stmt` returns.
    pub async fn query(
        &mut self,
        stmt: &WireStatement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<WireRow>, Said> {
        let mut rows = Vec::new();
        self.run(stmt, params, |row| rows.push(row)).await?;
        Ok(rows)
    }

    /// The rows `stmt` changed.
    pub async fn execute(
        &mut self,
        stmt: &WireStatement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, Said> {
        self.run(stmt, params, |_| {}).await
    }

    /// Bind of `params` (binary, by the types Describe gave) to the
    /// unnamed portal, all results in binary.
    fn bind(&mut self, prepared: &Prepared, params: &[&(dyn ToSql + Sync)]) -> Result<(), Said> {
        if params.len() != prepared.params.len() {
            return Err(format!(
                "internal: {} parameters for a statement of {}",
                params.len(),
                prepared.params.len()
            ));
        }
        let mut types = prepared.params.iter();
        let bound = frontend::bind(
            "",
            &prepared.name,
            [1],
            params.iter(),
            |param, buf| {
                let ty = types.next().expect("counted above");
                match param.to_sql_checked(ty, buf)? {
                    postgres::types::IsNull::Yes => Ok(IsNull::Yes),
                    postgres::types::IsNull::No => Ok(IsNull::No),
                }
            },
            [1],
            &mut self.request,
        );
        bound.map_err(|e| {
            self.request.clear();
            match e {
                frontend::BindError::Conversion(e) => format!("error serializing a parameter: {e}"),
                frontend::BindError::Serialization(e) => unbuilt(&e),
            }
        })
    }

    /// Hands each message to `each` up to ReadyForQuery; the first error
    /// the server sent (after which it still ends with ReadyForQuery), or
    /// the session's.
    async fn until_ready(
        &mut self,
        mut each: impl FnMut(Message) -> Result<(), Said> + Send,
    ) -> Result<(), Said> {
        let mut failed: Option<Said> = None;
        loop {
            let message = match self.message().await {
                Ok(m) => m,
                // A server that ended the session said why first.
                Err(e) => {
                    let lost = self.lost(e);
                    return Err(failed.unwrap_or(lost));
                }
            };
            match message {
                Message::ReadyForQuery(_) => return failed.map_or(Ok(()), Err),
                Message::ErrorResponse(body) => {
                    failed.get_or_insert_with(|| server_said(&body).1);
                }
                m if failed.is_none() => {
                    if let Err(e) = each(m) {
                        failed = Some(e);
                    }
                }
                _ => {}
            }
        }
    }

    /// `built`'s error, with the request half built dropped.
    fn built(&mut self, built: io::Result<()>) -> Result<(), Said> {
        built.map_err(|e| {
            self.request.clear();
            unbuilt(&e)
        })
    }

    /// Sends the request built, on a session still open.
    async fn send(&mut self) -> Result<(), Said> {
        if self.closed {
            self.request.clear();
            return Err("connection closed".into());
        }
        match self.flush().await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.lost(e)),
        }
    }

    async fn flush(&mut self) -> io::Result<()> {
        let sent = self.stream.write_whole(&self.request).await;
        self.request.clear();
        sent
    }

    /// The next whole message, reading as much as has arrived; a message
    /// the protocol does not allow is `InvalidData`, the peer gone
    /// `UnexpectedEof`.
    async fn message(&mut self) -> io::Result<Message> {
        loop {
            match Message::parse(&mut self.received) {
                Ok(Some(message)) => return Ok(message),
                Ok(None) => {}
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            }
            loop {
                match self.stream.read_some(&mut self.chunk[..]).await {
                    Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                    Ok(n) => {
                        self.received.extend_from_slice(&self.chunk[..n]);
                        break;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }

    /// The session's end, in words.
    fn lost(&mut self, e: io::Error) -> Said {
        self.closed = true;
        match e.kind() {
            io::ErrorKind::UnexpectedEof => "connection closed".into(),
            io::ErrorKind::InvalidData => protocol(&e),
            _ => format!("error communicating with the server: {e}"),
        }
    }
}

impl<T: Transport> Drop for WireSession<T> {
    /// Terminate, so the server ends the backend at once and logs no
    /// "unexpected EOF".
    fn drop(&mut self) {
        if !self.closed {
            self.request.clear();
            frontend::terminate(&mut self.request);
            self.stream.write_now(&self.request);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::run_now;
    use crate::testing::fake_listener;
    use std::net::TcpStream;

    /// A server that lets anyone in (AuthenticationOk, ReadyForQuery),
    /// then answers one simple query (CommandComplete, ReadyForQuery) and
    /// hangs up on any other first message.
    fn letting_in(mut s: TcpStream) {
        let mut talk = || -> io::Result<()> {
            let mut len = [0; 4];
            s.read_exact(&mut len)?;
            let mut startup = vec![0; u32::from_be_bytes(len) as usize - 4];
            s.read_exact(&mut startup)?;
            s.write_all(&[b'R', 0, 0, 0, 8, 0, 0, 0, 0, b'Z', 0, 0, 0, 5, b'I'])?;
            let mut head = [0; 5];
            s.read_exact(&mut head)?;
            if head[0] != b'Q' {
                return Ok(()); // anything but a lone Query: hang up
            }
            let mut body = vec![0; u32::from_be_bytes(head[1..].try_into().unwrap()) as usize - 4];
            s.read_exact(&mut body)?;
            let tag = b"SELECT 1\0";
            s.write_all(&[b'C', 0, 0, 0, 4 + tag.len() as u8])?;
            s.write_all(tag)?;
            s.write_all(&[b'Z', 0, 0, 0, 5, b'I'])
        };
        let _ = talk();
    }

    /// A statement that cannot be put in a message (a NUL in its text) is
    /// refused before anything is sent, and the session stays usable: the
    /// next request goes out alone, not after half of the refused one.
    #[test]
    fn a_request_that_cannot_be_built_sends_nothing_and_leaves_the_session_usable() {
        let _alone = fake_listener::sockets_alone();
        let (port, _) = fake_listener::serving(letting_in);
        let config = WireConfig {
            host: "127.0.0.1",
            port,
            user: "u",
            password: None,
            database: "d",
            limit: Duration::from_secs(5),
        };
        let mut session = run_now(WireSession::<TcpStream>::connect(&config)).expect("let in");
        let refused = run_now(session.prepare("SELECT 1 \0"))
            .err()
            .expect("a NUL in the SQL");
        assert!(
            refused.starts_with("kvperf could not build the request"),
            "{refused}"
        );
        assert!(!session.is_closed());
        run_now(session.simple("SELECT 1")).expect("the next request is answered");
    }
}
