//! The traffic worker's library: measurement patterns, their wire protocol and the records
//! they emit. The controller links this crate for the shared [`record`] types, the
//! [`invocation`] it starts workers with and the [`ready`] line their servers print, the
//! [`agent`]'s requests, the run's [`auth`] secret and the NetPIPE format; nothing here may
//! depend on the controller.

pub mod agent;
pub mod argv;
pub mod auth;
pub mod bond;
pub mod client;
pub mod client_command;
pub mod error;
pub mod gate;
pub mod invocation;
pub mod mptcp;
pub mod netpipe;
pub mod node_cpu;
pub mod output;
pub mod patterns;
pub mod probe;
pub mod progress;
pub mod protocol;
pub mod ranks;
pub mod ready;
pub mod record;
pub mod serve;
pub mod serve_args;
pub mod session;
pub mod shutdown;
pub mod spool;
pub mod tcp_counters;
pub mod units;
