//! What runs on or reaches a node: one SSH session per node ([`connect`]), doing one thing on
//! every node at once ([`fanout`]), the worker build ([`worker_binary`]) and its checked
//! install ([`worker_install`]), and the controller's side of each node's agent ([`agent`]).

pub(super) mod agent;
pub(super) mod connect;
pub(super) mod fanout;
pub(super) mod worker_binary;
pub(super) mod worker_install;
