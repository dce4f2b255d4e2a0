//! Per-method rows of a calling context tree, shared by the report and the exit summary.

use std::collections::HashSet;

use crate::cct::{Cct, MethodTotals};
use crate::hash::FastBuild;

/// One method (frame name) with its totals.
pub(crate) struct Row<'a> {
    pub name: &'a str,
    pub t: MethodTotals,
}

/// Methods by self samples, then total samples, then name. With `skip_threads`, the names of
/// the root's children (thread frames) are left out.
pub(crate) fn method_rows(cct: &Cct, skip_threads: bool) -> Vec<Row<'_>> {
    let skip: HashSet<&str, FastBuild> = if skip_threads {
        cct.root().children.iter().map(|&c| &*cct.node(c).name).collect()
    } else {
        HashSet::default()
    };
    let mut rows: Vec<Row> =
        cct.method_totals().into_iter().filter(|(n, _)| !skip.contains(n)).map(|(name, t)| Row { name, t }).collect();
    rows.sort_by(|a, b| {
        b.t.self_samples.cmp(&a.t.self_samples).then(b.t.total_samples.cmp(&a.t.total_samples)).then(a.name.cmp(b.name))
    });
    rows
}
