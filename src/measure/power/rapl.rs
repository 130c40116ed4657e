//! RAPL's energy counters (`/sys/class/powercap/intel-rapl:*`): every CPU
//! package and its DRAM domain, where the kernel exposes them. Each
//! counter wraps at its `max_energy_range_uj`; the meter keeps a running
//! total per domain so a wrap between two readings is undone.

use std::path::{Path, PathBuf};

use super::{PowerMeter, Reading};

const POWERCAP: &str = "/sys/class/powercap";

struct Domain {
    name: String,
    dir: PathBuf,
    range_uj: u64,
    last_uj: Option<u64>,
    total_uj: u128,
}

pub struct RaplMeter {
    domains: Vec<Domain>,
}

impl RaplMeter {
    /// The package and DRAM domains under `/sys/class/powercap`.
    pub fn open() -> Result<Self, String> {
        Self::open_in(Path::new(POWERCAP))
    }

    fn open_in(root: &Path) -> Result<Self, String> {
        let entries = std::fs::read_dir(root)
            .map_err(|e| format!("RAPL: cannot read {} ({e})", root.display()))?;
        let mut domains = Vec::new();
        for entry in entries.flatten() {
            let dir = entry.path();
            let file = entry.file_name().to_string_lossy().to_string();
            // intel-rapl:N is package N; intel-rapl:N:M its subdomains.
            let Some(rest) = file.strip_prefix("intel-rapl:") else {
                continue;
            };
            let name = read(&dir.join("name")).unwrap_or_default();
            let wanted = !rest.contains(':') || name == "dram";
            if !wanted {
                continue;
            }
            domains.push(Domain {
                name: format!("{name} ({file})"),
                range_uj: read(&dir.join("max_energy_range_uj"))
                    .ok()
                    .and_then(|t| t.parse().ok())
                    .unwrap_or(0),
                dir,
                last_uj: None,
                total_uj: 0,
            });
        }
        domains.sort_by(|a, b| a.name.cmp(&b.name));
        if domains.is_empty() {
            return Err(format!("RAPL: no intel-rapl domains in {}", root.display()));
        }
        Ok(Self { domains })
    }
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path)
        .map(|t| t.trim().to_string())
        .map_err(|e| format!("RAPL: cannot read {} ({e})", path.display()))
}

/// Microjoules from `before` to `after` on a counter that wraps at `range`.
pub fn wrapped_delta_uj(before: u64, after: u64, range: u64) -> u64 {
    if after >= before {
        after - before
    } else {
        range.saturating_sub(before) + after
    }
}

impl PowerMeter for RaplMeter {
    fn name(&self) -> String {
        let names: Vec<&str> = self.domains.iter().map(|d| d.name.as_str()).collect();
        format!("rapl ({})", names.join(", "))
    }

    fn read(&mut self) -> Result<Reading, String> {
        let mut total: u128 = 0;
        for d in &mut self.domains {
            let now: u64 = read(&d.dir.join("energy_uj"))?
                .parse()
                .map_err(|e| format!("RAPL: {} energy_uj is not a number ({e})", d.name))?;
            if let Some(last) = d.last_uj {
                d.total_uj += u128::from(wrapped_delta_uj(last, now, d.range_uj));
            }
            d.last_uj = Some(now);
            total += d.total_uj;
        }
        Ok(Reading::Joules(total as f64 / 1e6))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packages_and_dram_add_up_across_a_wrap() {
        let root = tempfile::tempdir().unwrap();
        let domain = |dir: &str, name: &str, uj: u64| {
            let d = root.path().join(dir);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("name"), format!("{name}\n")).unwrap();
            std::fs::write(d.join("energy_uj"), format!("{uj}\n")).unwrap();
            std::fs::write(d.join("max_energy_range_uj"), "1000000\n").unwrap();
        };
        domain("intel-rapl:0", "package-0", 900_000);
        domain("intel-rapl:0:0", "core", 5);
        domain("intel-rapl:0:1", "dram", 100);
        let mut m = RaplMeter::open_in(root.path()).unwrap();
        assert_eq!(
            m.name(),
            "rapl (dram (intel-rapl:0:1), package-0 (intel-rapl:0))"
        );
        assert_eq!(m.read(), Ok(Reading::Joules(0.0)));
        // The package wraps at 1 J: 0.9 -> 0.2 is 0.3 J; DRAM adds 0.1 J.
        domain("intel-rapl:0", "package-0", 200_000);
        domain("intel-rapl:0:1", "dram", 100_100);
        assert_eq!(m.read(), Ok(Reading::Joules(0.4)));
        let empty = tempfile::tempdir().unwrap();
        let err = RaplMeter::open_in(empty.path()).err().unwrap();
        assert!(err.contains("no intel-rapl domains"), "{err}");
    }
}
