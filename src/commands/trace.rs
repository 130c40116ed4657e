//! `kvperf trace show|import`: look at a trace, or make one from another
//! tool's trace file.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};

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
    }
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
    // A bad block after good ones still ends in one line (exit 2); what
    // came before it is printed.
    while let Some(block) = reader.next_block()? {
        for op in &block {
            match args.format {
                ShowFormat::Text => show::text_line(op, &mut text)?,
                ShowFormat::Csv => show::csv_row(op, &mut text)?,
            }
        }
        out.write_all(&text)?;
        text.clear();
    }
    out.write_all(&text)?;
    out.flush()?;
    Ok(())
}
