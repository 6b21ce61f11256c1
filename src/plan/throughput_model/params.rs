//! What the throughput model assumes of the stacks: segment size, per-hop cost, transport.

use std::time::Duration;

use serde::Serialize;

/// Ethernet header, IP header, TCP header with timestamps: a frame's kernel length beyond its
/// payload.
pub const HEADERS: u64 = 14 + 20 + 32;

#[derive(Debug, Clone, Copy, Serialize)]
pub struct ModelParams {
    /// TCP's maximum segment size (payload per segment, timestamps counted).
    pub mss: u64,
    #[serde(serialize_with = "micros")]
    pub hop_latency: Duration,
    pub transport: Transport,
}

/// The transport whose segments the model counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    #[default]
    Tcp,
    /// Multipath TCP as Linux sends it: every data segment carries a 28-byte DSS option
    /// (64-bit data sequence number and data ACK, padded), every pure ACK a 12-byte one
    /// (the data ACK), which the payload per segment gives up; and a connection's segments
    /// are spread over one subflow per interface that reaches the peer directly. The
    /// scheduler's choices and reordering at the receiver are not modelled: the measured
    /// to predicted ratio shows them.
    Mptcp,
}

impl Transport {
    /// TCP option bytes a data segment carries beyond TCP's own (timestamps).
    pub(super) fn data_options(self) -> u64 {
        match self {
            Transport::Tcp => 0,
            Transport::Mptcp => 28,
        }
    }

    /// The same for a pure ACK.
    pub(super) fn ack_options(self) -> u64 {
        match self {
            Transport::Tcp => 0,
            Transport::Mptcp => 12,
        }
    }
}

impl ModelParams {
    /// The same model for Multipath TCP.
    pub fn mptcp(self) -> ModelParams {
        ModelParams {
            transport: Transport::Mptcp,
            ..self
        }
    }

    /// Payload bytes per data segment.
    pub(crate) fn segment_payload(&self) -> u64 {
        self.mss - self.transport.data_options()
    }

    /// A data frame's kernel length.
    pub(crate) fn frame_len(&self, payload: u64) -> u32 {
        u32::try_from(HEADERS + self.transport.data_options() + payload).unwrap_or(u32::MAX)
    }

    /// A pure ACK's kernel length.
    pub(crate) fn ack_len(&self) -> u32 {
        u32::try_from(HEADERS + self.transport.ack_options()).unwrap_or(u32::MAX)
    }
}

fn micros<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e6)
}

impl Default for ModelParams {
    /// 1500-byte MTU with TCP timestamps; 60 µs per hop, what veth pairs and bridges in
    /// containers on this kind of machine add per direction.
    fn default() -> Self {
        ModelParams {
            mss: 1448,
            hop_latency: Duration::from_micros(60),
            transport: Transport::Tcp,
        }
    }
}
