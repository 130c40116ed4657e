//! The BMC's system power through IPMI DCMI: `ipmitool dcmi power
//! reading`, locally (the kernel's IPMI driver) or over the BMC's LAN
//! (`-I lanplus -H host`), the user and password from the environment
//! (`KVPERF_IPMI_USER`, `KVPERF_IPMI_PASSWORD`), handed to ipmitool
//! through its own environment (`-E` reads `IPMI_PASSWORD`), never on a
//! command line, in a result or in a log.

use std::process::Command;
use std::time::Duration;

use super::command::output_within;
use super::{PowerMeter, Reading};

pub struct IpmiMeter {
    host: Option<String>,
    deadline: Duration,
}

impl IpmiMeter {
    pub fn new(host: Option<String>, deadline: Duration) -> Self {
        Self { host, deadline }
    }

    fn command(&self) -> Result<Command, String> {
        let mut cmd = Command::new("ipmitool");
        if let Some(host) = &self.host {
            let user = std::env::var("KVPERF_IPMI_USER").map_err(|_| {
                "KVPERF_IPMI_USER is not set (the BMC user for power.ipmi.host)".to_string()
            })?;
            let password = std::env::var("KVPERF_IPMI_PASSWORD").map_err(|_| {
                "KVPERF_IPMI_PASSWORD is not set (the BMC password for power.ipmi.host)".to_string()
            })?;
            cmd.args(["-I", "lanplus", "-H", host, "-U", &user, "-E"])
                .env("IPMI_PASSWORD", password);
        }
        cmd.args(["dcmi", "power", "reading"]);
        Ok(cmd)
    }
}

impl PowerMeter for IpmiMeter {
    fn name(&self) -> String {
        match &self.host {
            Some(host) => format!("ipmi dcmi (lanplus {host})"),
            None => "ipmi dcmi (local)".into(),
        }
    }

    fn read(&mut self) -> Result<Reading, String> {
        let out = output_within(self.command()?, None, self.deadline)?;
        parse_dcmi_power_reading(&out).map(Reading::Watts)
    }
}

/// The instantaneous power in `ipmitool dcmi power reading`'s output;
/// an error when the BMC says power measurement is not active (bit 6 of
/// the reading's state, printed as "deactivated"), as its figures then
/// mean nothing.
pub fn parse_dcmi_power_reading(output: &str) -> Result<f64, String> {
    let field = |name: &str| {
        output.lines().find_map(|l| {
            let (key, value) = l.split_once(':')?;
            (key.trim() == name).then(|| value.trim().to_string())
        })
    };
    if let Some(state) = field("Power reading state is") {
        if state != "activated" {
            return Err(format!(
                "the BMC's power reading state is '{state}': DCMI power measurement is not active"
            ));
        }
    }
    let reading = field("Instantaneous power reading")
        .ok_or("no 'Instantaneous power reading' in ipmitool's output")?;
    reading
        .strip_suffix("Watts")
        .and_then(|n| n.trim().parse::<f64>().ok())
        .ok_or_else(|| format!("'Instantaneous power reading: {reading}' is not watts"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ipmitool dcmi power reading` laid out by ipmitool's own printf
    /// formats in `ipmi_dcmi_pwr_rd()`, lib/ipmi_dcmi.c of
    /// github.com/ipmitool/ipmitool (`"    Instantaneous power reading:
    /// %8d Watts\n"`, ..., `"    Power reading state is: "` then
    /// `activated` or `deactivated` from bit 6 of the state byte), with
    /// the figures of a capture published in a monitoring plugin's
    /// documentation (144 W instantaneous, 148 W average).
    const ACTIVATED: &str = "
    Instantaneous power reading:                   144 Watts
    Minimum during sampling period:                 66 Watts
    Maximum during sampling period:                206 Watts
    Average power reading over sample period:      148 Watts
    IPMI timestamp:                           Sat Oct 23 08:25:52 2021
    Sampling period:                          01987338 Seconds.
    Power reading state is:                   activated

";

    #[test]
    fn reads_the_instantaneous_power_of_ipmitools_dcmi_output() {
        assert_eq!(parse_dcmi_power_reading(ACTIVATED), Ok(144.0));
    }

    #[test]
    fn a_deactivated_reading_or_other_output_is_no_figure() {
        let off = ACTIVATED.replace(
            "is:                   activated",
            "is:                   deactivated",
        );
        let err = parse_dcmi_power_reading(&off).unwrap_err();
        assert!(err.contains("'deactivated'"), "{err}");
        let err = parse_dcmi_power_reading("Invalid command\n").unwrap_err();
        assert!(err.contains("no 'Instantaneous power reading'"), "{err}");
    }

    #[test]
    fn without_ipmitool_the_meter_says_so() {
        let on_path = std::env::var("PATH")
            .unwrap_or_default()
            .split(':')
            .any(|d| std::path::Path::new(d).join("ipmitool").exists());
        if on_path {
            eprintln!("skipped the local case: ipmitool is installed here");
        } else {
            let why = IpmiMeter::new(None, Duration::from_secs(5))
                .read()
                .unwrap_err();
            assert!(why.starts_with("cannot run ipmitool"), "{why}");
        }
        let mut lan = IpmiMeter::new(Some("bmc.example".into()), Duration::from_secs(5));
        if std::env::var("KVPERF_IPMI_USER").is_err() {
            let why = lan.read().unwrap_err();
            assert!(why.contains("KVPERF_IPMI_USER is not set"), "{why}");
        }
    }
}
