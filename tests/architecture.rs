//! The shape of the code, checked from its sources: the rules a newcomer relies on when
//! reading the house and that no compiler enforces.
//!
//! - No two source files import each other, directly or through a loop. An arrow from file A
//!   to file B is any path in A (`use`, a type, a call, a path inside a macro) that resolves
//!   to a module whose file is B: the deepest module along the path that has a file of its
//!   own. A `mod.rs` re-exporting its child is an arrow too, so a child reaching a sibling
//!   through its parent's re-exports closes a circle.
//! - A name several rooms wanted names one file or one type: `paths.rs`, `session.rs`,
//!   `source.rs` and `media.rs` name at most one file of the controller, and `Cluster`,
//!   `Event`, `Host` and `Verdict` at most one type per crate.
//! - Each layer of the controller imports only the layers `src/lib.rs` lists before it.
//! - The controller spells no worker option: every worker command line is built by the
//!   worker's own invocation type (`orchestrate_worker::invocation`).
//! - The general report names no topology: the names of the shipped topologies appear in
//!   string literals under `src/report` only inside `src/report/study/`, where each study
//!   keeps its own questions.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A module: its path from the crate root, as segments.
type ModPath = Vec<String>;

/// One crate's modules: which file each lives in, and each one's child modules.
#[derive(Default)]
struct ModuleTree {
    file_of: BTreeMap<ModPath, PathBuf>,
    children: HashMap<ModPath, BTreeSet<String>>,
    /// Each file's syntax and the module it defines.
    files: Vec<(PathBuf, ModPath, syn::File)>,
}

impl ModuleTree {
    fn load(root: &Path) -> Self {
        let mut tree = ModuleTree::default();
        let dir = root.parent().unwrap().to_path_buf();
        tree.load_file(root, Vec::new(), &dir);
        tree
    }

    fn load_file(&mut self, file: &Path, module: ModPath, dir: &Path) {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        let syntax = syn::parse_file(&text).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        self.file_of.insert(module.clone(), file.to_path_buf());
        self.children.entry(module.clone()).or_default();
        self.declare(file, &module, dir, &syntax.items);
        self.files.push((file.to_path_buf(), module, syntax));
    }

    /// Registers the modules `items` declare: a `mod x;` is loaded from its own file, an
    /// inline `mod x { .. }` lives in `file` with its parent.
    fn declare(&mut self, file: &Path, module: &ModPath, dir: &Path, items: &[syn::Item]) {
        for item in items {
            let syn::Item::Mod(m) = item else { continue };
            assert!(
                !m.attrs.iter().any(|a| a.path().is_ident("path")),
                "{file:?}: #[path] modules are not followed by this check"
            );
            let name = m.ident.to_string();
            let mut child = module.clone();
            child.push(name.clone());
            self.children
                .entry(module.clone())
                .or_default()
                .insert(name.clone());
            match &m.content {
                None => {
                    let flat = dir.join(format!("{name}.rs"));
                    let nested = dir.join(&name).join("mod.rs");
                    let found = if flat.exists() { flat } else { nested };
                    self.load_file(&found, child, &dir.join(&name));
                }
                Some((_, items)) => {
                    self.file_of.insert(child.clone(), file.to_path_buf());
                    self.children.entry(child.clone()).or_default();
                    self.declare(file, &child, &dir.join(&name), items);
                }
            }
        }
    }

    /// The file of the deepest module along `segments`, read from module `at`; `None` for a
    /// path that leaves the crate (std, another crate, a local name).
    fn resolve(&self, at: &ModPath, segments: &[String]) -> Option<&PathBuf> {
        let first = segments.first()?;
        let (mut module, rest): (ModPath, &[String]) = match first.as_str() {
            "crate" => (Vec::new(), &segments[1..]),
            "self" | "super" => {
                let mut m = at.clone();
                let mut i = 0;
                while let Some(s) = segments.get(i) {
                    match s.as_str() {
                        "super" => {
                            m.pop();
                        }
                        "self" => {}
                        _ => break,
                    }
                    i += 1;
                }
                (m, &segments[i..])
            }
            name if self.children.get(at).is_some_and(|c| c.contains(name)) => {
                (at.clone(), segments)
            }
            _ => return None,
        };
        for s in rest {
            module.push(s.clone());
            if !self.file_of.contains_key(&module) {
                module.pop();
                break;
            }
        }
        self.file_of.get(&module)
    }

