//! Dumping, loading and pruning a [`CcMap`].
//!
//! The paper dumps its map to XML at VM shutdown, naming methods by full name so that maps of
//! different runs can be compared. Ours is a line-oriented text file that lists every node in
//! creation order, so loading rebuilds an identical map (`load(dump(m)) == m`):
//!
//! ```text
//! # hpm ccmap 1
//! N <samples> <repeats>
//! M <id> <total> <top> <method name, rest of line>
//! S <id> <caller method id> <offset>
//! C <id> <site id> <callee method id> <count>
//! R <id> c|r <parent callee id | parent callee-ref id> <site id>
//! r <id> <site-ref id> <callee id> <count>
//! ```
//!
//! Pruning (the paper: "rather quick removing of nodes, which appear cold") keeps the nodes
//! whose counter reaches a minimum and rebuilds the map from them.

use std::fmt::Write as _;
use std::path::Path;

use super::ccmap::*;
use super::{fields, parse_u64};
use crate::load::LoadError;

const HEADER: &str = "# hpm ccmap 1";
const KINDS: [&str; 5] = ["M", "S", "C", "R", "r"];

/// The text of `line` after its first `n` whitespace-separated fields, trimmed.
fn rest_after(line: &str, n: usize) -> &str {
    let mut rest = line.trim_start();
    for _ in 0..n {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        rest = rest[end..].trim_start();
    }
    rest.trim_end()
}

/// The nodes of a map without their derived lists and indexes.
#[derive(Default)]
struct Parts {
    samples: u64,
    repeats: u64,
    methods: Vec<(String, u64, u64)>,
    sites: Vec<(MethodId, i32)>,
    callees: Vec<(SiteId, MethodId, u64)>,
    site_refs: Vec<(RefParent, SiteId)>,
    callee_refs: Vec<(SiteRefId, CalleeId, u64)>,
}

impl CcMap {
    /// The map as text (see the module documentation).
    pub fn dump(&self) -> String {
        let mut s = format!("{HEADER}\nN {} {}\n", self.samples, self.repeats);
        for (i, m) in self.methods.iter().enumerate() {
            let _ = writeln!(s, "M {i} {} {} {}", m.total, m.top, m.name);
        }
        for (i, x) in self.sites.iter().enumerate() {
            let _ = writeln!(s, "S {i} {} {}", x.caller, x.offset);
        }
        for (i, c) in self.callees.iter().enumerate() {
            let _ = writeln!(s, "C {i} {} {} {}", c.site, c.method, c.count);
        }
        for (i, r) in self.site_refs.iter().enumerate() {
            let (k, p) = match r.parent {
                RefParent::Callee(c) => ('c', c),
                RefParent::CalleeRef(r) => ('r', r),
            };
            let _ = writeln!(s, "R {i} {k} {p} {}", r.site);
        }
        for (i, r) in self.callee_refs.iter().enumerate() {
            let _ = writeln!(s, "r {i} {} {} {}", r.site_ref, r.callee, r.count);
        }
        s
    }

    pub fn save(&self, path: &Path) -> Result<(), String> {
        crate::outfile::write(path, self.dump().as_bytes()).map_err(|e| e.to_string())
    }

    pub fn load(path: &Path) -> Result<CcMap, LoadError> {
        super::load_text(path, CcMap::parse_dump)
    }

    /// Parses a dump; errors carry the 1-based line.
    pub fn parse_dump(text: &str) -> Result<CcMap, (usize, String)> {
        let mut p = Parts::default();
        let mut lines = text.lines().enumerate();
        match lines.next() {
            Some((_, l)) if l.trim_end() == HEADER => {}
            _ => return Err((1, format!("not a CC-Map dump: the first line must be `{HEADER}`"))),
        }
        // Line of every node, per kind (M, S, C, R, r), for errors found after parsing.
        let mut at: [Vec<usize>; 5] = Default::default();
        for (i, line) in lines {
            let no = i + 1;
            let Some(f) = fields(line) else { continue };
            let err = |m: String| (no, m);
            let id_ok = |expected: usize| -> Result<(), (usize, String)> {
                let got = parse_u64("id", f.get(1).copied().unwrap_or("")).map_err(err)?;
                if got as usize != expected {
                    return Err((no, format!("expected id {expected}, got {got}: nodes must be listed in id order")));
                }
                Ok(())
            };
            let num = |k: usize, what: &str| -> Result<u64, (usize, String)> {
                let s = f.get(k).ok_or_else(|| (no, format!("missing {what}")))?;
                parse_u64(what, s).map_err(err)
            };
            let id32 = |k: usize, what: &str| -> Result<u32, (usize, String)> {
                u32::try_from(num(k, what)?).map_err(|_| (no, format!("{what} is too large")))
            };
            match f[0] {
                "N" => {
                    p.samples = num(1, "samples")?;
                    p.repeats = num(2, "repeats")?;
                }
                "M" => {
                    id_ok(p.methods.len())?;
                    let name = rest_after(line, 4);
                    if name.is_empty() {
                        return Err((no, "method line without a name".into()));
                    }
                    p.methods.push((name.to_string(), num(2, "total")?, num(3, "top")?));
                }
                "S" => {
                    id_ok(p.sites.len())?;
                    let off = f.get(3).ok_or_else(|| (no, "missing offset".to_string()))?;
                    let off: i32 = off.parse().map_err(|_| (no, format!("offset `{off}` is not an integer")))?;
                    p.sites.push((id32(2, "caller")?, off));
                }
                "C" => {
                    id_ok(p.callees.len())?;
                    p.callees.push((id32(2, "site")?, id32(3, "callee method")?, num(4, "count")?));
                }
                "R" => {
                    id_ok(p.site_refs.len())?;
                    let parent = match f.get(2).copied() {
                        Some("c") => RefParent::Callee(id32(3, "parent callee")?),
                        Some("r") => RefParent::CalleeRef(id32(3, "parent callee ref")?),
                        _ => return Err((no, "parent kind must be `c` (callee) or `r` (callee ref)".into())),
                    };
                    p.site_refs.push((parent, id32(4, "site")?));
                }
                "r" => {
                    id_ok(p.callee_refs.len())?;
                    p.callee_refs.push((id32(2, "site ref")?, id32(3, "callee")?, num(4, "count")?));
                }
                other => return Err((no, format!("unknown node kind `{other}`; expected N, M, S, C, R or r"))),
            }
            if let Some(k) = KINDS.iter().position(|&k| k == f[0]) {
                at[k].push(no);
            }
        }
        from_parts(p).map_err(|(kind, id, m)| {
            let k = KINDS.iter().position(|&k| k == kind).unwrap_or(0);
            (at[k].get(id).copied().unwrap_or(0), m)
        })
    }

