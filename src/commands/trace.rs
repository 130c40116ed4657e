//! `kvperf trace show|import`: look at a trace, or make one from another
//! tool's trace file.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::trace::import::{self, Layout};
use crate::trace::show::{self, ShowFormat};
use crate::trace::TraceReader;

#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Print a trace's operations as text or CSV.
    #[command(
        long_about = "Print a trace's operations (written by `-p trace.output=FILE` or\n\
        `kvperf trace import`) as text or CSV, in file order: each client's operations\n\
        in time order, one client's block after another.\n\n\
        Example:\n  kvperf trace show run.kvtrace --format csv > run.csv"
    )]
    Show(ShowArgs),
    /// Make a kvperf trace from a CSV trace (plain or Twitter's) or RocksDB's.
    #[command(
        long_about = "Make a kvperf trace from another tool's trace, to replay or fit it.\n\n\
        --from csv: `time,op,key,value_size` (time in seconds; op read, update, insert,\n\
        delete, scan (size = scan length) or rmw; get/set/put/add/del too).\n\
        --from twitter: Twitter's cache traces (github.com/twitter/cache-trace):\n\
        `timestamp,anonymized key,key size,value size,client id,operation,TTL`.\n\
        --from rocksdb: RocksDB's binary query trace (`-p rocksdb.trace=FILE`, db_bench\n\
        -trace_file): Get, write batches, iterator seeks, MultiGet (docs/traces.md).\n\
        A first line naming the columns, blank lines and `#` lines are skipped.\n\n\
        Example:\n  kvperf trace import cluster52.csv --from twitter --output cluster52.kvtrace"
    )]
    Import(ImportArgs),
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The trace to import.
    pub input: PathBuf,
    /// Its layout.
    #[arg(long, value_enum)]
    pub from: Layout,
    /// The kvperf trace to write.
    #[arg(long, value_name = "FILE")]
    pub output: PathBuf,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The trace file.
    pub trace: PathBuf,
    /// text: one line per operation; csv: one row per operation.
    #[arg(long, value_enum, default_value_t = ShowFormat::Text)]
    pub format: ShowFormat,
}

pub fn run(command: TraceCommand) -> anyhow::Result<()> {
    match command {
        TraceCommand::Show(args) => show_trace(&args),
        TraceCommand::Import(args) => import_trace(&args),
    }
}

fn import_trace(args: &ImportArgs) -> anyhow::Result<()> {
    // Ctrl-C, SIGTERM or SIGHUP end the import between lines (or RocksDB
    // queries) and its temporary is removed (by default the signal left
    // it, hidden, beside --output). Caught from the first moment: checking
    // --output creates and removes a probe file there, which a signal must
    // not strand either.
    crate::runner::stop_on_interrupt();
    let destination = crate::trace::output::destination(&args.output, "--output", &[&args.input])?;
    if args.from == Layout::Rocksdb {
        let counts = import::from_rocksdb::import(&args.input, destination)?;
        eprintln!(
            "kvperf: {} operations imported into '{}' from RocksDB's trace: {}",
            counts.operations,
            args.output.display(),
            counts.summary()
        );
        return Ok(());
    }
    let done = import::import(&args.input, args.from, destination)?;
    eprintln!(
        "kvperf: {} operations of {} clients imported into '{}'{}",
        done.operations,
        done.clients,
        args.output.display(),
        match done.before_first {
            0 => String::new(),
            n => format!("; {n} lines were timed before the first line and are put at its time"),
        }
    );
    Ok(())
}

fn show_trace(args: &ShowArgs) -> anyhow::Result<()> {
    let mut reader = TraceReader::open(&args.trace)?;
    let mut text = Vec::with_capacity(1 << 20);
    match args.format {
        ShowFormat::Text => show::header_text(&reader.header, &mut text)?,
        ShowFormat::Csv => writeln!(text, "{}", show::CSV_COLUMNS)?,
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let not_taken = |e: std::io::Error| anyhow::anyhow!("cannot write to standard output ({e})");
    // A bad block after good ones still ends in one line (exit 2); what
    // came before it is printed.
    while let Some(block) = reader.next_block()? {
        for op in &block {
            match args.format {
                ShowFormat::Text => show::text_line(op, &mut text)?,
                ShowFormat::Csv => show::csv_row(op, &mut text)?,
            }
        }
        out.write_all(&text).map_err(not_taken)?;
        text.clear();
    }
    out.write_all(&text).map_err(not_taken)?;
    out.flush().map_err(not_taken)?;
    Ok(())
}