    /// Every file's arrows to the other files of the crate.
    fn arrows(&self) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
        let mut arrows = BTreeMap::new();
        for (file, module, syntax) in &self.files {
            let mut paths = PathCollector {
                stack: vec![module.clone()],
                found: Vec::new(),
            };
            paths.visit_file(syntax);
            let targets: BTreeSet<PathBuf> = paths
                .found
                .iter()
                .filter_map(|(at, segments)| self.resolve(at, segments))
                .filter(|target| *target != file)
                .cloned()
                .collect();
            arrows.insert(file.clone(), targets);
        }
        arrows
    }
}

/// Every path a file names, each with the module it is named in.
struct PathCollector {
    stack: Vec<ModPath>,
    found: Vec<(ModPath, Vec<String>)>,
}

impl PathCollector {
    fn here(&self) -> ModPath {
        self.stack.last().unwrap().clone()
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.record_with(prefix, &n.ident),
            syn::UseTree::Rename(r) => self.record_with(prefix, &r.ident),
            syn::UseTree::Glob(_) => {
                let at = self.here();
                self.found.push((at, prefix.clone()));
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }

    fn record_with(&mut self, prefix: &[String], last: &syn::Ident) {
        let mut segments = prefix.to_vec();
        if last != "self" {
            segments.push(last.to_string());
        }
        let at = self.here();
        self.found.push((at, segments));
    }

    /// Paths inside a macro's tokens (`format!`, `matches!`, ...), which syn leaves unparsed:
    /// every run of `ident :: ident ...`.
    fn tokens(&mut self, tokens: TokenStream) {
        let mut run: Vec<String> = Vec::new();
        let mut colons = 0;
        for token in tokens {
            match token {
                TokenTree::Ident(i) if run.is_empty() || colons == 2 => {
                    run.push(i.to_string());
                    colons = 0;
                }
                TokenTree::Punct(p) if p.as_char() == ':' && !run.is_empty() && colons < 2 => {
                    colons += 1;
                }
                other => {
                    self.flush(&mut run);
                    colons = 0;
                    match other {
                        TokenTree::Group(g) => self.tokens(g.stream()),
                        TokenTree::Ident(i) => run.push(i.to_string()),
                        _ => {}
                    }
                }
            }
        }
        self.flush(&mut run);
    }

    fn flush(&mut self, run: &mut Vec<String>) {
        if run.len() > 1 {
            let at = self.here();
            self.found.push((at, std::mem::take(run)));
        }
        run.clear();
    }
}

impl<'ast> Visit<'ast> for PathCollector {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        let mut inner = self.here();
        inner.push(m.ident.to_string());
        self.stack.push(inner);
        syn::visit::visit_item_mod(self, m);
        self.stack.pop();
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments = p.segments.iter().map(|s| s.ident.to_string()).collect();
        let at = self.here();
        self.found.push((at, segments));
        syn::visit::visit_path(self, p);
    }

    /// `pub(super)` names a module but imports nothing.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }
}

/// The files on one import circle each, as paths relative to `base`, for every circle.
fn circles(arrows: &BTreeMap<PathBuf, BTreeSet<PathBuf>>, base: &Path) -> Vec<Vec<String>> {
    // Tarjan's strongly connected components: each component of more than one file is a set
    // of files that reach each other.
    struct Walk<'a> {
        arrows: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: HashMap<&'a PathBuf, usize>,
        low: HashMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        components: Vec<Vec<&'a PathBuf>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a PathBuf) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.arrows.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    self.components.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        arrows,
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for v in arrows.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.components
        .into_iter()
        .map(|c| {
            let mut names: Vec<String> = c
                .iter()
                .map(|f| f.strip_prefix(base).unwrap_or(f).display().to_string())
                .collect();
            names.sort();
            names
        })
        .collect()
}

/// The crate roots of the workspace: the controller's library and binary, the worker's and
/// the medium emulator's.
fn crate_roots() -> Vec<PathBuf> {
    let root = Path::new(ROOT);
    [
        "src/lib.rs",
        "src/main.rs",
        "worker/src/lib.rs",
        "worker/src/main.rs",
        "medium/src/lib.rs",
    ]
    .iter()
    .map(|r| root.join(r))
    .filter(|p| p.exists())
    .collect()
}

