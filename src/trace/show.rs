//! `kvperf trace show`: a trace as text (one line per operation, for
//! people) or CSV (for spreadsheets and scripts), in file order: each
//! client's operations in time order, client blocks one after another.

use std::io::Write;

use super::format::Header;
use super::record::TraceOp;

/// How `trace show` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ShowFormat {
    Text,
    Csv,
}

pub const CSV_COLUMNS: &str = "client,op,key,outcome,intended_ns,start_ns,end_ns,read_fields,scan_length,value_sizes,bytes_read";

/// The header's lines (`# ...`) of the text format.
pub fn header_text(h: &Header, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "# trace of {} ({}), engine {}, table {}, {}{}",
        h.source,
        h.kvperf,
        h.engine.as_deref().unwrap_or("none"),
        h.table,
        match h.clients {
            0 => String::new(),
            n => format!("{n} clients, "),
        },
        match (h.paced, h.target_ops_per_sec > 0.0) {
            (true, true) => format!("paced at {} ops/s", h.target_ops_per_sec),
            (true, false) => "times as the trace gives them (intended starts)".into(),
            _ => "unpaced (intended start = start)".into(),
        }
    )?;
    writeln!(
        out,
        "# time 0 = {} ns since the Unix epoch; times in us from it",
        h.epoch_unix_ns
    )?;
    writeln!(
        out,
        "# client op key outcome intended start latency(us) [fields] [scan] [sizes] [read]"
    )
}

fn us(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1000.0)
}

/// One operation as a text line.
pub fn text_line(op: &TraceOp, out: &mut impl Write) -> std::io::Result<()> {
    write!(
        out,
        "{} {} {} {} {} {} {}",
        op.client,
        op.op.name(),
        shown_key(&op.key),
        crate::measure::Outcome::ycsb_name(op.outcome),
        us(op.intended_ns),
        us(op.start_ns),
        us(op.end_ns - op.start_ns),
    )?;
    if op.op.reads() {
        match op.read_fields {
            0 => write!(out, " fields=all")?,
            n => write!(out, " fields={n}")?,
        }
    }
    if op.op == super::OpType::Scan {
        write!(out, " scan={}", op.scan_length)?;
    }
    if op.op.writes() {
        write!(out, " sizes={}", joined(&op.value_sizes))?;
    }
    if op.op.reads() {
        write!(out, " read={}", op.bytes_read)?;
    }
    writeln!(out)
}

/// One operation as a CSV row ([`CSV_COLUMNS`]).
pub fn csv_row(op: &TraceOp, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{},{},{},{},{},{},{},{},{},{},{}",
        op.client,
        op.op.name(),
        csv_field(&shown_key(&op.key)),
        crate::measure::Outcome::ycsb_name(op.outcome),
        op.intended_ns,
        op.start_ns,
        op.end_ns,
        op.read_fields,
        op.scan_length,
        joined(&op.value_sizes),
        op.bytes_read
    )
}

fn joined(sizes: &[u32]) -> String {
    sizes
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(";")
}

/// A key as text: printable ASCII as it is, other bytes (and `\`) as `\xNN`.
pub fn shown_key(key: &[u8]) -> String {
    let mut s = String::with_capacity(key.len());
    for &b in key {
        if b.is_ascii_graphic() && b != b'\\' {
            s.push(b as char);
        } else {
            s.push_str(&format!("\\x{b:02x}"));
        }
    }
    s
}

fn csv_field(text: &str) -> String {
    if text.contains([',', '"']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_shown_escaped_and_csv_quotes_commas() {
        assert_eq!(shown_key(b"user1"), "user1");
        assert_eq!(shown_key(b"a b\\\x00"), "a\\x20b\\x5c\\x00");
        assert_eq!(csv_field("a,\"b"), "\"a,\"\"b\"");
    }
}
