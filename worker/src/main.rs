//! `orchestrate-worker`: the program copied to every node. Patterns land in later changes.

fn main() {
    println!("orchestrate-worker {}", env!("CARGO_PKG_VERSION"));
}
