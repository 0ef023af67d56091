//! The shape of the code: inside every crate, modules depend on each other
//! without cycles (errors at the bottom, registries at the top), so that a
//! module can be read, tested and moved with what it names and nothing that
//! names it back.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::workspace_root;

/// A crate's modules (`a::b` for src/a/b.rs or src/a/b/mod.rs) and the
/// modules each names through `crate::` paths outside comments.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut sources = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(src).unwrap().with_extension("");
                let mut name = rel.to_string_lossy().replace('/', "::");
                if let Some(parent) = name.strip_suffix("::mod") {
                    name = parent.to_string();
                }
                let code: String = std::fs::read_to_string(&path)
                    .unwrap()
                    .lines()
                    .map(|l| l.split("//").next().unwrap_or(""))
                    .collect::<Vec<_>>()
                    .join("\n");
                sources.insert(name, code);
            }
        }
    }
    let mut graph = BTreeMap::new();
    for (module, code) in &sources {
        let mut uses = BTreeSet::new();
        for (i, _) in code.match_indices("crate::") {
            let path: String = code[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
            // The longest prefix that is a module of this crate.
            if let Some(target) = (1..=parts.len())
                .rev()
                .map(|k| parts[..k].join("::"))
                .find(|m| sources.contains_key(m))
                && &target != module
            {
                uses.insert(target);
            }
        }
        graph.insert(module.clone(), uses);
    }
    graph
}

/// One cycle of `graph`, if it has any (depth-first search).
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|p| p == node) {
            let mut cycle = path[start..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in &graph[node] {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_crate_has_a_module_cycle() {
    let root = workspace_root();
    let mut crates = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let src = entry.unwrap().path().join("src");
        if !src.join("lib.rs").is_file() && !src.join("main.rs").is_file() {
            continue;
        }
        crates += 1;
        let graph = module_graph(&src);
        if let Some(cycle) = find_cycle(&graph) {
            panic!("{}: module cycle {}", src.display(), cycle.join(" -> "));
        }
    }
    assert!(crates >= 8, "found only {crates} crates under {}", root.display());
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("error", vec![]),
        ("verify", vec!["workload"]),
        ("workload", vec!["error", "verify"]),
    ]
    .into_iter()
    .map(|(m, uses)| (m.to_string(), uses.into_iter().map(String::from).collect()))
    .collect();
    let cycle = find_cycle(&graph).unwrap();
    assert_eq!(cycle.first(), cycle.last());
    assert!(cycle.contains(&"verify".to_string()) && cycle.contains(&"workload".to_string()));
}
