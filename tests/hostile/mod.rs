//! The hostile suite: what a hostile but realistic user does to kvperf,
//! one module per class of harm (docs/reliability.md lists the classes and
//! what each guarantees). A new output, input or server joins the class it
//! belongs to; every case asserts what must hold, on the real binary.

mod failures;
mod inputs;
mod links;
mod outputs;
mod ownership;
mod pass10_files;
mod pass10_lead;
mod pass10_life;
mod pass10_servers;
mod pass11_lead;
mod pass12_files;
mod pass12_lead;
mod pass12_life;
mod pass12_servers;
mod pass14_device;
mod pass14_lead;
mod pass14_mem;
mod pass14_pipes;
mod pass14_servers;
mod pass14_waits;
mod pass16_dirs;
mod pass16_hist;
mod pass16_lead;
mod pass16_plan;
mod pass16_sec;
mod pass16_stores;
mod pass16_waits;
mod pass4;
mod pass6;
mod pass7;
mod pass7_servers;
mod pass8_files;
mod pass8_lead;
mod pass8_life;
mod pass8_servers;
mod pass9_files;
mod pass9_life;
mod pass9_servers;
mod plans;
mod resources;
mod secrets;
mod servers;
mod stores;
mod waits;
