//! The BMC's system power through IPMI: `ipmitool dcmi power reading`,
//! or, on a BMC without DCMI's power reading, a sensor in watts that
//! `power.ipmi.sensor` names (`ipmitool sensor get NAME`), locally (the
//! kernel's IPMI driver) or over the BMC's LAN (`-I lanplus -H host`, with
//! `-p port` and `-C suite` when given), the user and password from the
//! environment (`KVPERF_IPMI_USER`, `KVPERF_IPMI_PASSWORD`), handed to
//! ipmitool through its own environment (`-E` reads `IPMI_PASSWORD`),
//! never on a command line, in a result or in a log.

use std::process::Command;
use std::time::Duration;

use super::command::output_within;
use super::{PowerMeter, Reading};

/// Where and how the BMC is asked (`power.ipmi.*`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IpmiTarget {
    /// `host` or `host:port` over RMCP+; None: the local BMC.
    pub host: Option<String>,
    /// A sensor in watts to read instead of DCMI's power reading.
    pub sensor: Option<String>,
    /// RMCP+ cipher suite (`-C`), when ipmitool's default is not wanted.
    pub cipher_suite: Option<u8>,
}

pub struct IpmiMeter {
    target: IpmiTarget,
    deadline: Duration,
}

impl IpmiMeter {
    pub fn new(target: IpmiTarget, deadline: Duration) -> Self {
        Self { target, deadline }
    }

    fn command(&self) -> Result<Command, String> {
        let mut cmd = Command::new("ipmitool");
        if let Some(host) = &self.target.host {
            let user = std::env::var("KVPERF_IPMI_USER").map_err(|_| {
                "KVPERF_IPMI_USER is not set (the BMC user for power.ipmi.host)".to_string()
            })?;
            let password = std::env::var("KVPERF_IPMI_PASSWORD").map_err(|_| {
                "KVPERF_IPMI_PASSWORD is not set (the BMC password for power.ipmi.host)".to_string()
            })?;
            let (name, port) = split_port(host);
            cmd.args(["-I", "lanplus", "-H", name]);
            if let Some(port) = port {
                cmd.args(["-p", port]);
            }
            if let Some(suite) = self.target.cipher_suite {
                cmd.args(["-C", &suite.to_string()]);
            }
            cmd.args(["-U", &user, "-E"]).env("IPMI_PASSWORD", password);
        }
        match &self.target.sensor {
            Some(sensor) => cmd.args(["sensor", "get", sensor]),
            None => cmd.args(["dcmi", "power", "reading"]),
        };
        Ok(cmd)
    }
}

/// `host:port` as ipmitool takes them (`-H host -p port`); a bare host
/// or an IPv6 address without brackets keeps ipmitool's port (623).
pub fn split_port(host: &str) -> (&str, Option<&str>) {
    if let Some(rest) = host.strip_prefix('[') {
        if let Some((name, port)) = rest.split_once("]:") {
            return (name, Some(port));
        }
        return (rest.trim_end_matches(']'), None);
    }
    match host.split_once(':') {
        Some((name, port)) if !port.contains(':') => (name, Some(port)),
        _ => (host, None),
    }
}

impl PowerMeter for IpmiMeter {
    fn name(&self) -> String {
        let what = match &self.target.sensor {
            Some(sensor) => format!("ipmi sensor '{sensor}'"),
            None => "ipmi dcmi".to_string(),
        };
        match &self.target.host {
            Some(host) => format!("{what} (lanplus {host})"),
            None => format!("{what} (local)"),
        }
    }

    fn read(&mut self) -> Result<Reading, String> {
        let out = output_within(self.command()?, None, self.deadline).map_err(|why| {
            if self.target.sensor.is_none() && why.contains("Invalid command") {
                format!("{why}: this BMC has no DCMI power reading; name its power sensor in watts with power.ipmi.sensor (`ipmitool sensor` lists them)")
            } else {
                why
            }
        })?;
        match self.target.sensor {
            Some(_) => parse_sensor_watts(&out),
            None => parse_dcmi_power_reading(&out),
        }
        .map(Reading::Watts)
    }
}

/// The reading of `ipmitool sensor get NAME` ("Sensor Reading : 150 (+/-
/// 0) Watts"); an error unless the sensor reads in watts.
pub fn parse_sensor_watts(output: &str) -> Result<f64, String> {
    let reading = output
        .lines()
        .find_map(|l| {
            let (key, value) = l.split_once(':')?;
            (key.trim() == "Sensor Reading").then(|| value.trim().to_string())
        })
        .ok_or("no 'Sensor Reading' in ipmitool's output (is it a threshold sensor?)")?;
    let watts = reading
        .strip_suffix("Watts")
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse::<f64>().ok())
        .filter(|w| w.is_finite() && *w >= 0.0);
    watts.ok_or_else(|| format!("the sensor reads '{reading}', not watts"))
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

    /// `ipmitool sensor get "Pwr Consumption"` as ipmitool 1.8.19 prints
    /// it for OpenIPMI's ipmi_sim serving a threshold sensor in watts.
    const SENSOR: &str = "Locating sensor record...
Sensor ID              : Pwr Consumption (0x1)
 Entity ID             : 7.1
 Sensor Type (Threshold)  : Current
 Sensor Reading        : 150 (+/- 0) Watts
 Status                : ok
";

    #[test]
    fn reads_a_sensor_in_watts_and_refuses_other_units() {
        assert_eq!(parse_sensor_watts(SENSOR), Ok(150.0));
        let amps = SENSOR.replace("Watts", "Amps");
        let err = parse_sensor_watts(&amps).unwrap_err();
        assert!(err.contains("not watts"), "{err}");
        let absent = SENSOR.replace(
            "150 (+/- 0) Watts",
            " Unable to read sensor: Device Not Present",
        );
        assert!(parse_sensor_watts(&absent).is_err());
    }

    #[test]
    fn a_host_may_carry_its_port() {
        assert_eq!(split_port("bmc"), ("bmc", None));
        assert_eq!(split_port("127.0.0.1:7501"), ("127.0.0.1", Some("7501")));
        assert_eq!(split_port("[fe80::1]:623"), ("fe80::1", Some("623")));
        assert_eq!(split_port("fe80::1"), ("fe80::1", None));
    }

    /// Without a local BMC (no /dev/ipmi0) the local meter fails with
    /// ipmitool's reason, and one over LAN needs its user first.
    #[test]
    fn without_a_local_bmc_or_a_user_the_meter_says_why() {
        if !std::path::Path::new("/dev/ipmi0").exists() {
            let why = IpmiMeter::new(IpmiTarget::default(), Duration::from_secs(5))
                .read()
                .unwrap_err();
            assert!(
                why.starts_with("cannot run ipmitool") || why.starts_with("ipmitool failed"),
                "{why}"
            );
        }
        let target = IpmiTarget {
            host: Some("bmc.example".into()),
            ..IpmiTarget::default()
        };
        let mut lan = IpmiMeter::new(target, Duration::from_secs(5));
        if std::env::var("KVPERF_IPMI_USER").is_err() {
            let why = lan.read().unwrap_err();
            assert!(why.contains("KVPERF_IPMI_USER is not set"), "{why}");
        }
    }
}
