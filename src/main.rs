use std::path::PathBuf;
fn main() {
    for p in std::env::args().skip(1) {
        match orchestrate::topology::load(&PathBuf::from(&p)) {
            Ok(t) => {
                println!("{}: {} nodes, {} subnets, fwd {:?}", t.name, t.nodes.len(), t.subnets.len(), t.forwarding_nodes().len());
                for n in t.nodes.iter().take(2) {
                    println!("  {} {:?} routes={:?}", n.name, n.links().map(|(i,a)| format!("{i}={a}")).collect::<Vec<_>>(), n.routes.iter().map(|r| format!("{} via {} dev {}", r.to, r.via, r.dev)).collect::<Vec<_>>());
                    println!("  reach {:?}", orchestrate::topology::paths::reach_by_hops(&t, &n.name));
                }
            }
            Err(e) => println!("{:?}", miette::Report::new(e)),
        }
    }
}
