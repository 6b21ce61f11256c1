//! The run directory: one owner for its layout, for the run that writes it and for the report
//! and `orchestrate teardown` that read it back. [`layout`] spells every file's name, [`read`]
//! loads what the run wrote, [`write`] writes it point by point, [`ledger`] is the
//! controller's record of what may still be applied, and [`trust`] refuses a directory
//! someone else could have written before `teardown` or `--resume` act on it.
//!
//! | file | written by | what |
//! |---|---|---|
//! | `experiment.toml` | runner | the experiment as it ran, its topologies pointing at the copies beside it, the inventory by absolute path |
//! | `topologies/<name>.toml` | runner | a copy of each topology, byte for byte |
//! | `baselines/<k>-<file>` | runner | a copy of each NetPIPE table of the experiment's `[report] netpipe`, byte for byte, drawn beside the run's curves |
//! | `plan.json` | runner | the plan; `--resume` refuses an experiment that no longer plans the same points |
//! | `scripts/<id>-<topology>/<node>.{apply,teardown}.sh` | runner | each node's scripts, as planned and then as they ran |
//! | `ledger.json` | runner | nodes that may still hold a configuration ([`Ledger`]); gone once every node was torn down |
//! | `run.log` | runner | one time-stamped line per event |
//! | `manifest.json` | runner | tool, experiment, seed, statistic, baseline, node probes, topologies ([`Manifest`](crate::results::Manifest)) |
//! | `records.jsonl` | runner | one [`RecordRow`](crate::results::RecordRow) per line: run context + the worker's flattened record |
//! | `points.jsonl` | runner | one [`PointRow`](crate::results::PointRow) per point attempt, with its attempt number, its status (`ok`, `failed`, or `untimed`: measured while the medium emulator was outside its timing bound, so it counts nowhere and is measured again) and overlap window |
//! | `records.parquet`, `records.csv` | [`ingest`](crate::results::ingest) | the same records, typed columns, for Polars and for people; the Parquet file names the experiment, seed and tool version in its key-value metadata ([`RecordsMetadata`](crate::results::RecordsMetadata)) |
//! | `bonds.jsonl` | runner | userspace bonds' final counters, one line per bond and configuration: per slave, per flow (which wire each flow took), failovers |
//! | `media.jsonl` | runner | the medium emulator's statistics of one segment during one point's traffic ([`MediaRow`](crate::results::MediaRow)): the point's keys, frames, bytes, utilisation, collisions, drops, deferrals, lateness percentiles at both ends (ingress: how long frames waited to be read; egress: how late they were written) and whether the timing bound was kept; only on emulated media |
//! | `hosts.jsonl` | runner | the emulator's host costs of one node during one point ([`HostRow`](crate::results::HostRow)): frames sent, received, forwarded, backlog drops, CPU busy time; only nodes with a host profile |
//! | `media-total.jsonl` | runner | per configuration, every segment and host from the emulator's start to the configuration's end, or why statistics are missing ([`MediaTotal`](crate::results::MediaTotal)) |
//!
//! A point measured again (`--resume` after a failure) appends new lines to the media files;
//! readers keep the last line per (point, segment) and (point, node). [`RunDir::media_frame`]
//! gives the `media` Polars frame.

mod layout;
mod ledger;
mod read;
pub(crate) mod trust;
mod write;

pub use layout::RunDir;
pub use ledger::{Ledger, read_ledger};
pub use write::RunWriter;
