//! The CSV layouts kvperf imports, one function per layout: a line in,
//! one operation (or a header to skip) out, or what is wrong in words.

use crate::trace::OpType;

/// One operation of an imported line.
#[derive(Debug, Clone, PartialEq)]
pub struct Line<'a> {
    /// Seconds, on the trace's own clock.
    pub time_s: f64,
    pub op: OpType,
    pub key: &'a str,
    /// Writes: the value's size; reads: the size read; scans: the length.
    pub size: u64,
    /// The client's name in the trace (empty: one client).
    pub client: &'a str,
}

/// Which layout a file has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Layout {
    /// `time,op,key,value_size`: time in seconds; op read, update,
    /// insert, delete, scan (size = scan length) or rmw.
    Csv,
    /// Twitter's cache traces (twitter/cache-trace): `timestamp,
    /// anonymized key,key size,value size,client id,operation,TTL`.
    Twitter,
    /// RocksDB's binary query trace (`-p rocksdb.trace=FILE`, db_bench's
    /// `-trace_file`): Get, write batches, iterator seeks, MultiGet.
    Rocksdb,
}

impl Layout {
    pub fn name(self) -> &'static str {
        match self {
            Layout::Csv => "csv",
            Layout::Twitter => "twitter",
            Layout::Rocksdb => "rocksdb",
        }
    }

    /// Parses one line: None for a header line (its first cell a column
    /// name), else the operation.
    pub fn parse(self, line: &str) -> Result<Option<Line<'_>>, String> {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let wanted = match self {
            Layout::Csv => 4,
            Layout::Twitter => 7,
            Layout::Rocksdb => 0,
        };
        if cells.len() != wanted {
            return Err(format!(
                "{} cells where the {} layout has {wanted}{}",
                cells.len(),
                self.name(),
                shown_csv(&cells)
            ));
        }
        if matches!(cells[0], "time" | "timestamp") {
            return Ok(None);
        }
        let time_s = seconds(cells[0])?;
        match self {
            Layout::Csv => Ok(Some(Line {
                time_s,
                op: plain_op(cells[1])?,
                key: key(cells[2])?,
                size: number(cells[3], "value size")?,
                client: "",
            })),
            Layout::Twitter => Ok(Some(Line {
                time_s,
                op: twitter_op(cells[5])?,
                key: key(cells[1])?,
                size: number(cells[3], "value size")?,
                client: cells[4],
            })),
            Layout::Rocksdb => Err("RocksDB's trace is binary: not read by line".into()),
        }
    }
}

/// What `kvperf trace show --format csv` writes, when `cells` look like
/// it: each operation as it ran (outcome, start, end), a record to read,
/// not a schedule another tool wrote; import does not read it back.
fn shown_csv(cells: &[&str]) -> String {
    let columns = crate::trace::show::CSV_COLUMNS;
    if cells.len() != columns.split(',').count() {
        return String::new();
    }
    let (first, _) = columns.split_once(',').unwrap_or_default();
    format!(
        " (`kvperf trace show --format csv` writes {}: {columns}, each operation as it ran, which import does not read back; replay or fit the kvperf trace it shows, or write `time,op,key,value_size` rows, time = intended_ns / 1e9)",
        if cells[0] == first { "this header" } else { "such rows" }
    )
}

fn seconds(cell: &str) -> Result<f64, String> {
    match cell.parse::<f64>() {
        // Past 2^63 ns a time does not fit the trace's clock.
        Ok(t) if t.is_finite() && (0.0..9.2e9).contains(&t) => Ok(t),
        _ => Err(format!(
            "time '{cell}' is not a number of seconds between 0 and 9.2e9"
        )),
    }
}

fn number(cell: &str, what: &str) -> Result<u64, String> {
    cell.parse::<u64>()
        .map_err(|_| format!("{what} '{cell}' is not a whole number"))
}

fn key(cell: &str) -> Result<&str, String> {
    if cell.is_empty() {
        Err("the key is empty".into())
    } else {
        Ok(cell)
    }
}

fn plain_op(cell: &str) -> Result<OpType, String> {
    Ok(match cell.to_ascii_lowercase().as_str() {
        "get" => OpType::Read,
        "set" | "put" | "write" => OpType::Update,
        "add" => OpType::Insert,
        "del" => OpType::Delete,
        _ => OpType::parse(cell).ok_or_else(|| {
            format!("operation '{cell}' is not read, update, insert, delete, scan or rmw")
        })?,
    })
}

/// memcached's commands as Twitter's traces name them.
fn twitter_op(cell: &str) -> Result<OpType, String> {
    Ok(match cell {
        "get" | "gets" => OpType::Read,
        "set" | "replace" | "cas" | "append" | "prepend" | "incr" | "decr" => OpType::Update,
        "add" => OpType::Insert,
        "delete" => OpType::Delete,
        other => return Err(format!("operation '{other}' is not a memcached command Twitter's traces hold (get, gets, set, add, replace, cas, append, prepend, incr, decr, delete)")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_layouts_parse_and_say_what_is_wrong() {
        let line = Layout::Csv.parse("1.5,update,user1,100").unwrap().unwrap();
        assert_eq!(
            (line.time_s, line.op, line.key, line.size),
            (1.5, OpType::Update, "user1", 100)
        );
        assert_eq!(Layout::Csv.parse("time,op,key,value_size").unwrap(), None);
        let t = Layout::Twitter
            .parse("0,q:xvA2Ysg,21,2450,6,get,0")
            .unwrap()
            .unwrap();
        assert_eq!(
            (t.op, t.key, t.size, t.client),
            (OpType::Read, "q:xvA2Ysg", 2450, "6")
        );
        let err = |layout: Layout, line| layout.parse(line).unwrap_err();
        assert!(err(Layout::Csv, "1,read,k").contains("3 cells"));
        assert!(err(Layout::Csv, "x,read,k,1").contains("time 'x'"));
        assert!(err(Layout::Csv, "-1,read,k,1").contains("time '-1'"));
        assert!(err(Layout::Csv, "1,fly,k,1").contains("operation 'fly'"));
        assert!(err(Layout::Csv, "1,read,k,-3").contains("value size '-3'"));
        assert!(err(Layout::Csv, "1,read,,3").contains("key is empty"));
        assert!(err(Layout::Twitter, "1,k,1,2,3,touch,0").contains("'touch'"));
        let shown = err(Layout::Csv, crate::trace::show::CSV_COLUMNS);
        assert!(shown.contains("writes this header"), "{shown}");
        let row = err(Layout::Twitter, "0,READ,k1,OK,5,5,9,0,0,,100");
        assert!(row.contains("writes such rows"), "{row}");
        assert!(!err(Layout::Csv, "1,read,k").contains("trace show"));
    }
}