#[test]
fn no_two_source_files_import_each_other_directly_or_in_a_loop() {
    let mut found = Vec::new();
    let mut files = 0;
    for root in crate_roots() {
        let tree = ModuleTree::load(&root);
        files += tree.files.len();
        for circle in circles(&tree.arrows(), Path::new(ROOT)) {
            found.push(circle.join(" <-> "));
        }
    }
    // A check that found nothing to read would pass for the wrong reason.
    assert!(files > 100, "only {files} source files were read");
    assert!(
        found.is_empty(),
        "files that import each other (directly or in a loop):\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_import_check_sees_a_circle_through_a_parents_re_export() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "mod a;\n");
    write("a/mod.rs", "mod b;\nmod c;\npub use b::B;\npub use c::h;\n");
    write("a/b.rs", "pub struct B;\n");
    // `pub(super)` names the parent but imports nothing from it.
    write(
        "a/c.rs",
        "pub(super) fn h() -> super::b::B { super::b::B }\n",
    );
    let tree = ModuleTree::load(&dir.path().join("lib.rs"));
    assert!(
        circles(&tree.arrows(), dir.path()).is_empty(),
        "the arrows only go down from mod.rs and across from c.rs to b.rs"
    );
    write("a/b.rs", "pub struct B;\nfn g() { crate::a::c::h(); }\n");
    write("a/c.rs", "use super::B;\npub fn h() {}\n");
    let tree = ModuleTree::load(&dir.path().join("lib.rs"));
    assert_eq!(
        circles(&tree.arrows(), dir.path()),
        vec![vec![
            "a/b.rs".to_owned(),
            "a/c.rs".to_owned(),
            "a/mod.rs".to_owned()
        ]]
    );
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn names_several_rooms_wanted_name_one_file_of_the_controller() {
    let files = rust_files(&Path::new(ROOT).join("src"));
    for name in ["paths.rs", "session.rs", "source.rs", "media.rs"] {
        let holders: Vec<_> = files
            .iter()
            .filter(|f| f.file_name().is_some_and(|n| n == name))
            .collect();
        assert!(
            holders.len() <= 1,
            "{name} names several files: {holders:?}"
        );
    }
}

/// Every type (struct, enum, union, trait, alias) defined in `items`, nested modules too.
fn type_names(items: &[syn::Item], out: &mut Vec<String>) {
    for item in items {
        match item {
            syn::Item::Struct(s) => out.push(s.ident.to_string()),
            syn::Item::Enum(e) => out.push(e.ident.to_string()),
            syn::Item::Union(u) => out.push(u.ident.to_string()),
            syn::Item::Trait(t) => out.push(t.ident.to_string()),
            syn::Item::Type(t) => out.push(t.ident.to_string()),
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    type_names(inner, out);
                }
            }
            _ => {}
        }
    }
}

#[test]
fn each_crate_has_one_cluster_event_host_and_verdict() {
    for crate_dir in ["src", "worker/src", "medium/src"] {
        let mut names = Vec::new();
        for file in rust_files(&Path::new(ROOT).join(crate_dir)) {
            let text = std::fs::read_to_string(&file).unwrap();
            type_names(&syn::parse_file(&text).unwrap().items, &mut names);
        }
        assert!(
            names.len() > 20,
            "{crate_dir}: only {} types found",
            names.len()
        );
        for name in ["Cluster", "Event", "Host", "Verdict"] {
            let count = names.iter().filter(|n| *n == name).count();
            assert!(count <= 1, "{crate_dir}: `{name}` names {count} types");
        }
    }
}

/// The names of the shipped topologies: each file's `name` and its file name.
fn topology_names() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for entry in std::fs::read_dir(Path::new(ROOT).join("topologies")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        names.insert(path.file_stem().unwrap().to_string_lossy().into_owned());
        let table: toml::Table = std::fs::read_to_string(&path).unwrap().parse().unwrap();
        if let Some(toml::Value::String(name)) = table.get("name") {
            names.insert(name.clone());
        }
    }
    names
}

/// Every string literal in a file, macro arguments included.
struct Literals(Vec<String>);

impl<'ast> Visit<'ast> for Literals {
    fn visit_lit_str(&mut self, s: &'ast syn::LitStr) {
        self.0.push(s.value());
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        fn walk(tokens: TokenStream, out: &mut Vec<String>) {
            for t in tokens {
                match t {
                    TokenTree::Literal(l) => {
                        if let Ok(syn::Lit::Str(s)) = syn::parse_str::<syn::Lit>(&l.to_string()) {
                            out.push(s.value());
                        }
                    }
                    TokenTree::Group(g) => walk(g.stream(), out),
                    _ => {}
                }
            }
        }
        walk(m.tokens.clone(), &mut self.0);
    }
}

