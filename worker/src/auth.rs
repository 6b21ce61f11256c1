//! The run's secret and the proofs built from it, so a server serves only the controller that
//! started it and a client talks only to a server of the same run.
//!
//! The controller draws a fresh [`Secret`] of 32 random bytes for the servers it starts and
//! hands it to every server and client through the node's agent, which sets it in the child's
//! environment as [`SECRET_ENV`]: never on a command line, since `ps` shows any process's
//! arguments to every user, while `/proc/PID/environ` is readable only by the process's owner
//! and root — who can read the process's memory anyway.
//!
//! The secret itself never crosses the wire. After connecting, the server sends a fresh random
//! nonce; the client answers with its own nonce and
//! `HMAC-SHA256(secret, CLIENT_LABEL ‖ server nonce ‖ client nonce)`; the server checks it in
//! constant time and answers, in its welcome, `HMAC-SHA256(secret, SERVER_LABEL ‖ server nonce ‖
//! client nonce)`, which the client checks in turn. The two labels differ, so one side's proof
//! can never be reflected as the other's, and the fresh nonces make every proof good for one
//! connection only. What this does not do: hide or protect the traffic that follows. A machine
//! on the path of an authenticated session can still read or disturb it; the experiment network
//! is assumed to carry only the run's own traffic, and the secret keeps everyone else from
//! opening sessions of their own.

use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::Sha256;

/// The environment variable that carries the secret, as 64 hex digits.
pub const SECRET_ENV: &str = "ORCHESTRATE_WORKER_SECRET";

/// Bytes of a secret, a nonce and a proof.
pub const LEN: usize = 32;

/// What the client's proof is bound to, besides the two nonces.
const CLIENT_LABEL: &[u8] = b"orchestrate-worker v2 client proof\0";
/// What the server's proof is bound to.
const SERVER_LABEL: &[u8] = b"orchestrate-worker v2 server proof\0";

type HmacSha256 = Hmac<Sha256>;

/// The run's shared secret. Its `Debug` shows nothing of it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret([u8; LEN]);

/// A one-connection random value.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Nonce(pub [u8; LEN]);

/// Why a secret could not be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretError {
    Missing,
    Malformed,
}

impl fmt::Display for SecretError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretError::Missing => write!(
                f,
                "no secret: set {SECRET_ENV} to the run's 64 hex digits (the controller does \
                 this through the agent; by hand, e.g. `export {SECRET_ENV}=$(openssl rand -hex \
                 32)` for the server and its clients alike)"
            ),
            SecretError::Malformed => write!(f, "{SECRET_ENV} must be 64 hex digits (32 bytes)"),
        }
    }
}

impl std::error::Error for SecretError {}

impl Secret {
    /// A fresh secret from the operating system's random source.
    pub fn generate() -> Secret {
        Secret(random_bytes())
    }

    /// The secret this process was given in [`SECRET_ENV`].
    pub fn from_env() -> Result<Secret, SecretError> {
        let hex = std::env::var(SECRET_ENV).map_err(|_| SecretError::Missing)?;
        Secret::from_hex(&hex)
    }

    pub fn from_hex(s: &str) -> Result<Secret, SecretError> {
        decode32(s.trim()).map(Secret).ok_or(SecretError::Malformed)
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The proof a client sends for this pair of nonces.
    pub fn client_proof(&self, server: &Nonce, client: &Nonce) -> [u8; LEN] {
        self.mac(CLIENT_LABEL, server, client)
            .finalize()
            .into_bytes()
            .into()
    }

    /// The proof a server sends back for this pair of nonces.
    pub fn server_proof(&self, server: &Nonce, client: &Nonce) -> [u8; LEN] {
        self.mac(SERVER_LABEL, server, client)
            .finalize()
            .into_bytes()
            .into()
    }

    /// Whether `proof` is the client's proof for these nonces (constant time).
    pub fn verify_client(&self, server: &Nonce, client: &Nonce, proof: &[u8]) -> bool {
        self.mac(CLIENT_LABEL, server, client)
            .verify_slice(proof)
            .is_ok()
    }

    /// Whether `proof` is the server's proof for these nonces (constant time).
    pub fn verify_server(&self, server: &Nonce, client: &Nonce, proof: &[u8]) -> bool {
        self.mac(SERVER_LABEL, server, client)
            .verify_slice(proof)
            .is_ok()
    }

    fn mac(&self, label: &[u8], server: &Nonce, client: &Nonce) -> HmacSha256 {
        let mut m = <HmacSha256 as KeyInit>::new_from_slice(&self.0).expect("any key length");
        m.update(label);
        m.update(&server.0);
        m.update(&client.0);
        m
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Secret, D::Error> {
        // A secret that does not parse is refused without repeating it in the message.
        let s = String::deserialize(d)?;
        Secret::from_hex(&s).map_err(serde::de::Error::custom)
    }
}

impl Nonce {
    pub fn random() -> Nonce {
        Nonce(random_bytes())
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    pub fn from_hex(s: &str) -> Option<Nonce> {
        decode32(s).map(Nonce)
    }
}

/// 32 bytes from 64 hex digits.
pub fn decode32(s: &str) -> Option<[u8; LEN]> {
    let mut out = [0u8; LEN];
    hex::decode_to_slice(s, &mut out).ok()?;
    Some(out)
}

fn random_bytes() -> [u8; LEN] {
    let mut b = [0u8; LEN];
    // Without the kernel's random source no secret or nonce is safe: stop rather than go on.
    getrandom::fill(&mut b).expect("the operating system's random source");
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_check_out_only_with_the_same_secret_and_nonces() {
        let k = Secret::generate();
        let (s, c) = (Nonce::random(), Nonce::random());
        let p = k.client_proof(&s, &c);
        assert!(k.verify_client(&s, &c, &p));
        assert!(!Secret::generate().verify_client(&s, &c, &p));
        assert!(!k.verify_client(&Nonce::random(), &c, &p));
        assert!(!k.verify_client(&s, &Nonce::random(), &p));
        assert!(!k.verify_client(&s, &c, &p[..31]));
    }

    #[test]
    fn a_client_proof_is_no_server_proof() {
        let k = Secret::generate();
        let (s, c) = (Nonce::random(), Nonce::random());
        assert!(!k.verify_server(&s, &c, &k.client_proof(&s, &c)));
        assert!(k.verify_server(&s, &c, &k.server_proof(&s, &c)));
    }

    #[test]
    fn hex_round_trips_and_debug_shows_nothing() {
        let k = Secret::generate();
        assert_eq!(Secret::from_hex(&k.to_hex()), Ok(k.clone()));
        assert_eq!(format!("{k:?}"), "Secret(..)");
        assert_eq!(Secret::from_hex("abc"), Err(SecretError::Malformed));
        assert_eq!(
            Secret::from_hex(&"zz".repeat(32)),
            Err(SecretError::Malformed)
        );
        let json = serde_json::to_string(&k).unwrap();
        assert_eq!(serde_json::from_str::<Secret>(&json).unwrap(), k);
    }

    #[test]
    fn secrets_differ() {
        assert_ne!(Secret::generate(), Secret::generate());
    }
}