    /// Removes the nodes whose counter is below `min_count` (and whatever hangs below them).
    pub fn prune(&self, min_count: u64) -> CcMap {
        let keep_m: Vec<bool> = self.methods.iter().map(|m| m.total >= min_count).collect();
        let keep_c: Vec<bool> = self
            .callees
            .iter()
            .map(|c| {
                c.count >= min_count && keep_m[c.method as usize] && keep_m[self.sites[c.site as usize].caller as usize]
            })
            .collect();
        let keep_s: Vec<bool> = self.sites.iter().map(|s| s.callees.iter().any(|&c| keep_c[c as usize])).collect();
        let mut keep_r = vec![false; self.callee_refs.len()];
        for (i, r) in self.callee_refs.iter().enumerate() {
            let parent_kept = match self.site_refs[r.site_ref as usize].parent {
                RefParent::Callee(c) => keep_c[c as usize],
                RefParent::CalleeRef(p) => keep_r[p as usize],
            };
            keep_r[i] = parent_kept && r.count >= min_count && keep_c[r.callee as usize];
        }
        let keep_sr: Vec<bool> = self.site_refs.iter().map(|s| s.callees.iter().any(|&r| keep_r[r as usize])).collect();
        let remap = |keep: &[bool]| -> Vec<u32> {
            let mut next = 0;
            keep.iter()
                .map(|&k| {
                    let id = next;
                    next += k as u32;
                    id
                })
                .collect()
        };
        let (nm, ns, nc, nsr, nr) = (remap(&keep_m), remap(&keep_s), remap(&keep_c), remap(&keep_sr), remap(&keep_r));
        let mut p = Parts { samples: self.samples, repeats: self.repeats, ..Parts::default() };
        p.methods = kept(&self.methods, &keep_m, |m| (m.name.clone(), m.total, m.top));
        p.sites = kept(&self.sites, &keep_s, |s| (nm[s.caller as usize], s.offset));
        p.callees = kept(&self.callees, &keep_c, |c| (ns[c.site as usize], nm[c.method as usize], c.count));
        p.site_refs = kept(&self.site_refs, &keep_sr, |s| {
            let parent = match s.parent {
                RefParent::Callee(c) => RefParent::Callee(nc[c as usize]),
                RefParent::CalleeRef(r) => RefParent::CalleeRef(nr[r as usize]),
            };
            (parent, ns[s.site as usize])
        });
        p.callee_refs =
            kept(&self.callee_refs, &keep_r, |r| (nsr[r.site_ref as usize], nc[r.callee as usize], r.count));
        // Kept nodes only refer to kept nodes, in the same relative order: cannot fail.
        from_parts(p).unwrap_or_default()
    }
}

fn kept<T, U>(v: &[T], keep: &[bool], f: impl Fn(&T) -> U) -> Vec<U> {
    v.iter().zip(keep).filter(|(_, &k)| k).map(|(x, _)| f(x)).collect()
}

