//! docs/design.md names the code it describes: every source path it writes in backticks (a
//! `.rs` file, or a directory ending in `/`) must exist in the tree, looked up from the
//! repository's root and from each crate's `src/` (where the module pictures name them), so a
//! module renamed or removed without its picture fails here. No JVM.

use std::path::Path;

use hpm_tests::workspace_root;

/// Where a path written in design.md may start: the repository, or a crate's sources.
const ROOTS: &[&str] = &[
    "",
    "agent/jvm/src",
    "agent/profile/src",
    "agent/capture/src",
    "agent/resolve/src",
    "agent/push/src",
    "agent/cli/src",
    "tests/tests",
];

/// The backticked spans of `text` that name a source file or directory: `x.rs`, `a/b.rs`,
/// `dir/`, with `{a, b}` groups expanded (`processor/{intake, chain}.rs`).
fn named_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, span) in text.split('`').enumerate() {
        if i % 2 == 0 || span.contains(' ') && !span.contains('{') {
            continue;
        }
        for p in expand(span) {
            let looks_like_path = p.ends_with(".rs") || (p.ends_with('/') && p.len() > 1);
            let plain = p.chars().all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
            if looks_like_path && plain && !p.starts_with('/') && !p.contains("..") {
                out.push(p);
            }
        }
    }
    out
}

/// `pre{a, b}post` → `preapost`, `prebpost` (one group); other spans as they are.
fn expand(span: &str) -> Vec<String> {
    let (Some(open), Some(close)) = (span.find('{'), span.find('}')) else { return vec![span.to_string()] };
    if close < open {
        return Vec::new();
    }
    let (pre, post) = (&span[..open], &span[close + 1..]);
    span[open + 1..close].split(',').map(|m| format!("{pre}{}{post}", m.trim())).collect()
}

fn exists(root: &Path, p: &str) -> bool {
    ROOTS.iter().any(|r| root.join(r).join(p).exists())
}

#[test]
fn every_source_path_design_md_names_exists() {
    let root = workspace_root();
    let text = std::fs::read_to_string(root.join("docs/design.md")).unwrap();
    let named = named_paths(&text);
    assert!(named.len() > 40, "design.md names only {} source paths: did its pictures go?", named.len());
    let missing: Vec<&String> = named.iter().filter(|p| !exists(&root, p)).collect();
    assert!(missing.is_empty(), "docs/design.md names source paths that do not exist: {missing:?}");
}

#[test]
fn paths_are_found_in_backticks_with_groups_expanded() {
    let text = "see `processor/{intake, chain}.rs` and `source/`, not `a b` nor `x.rs` `";
    assert_eq!(named_paths(text), ["processor/intake.rs", "processor/chain.rs", "source/", "x.rs"]);
}
