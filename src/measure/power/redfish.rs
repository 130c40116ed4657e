//! System power from a Redfish service (a BMC) over HTTP(S): one GET of a
//! resource with a power reading, by `curl` (the user and password from
//! `KVPERF_REDFISH_USER` and `KVPERF_REDFISH_PASSWORD`, handed to curl as
//! a config on its standard input, so they are on no command line and in
//! no result or log). Three resources carry a reading: the deprecated
//! `Chassis/{id}/Power` (`PowerControl[].PowerConsumedWatts`), the newer
//! `Chassis/{id}/EnvironmentMetrics` (`PowerWatts.Reading`) and a power
//! supply's `PowerSubsystem/PowerSupplies/{id}/Metrics`
//! (`InputPowerWatts.Reading`).

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use super::command::output_within;
use super::{PowerMeter, Reading};

pub struct RedfishMeter {
    url: String,
    insecure: bool,
    deadline: Duration,
    /// `user = "…"` for curl's config, from the environment.
    credentials: Option<String>,
}

impl RedfishMeter {
    pub fn new(url: String, insecure: bool, deadline: Duration) -> Result<Self, String> {
        let user = std::env::var("KVPERF_REDFISH_USER").ok();
        let password = std::env::var("KVPERF_REDFISH_PASSWORD").ok();
        let credentials = match (user, password) {
            (Some(u), Some(p)) => Some(format!("user = \"{}:{}\"\n", quote(&u), quote(&p))),
            (None, None) => None,
            _ => {
                return Err(
                    "set both KVPERF_REDFISH_USER and KVPERF_REDFISH_PASSWORD, or neither".into(),
                )
            }
        };
        Ok(Self {
            url,
            insecure,
            deadline,
            credentials,
        })
    }
}

/// A value inside double quotes of a curl config.
fn quote(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

impl PowerMeter for RedfishMeter {
    fn name(&self) -> String {
        format!("redfish {}", self.url)
    }

    fn read(&mut self) -> Result<Reading, String> {
        let mut curl = Command::new("curl");
        curl.args(["--silent", "--show-error", "--fail", "--config", "-"])
            .args(["--header", "Accept: application/json"])
            .args(["--max-time", &format!("{:.3}", self.deadline.as_secs_f64())]);
        if self.insecure {
            curl.arg("--insecure");
        }
        curl.arg("--").arg(&self.url);
        let body = output_within(
            curl,
            Some(self.credentials.clone().unwrap_or_default()),
            self.deadline + Duration::from_secs(1),
        )?;
        parse_power_watts(&body).map(Reading::Watts)
    }
}

/// The power reading in a Redfish resource's JSON.
pub fn parse_power_watts(body: &str) -> Result<f64, String> {
    let v: Value =
        serde_json::from_str(body).map_err(|e| format!("the resource is not JSON ({e})"))?;
    let number = |v: &Value| v.as_f64().filter(|w| w.is_finite() && *w >= 0.0);
    if let Some(controls) = v.get("PowerControl").and_then(Value::as_array) {
        return controls
            .iter()
            .find_map(|c| c.get("PowerConsumedWatts").and_then(number))
            .ok_or_else(|| "no PowerControl entry has a PowerConsumedWatts".to_string());
    }
    for field in ["PowerWatts", "InputPowerWatts"] {
        if let Some(reading) = v.get(field) {
            return reading
                .get("Reading")
                .and_then(number)
                .ok_or_else(|| format!("{field} has no Reading"));
        }
    }
    Err("no power reading in the resource (expected PowerControl[].PowerConsumedWatts, PowerWatts.Reading or InputPowerWatts.Reading)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    // From DMTF's public Redfish mockups (github.com/DMTF/Redfish-Mockup-Server,
    // public-rackmount1/Chassis/1U/...), cut to the fields that matter and
    // one neighbour each; the figures are the mockups'.

    /// public-rackmount1/Chassis/1U/Power/index.json (#Power.v1_7_1.Power).
    const POWER: &str = r##"{
        "@odata.type": "#Power.v1_7_1.Power",
        "Id": "Power",
        "PowerControl": [{
            "@odata.id": "/redfish/v1/Chassis/1U/Power#/PowerControl/0",
            "MemberId": "0",
            "Name": "System Input Power",
            "PowerConsumedWatts": 344,
            "PowerRequestedWatts": 800,
            "PowerMetrics": {"IntervalInMin": 30, "MinConsumedWatts": 271,
                             "MaxConsumedWatts": 489, "AverageConsumedWatts": 319}
        }],
        "@odata.id": "/redfish/v1/Chassis/1U/Power"
    }"##;

    /// public-rackmount1/Chassis/1U/EnvironmentMetrics/index.json
    /// (#EnvironmentMetrics.v1_3_0.EnvironmentMetrics).
    const ENVIRONMENT: &str = r##"{
        "@odata.type": "#EnvironmentMetrics.v1_3_0.EnvironmentMetrics",
        "TemperatureCelsius": {"Reading": 39, "DataSourceUri": "/redfish/v1/Chassis/1U/Sensors/CPU1Temp"},
        "PowerWatts": {"Reading": 374, "DataSourceUri": "/redfish/v1/Chassis/1U/Sensors/TotalPower"},
        "PowerLimitWatts": {"SetPoint": 500, "AllowableMax": 1000}
    }"##;

    /// public-rackmount1/Chassis/1U/PowerSubsystem/PowerSupplies/Bay1/Metrics/index.json
    /// (#PowerSupplyMetrics.v1_0_1.PowerSupplyMetrics).
    const SUPPLY: &str = r##"{
        "@odata.type": "#PowerSupplyMetrics.v1_0_1.PowerSupplyMetrics",
        "InputVoltage": {"DataSourceUri": "/redfish/v1/Chassis/1U/Sensors/PS1InputVoltage", "Reading": 230.2},
        "InputPowerWatts": {"DataSourceUri": "/redfish/v1/Chassis/1U/Sensors/PS1InputPower", "Reading": 937.4},
        "EnergykWh": {"DataSourceUri": "/redfish/v1/Chassis/1U/Sensors/PS1Energy", "Reading": 325675}
    }"##;

    #[test]
    fn reads_each_resource_of_dmtfs_mockups() {
        assert_eq!(parse_power_watts(POWER), Ok(344.0));
        assert_eq!(parse_power_watts(ENVIRONMENT), Ok(374.0));
        assert_eq!(parse_power_watts(SUPPLY), Ok(937.4));
    }

    #[test]
    fn a_resource_without_a_reading_says_what_it_lacks() {
        let err = parse_power_watts(r#"{"Id": "1U", "ChassisType": "RackMount"}"#).unwrap_err();
        assert!(err.contains("expected PowerControl"), "{err}");
        let err = parse_power_watts(r#"{"PowerControl": [{"Name": "x"}]}"#).unwrap_err();
        assert!(err.contains("PowerConsumedWatts"), "{err}");
        assert!(parse_power_watts("<html>")
            .unwrap_err()
            .contains("not JSON"));
    }

    #[test]
    fn credentials_go_to_curls_config_quoted() {
        assert_eq!(quote(r#"pa"ss\word"#), r#"pa\"ss\\word"#);
        let m = RedfishMeter {
            url: "https://bmc/redfish/v1/Chassis/1/Power".into(),
            insecure: false,
            deadline: Duration::from_secs(1),
            credentials: Some("user = \"root:secret\"\n".into()),
        };
        assert!(!m.name().contains("secret"));
    }
}
