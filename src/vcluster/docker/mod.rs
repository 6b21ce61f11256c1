//! The cluster in docker: the node image, the cluster's containers and networks described
//! once ([`Project`]), rendered as a compose file for people, created through the engine, and
//! the engine itself, driven through its command-line client.
//!
//! Docker's networks only ever carry management traffic and give each container its veths:
//! the wires on a segment are the tool's own (`super::wires`), built on what is made here.

mod compose;
mod create;
mod engine;
mod image;
mod project;

pub use compose::render as render_compose;
pub use create::create as create_project;
pub use engine::{ContainerInfo, Docker};
pub use image::{
    BaseSource, ImageOptions, NodeImage, ensure as ensure_image, locate_worker, offline_base_tag,
};
pub use project::{MGMT_NETWORK_KEY, Project, segment_network_key};