#[test]
fn the_general_report_names_no_topology() {
    let names = topology_names();
    assert!(names.len() >= 5, "shipped topologies not found: {names:?}");
    let report = Path::new(ROOT).join("src/report");
    let study = report.join("study");
    let mut found = Vec::new();
    for file in rust_files(&report) {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut literals = Literals(Vec::new());
        literals.visit_file(&syn::parse_file(&text).unwrap());
        if file.starts_with(&study) {
            continue;
        }
        for literal in literals.0 {
            if let Some(name) = names.iter().find(|n| literal.contains(n.as_str())) {
                found.push(format!("{}: {literal:?} names {name}", file.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "topology names outside report/study/:\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_topology_name_check_reads_macro_arguments() {
    let file = syn::parse_file(r#"fn f() { let _ = format!("{} on single-net", 1); }"#).unwrap();
    let mut literals = Literals(Vec::new());
    literals.visit_file(&file);
    assert_eq!(literals.0, vec!["{} on single-net".to_owned()]);
}

/// Every long option of every worker subcommand, as the worker's own parser defines them.
fn worker_options() -> BTreeSet<String> {
    use clap::CommandFactory;
    fn walk(command: &clap::Command, out: &mut BTreeSet<String>) {
        for arg in command.get_arguments() {
            if let Some(long) = arg.get_long() {
                out.insert(format!("--{long}"));
            }
        }
        for sub in command.get_subcommands() {
            walk(sub, out);
        }
    }
    let mut out = BTreeSet::new();
    walk(&orchestrate_worker::invocation::Cli::command(), &mut out);
    // clap's own, and options the controller also gives other programs by the same name:
    // docker's `--format`, `orchestrate cluster --name` and iperf3's `--connect-timeout`.
    for shared in [
        "--help",
        "--version",
        "--format",
        "--name",
        "--connect-timeout",
    ] {
        out.remove(shared);
    }
    out
}

#[test]
fn the_controller_spells_no_worker_option() {
    let options = worker_options();
    assert!(
        options.contains("--connect") && options.contains("--listen"),
        "the worker's options were not read: {options:?}"
    );
    let mut found = Vec::new();
    for file in rust_files(&Path::new(ROOT).join("src")) {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut literals = Literals(Vec::new());
        literals.visit_file(&syn::parse_file(&text).unwrap());
        for literal in literals.0 {
            for word in literal.split(|c: char| c.is_whitespace() || c == '=') {
                if options.contains(word) {
                    found.push(format!("{}: {literal:?}", file.display()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "worker options spelled by hand instead of through orchestrate_worker::invocation:\n  {}",
        found.join("\n  ")
    );
}

/// The controller's layers in the order `src/lib.rs` lists them: `//! 1. [`spec`] ...`.
fn documented_layers() -> Vec<String> {
    let lib = std::fs::read_to_string(Path::new(ROOT).join("src/lib.rs")).unwrap();
    lib.lines()
        .filter_map(|l| l.strip_prefix("//! "))
        .filter_map(|l| {
            let (number, rest) = l.split_once(". [`")?;
            number.parse::<u32>().ok()?;
            Some(rest.split_once('`')?.0.to_owned())
        })
        .collect()
}

#[test]
fn each_layer_imports_only_those_lib_rs_lists_before_it() {
    let layers = documented_layers();
    let src = Path::new(ROOT).join("src");
    let tree = ModuleTree::load(&src.join("lib.rs"));
    let declared: BTreeSet<&String> = tree.children[&Vec::new()].iter().collect();
    assert_eq!(
        declared,
        layers.iter().collect(),
        "src/lib.rs's numbered list must name every layer the crate declares"
    );
    let layer_of = |file: &Path| {
        let top = file.strip_prefix(&src).ok()?.components().next()?;
        let name = top.as_os_str().to_string_lossy();
        let name = name.strip_suffix(".rs").unwrap_or(&name);
        layers.iter().position(|l| l == name)
    };
    let mut upward = Vec::new();
    for (file, targets) in tree.arrows() {
        let Some(from) = layer_of(&file) else {
            continue;
        };
        for target in targets {
            if let Some(to) = layer_of(&target)
                && to > from
            {
                upward.push(format!(
                    "{} ({}) imports {} ({})",
                    file.strip_prefix(&src).unwrap().display(),
                    layers[from],
                    target.strip_prefix(&src).unwrap().display(),
                    layers[to]
                ));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports against the layer order of src/lib.rs:\n  {}",
        upward.join("\n  ")
    );
}