type PartError = (&'static str, usize, String);

/// Rebuilds a map from its nodes, checking every reference; the derived lists come out in id
/// order, as incremental construction makes them.
fn from_parts(p: Parts) -> Result<CcMap, PartError> {
    let mut m = CcMap { samples: p.samples, repeats: p.repeats, ..CcMap::default() };
    let check = |kind: &'static str, id: usize, ok: bool, what: &str| -> Result<(), PartError> {
        if ok {
            Ok(())
        } else {
            Err((kind, id, format!("{what} refers to a node that does not exist or comes later")))
        }
    };
    for (i, (name, total, top)) in p.methods.into_iter().enumerate() {
        if m.method_index.insert(name.clone(), i as MethodId).is_some() {
            return Err(("M", i, format!("method `{name}` is listed twice")));
        }
        m.methods.push(MethodProfile { name, total, top, sites: Ids::new() });
    }
    for (i, (caller, offset)) in p.sites.into_iter().enumerate() {
        check("S", i, (caller as usize) < m.methods.len(), "caller")?;
        if m.site_index.insert((caller, offset), i as SiteId).is_some() {
            return Err(("S", i, "call site is listed twice".into()));
        }
        m.methods[caller as usize].sites.push(i as SiteId);
        m.sites.push(CallSite { caller, offset, callees: Ids::new(), contexts: Ids::new() });
    }
    for (i, (site, method, count)) in p.callees.into_iter().enumerate() {
        check("C", i, (site as usize) < m.sites.len() && (method as usize) < m.methods.len(), "callee")?;
        if m.callee_index.insert((site, method), i as CalleeId).is_some() {
            return Err(("C", i, "callee is listed twice".into()));
        }
        m.sites[site as usize].callees.push(i as CalleeId);
        m.callees.push(Callee { site, method, count, sites: Ids::new(), contexts: Ids::new() });
    }
    // Site refs may hang below callee refs listed later in the file; check those after.
    let mut sr_parent_ref: crate::hash::IntMap<usize, CalleeRefId> = Default::default();
    for (i, (parent, site)) in p.site_refs.iter().copied().enumerate() {
        check("R", i, (site as usize) < m.sites.len(), "site")?;
        let caller = m.sites[site as usize].caller;
        match parent {
            RefParent::Callee(c) => {
                check("R", i, (c as usize) < m.callees.len(), "parent")?;
                if m.callees[c as usize].method != caller {
                    return Err(("R", i, "the call site is not in the method the parent call reaches".into()));
                }
            }
            RefParent::CalleeRef(r) => {
                sr_parent_ref.insert(i, r);
            }
        }
        if m.site_ref_index.insert((parent, site), i as SiteRefId).is_some() {
            return Err(("R", i, "call-site ref is listed twice".into()));
        }
        m.sites[site as usize].contexts.push(i as SiteRefId);
        m.site_refs.push(CallSiteRef { site, parent, callees: Ids::new() });
    }
    for (i, (site_ref, callee, count)) in p.callee_refs.into_iter().enumerate() {
        check("r", i, (site_ref as usize) < m.site_refs.len() && (callee as usize) < m.callees.len(), "callee ref")?;
        if m.callees[callee as usize].site != m.site_refs[site_ref as usize].site {
            return Err(("r", i, "the callee belongs to another call site than its call-site ref".into()));
        }
        if m.callee_ref_index.insert((site_ref, callee), i as CalleeRefId).is_some() {
            return Err(("r", i, "callee ref is listed twice".into()));
        }
        m.site_refs[site_ref as usize].callees.push(i as CalleeRefId);
        m.callees[callee as usize].contexts.push(i as CalleeRefId);
        m.callee_refs.push(CalleeRef { callee, site_ref, count, sites: Ids::new() });
    }
    let mut by_ref: Vec<(CalleeRefId, usize)> = sr_parent_ref.into_iter().map(|(sr, r)| (r, sr)).collect();
    by_ref.sort_by_key(|&(_, sr)| sr);
    for (r, sr) in by_ref {
        // A parent must come before its child's site ref, which rules out cycles.
        let ok = (r as usize) < m.callee_refs.len() && (m.callee_refs[r as usize].site_ref as usize) < sr;
        check("R", sr, ok, "parent")?;
        let parent_callee = m.callee_refs[r as usize].callee;
        if m.callees[parent_callee as usize].method != m.sites[m.site_refs[sr].site as usize].caller {
            return Err(("R", sr, "the call site is not in the method the parent call reaches".into()));
        }
        m.callee_refs[r as usize].sites.push(sr as SiteRefId);
    }
    for (i, r) in m.site_refs.iter().enumerate() {
        if let RefParent::Callee(c) = r.parent {
            m.callees[c as usize].sites.push(i as SiteRefId);
        }
    }
    // Contexts deeper than the map ever builds are refused: they would make every path query
    // walk them. A parent's site ref comes first (checked above), so one pass in order works.
    let mut depth = vec![0usize; m.site_refs.len()];
    for sr in 0..m.site_refs.len() {
        depth[sr] = match m.site_refs[sr].parent {
            RefParent::Callee(_) => 0,
            RefParent::CalleeRef(r) => depth[m.callee_refs[r as usize].site_ref as usize] + 1,
        };
        if depth[sr] >= CCMAP_MAX_CONTEXT {
            return Err((
                "R",
                sr,
                format!("context deeper than {CCMAP_MAX_CONTEXT} calls: hpm never writes such a map"),
            ));
        }
    }
    Ok(m)
}
