//! Queries on the Call Context Map (Chilingarova & Safonov, section 3.1.3): hot methods,
//! calls between two methods in any context, the contexts of a call found through the general
//! nodes' `Context` references, hot call sequences and single-target call sites.

use super::ccmap::*;
use super::sat_sum;
use crate::hash::IntMap;

impl CcMap {
    /// Methods by executions, hottest first.
    pub fn hottest_methods(&self, n: usize) -> Vec<&MethodProfile> {
        let mut v: Vec<&MethodProfile> = self.methods.iter().collect();
        v.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.name.cmp(&b.name)));
        v.truncate(n);
        v
    }

    /// Calls from `caller` to `callee` in any context, over all call sites.
    pub fn calls(&self, caller: &str, callee: &str) -> u64 {
        sat_sum(self.general_callees(caller, callee).map(|c| c.count))
    }

    fn general_callees<'a>(&'a self, caller: &str, callee: &str) -> impl Iterator<Item = &'a Callee> + 'a {
        let caller = self.method_index.get(caller).copied();
        let callee = self.method_index.get(callee).copied();
        let sites: &'a [SiteId] = match caller {
            Some(m) => &self.methods[m as usize].sites,
            None => &[],
        };
        sites
            .iter()
            .flat_map(move |&s| self.sites[s as usize].callees.iter())
            .map(move |&c| &self.callees[c as usize])
            .filter(move |c| Some(c.method) == callee)
    }

    /// Methods of the call sequence a reference node stands for, outermost first.
    pub fn ref_path(&self, r: CalleeRefId) -> Vec<MethodId> {
        let mut rev = Vec::new();
        let mut cur = r;
        loop {
            let cr = &self.callee_refs[cur as usize];
            rev.push(self.callees[cr.callee as usize].method);
            match self.site_refs[cr.site_ref as usize].parent {
                RefParent::CalleeRef(p) => cur = p,
                RefParent::Callee(c) => {
                    let c = &self.callees[c as usize];
                    rev.push(c.method);
                    rev.push(self.sites[c.site as usize].caller);
                    break;
                }
            }
        }
        rev.reverse();
        rev
    }

    pub(super) fn names(&self, ids: &[MethodId]) -> Vec<String> {
        ids.iter().map(|&m| self.name(m).to_string()).collect()
    }

    /// The contexts in which `caller` called `callee`: the longer call sequences ending in that
    /// call, found through the general node's `Context` references, with their counts.
    pub fn call_contexts(&self, caller: &str, callee: &str) -> Vec<PathCount> {
        let mut out: IntMap<Vec<MethodId>, u64> = IntMap::default();
        for c in self.general_callees(caller, callee) {
            for &r in &c.contexts {
                let e = out.entry(self.ref_path(r)).or_default();
                *e = e.saturating_add(self.callee_refs[r as usize].count);
            }
        }
        self.sorted_paths(out)
    }

    fn sorted_paths(&self, m: IntMap<Vec<MethodId>, u64>) -> Vec<PathCount> {
        let mut v: Vec<(Vec<MethodId>, u64)> = m.into_iter().collect();
        self.sort_top(&mut v, usize::MAX);
        self.named(v)
    }

    /// The `n` first of `v` in the order of [`PathCount`] lists (hottest, then longest, then
    /// by names), sorted; names are compared in place, never copied.
    fn sort_top(&self, v: &mut Vec<(Vec<MethodId>, u64)>, n: usize) {
        let order = |a: &(Vec<MethodId>, u64), b: &(Vec<MethodId>, u64)| {
            b.1.cmp(&a.1)
                .then(b.0.len().cmp(&a.0.len()))
                .then_with(|| a.0.iter().map(|&m| self.name(m)).cmp(b.0.iter().map(|&m| self.name(m))))
        };
        if n < v.len() {
            v.select_nth_unstable_by(n, order);
            v.truncate(n);
        }
        v.sort_unstable_by(order);
    }

    fn named(&self, v: Vec<(Vec<MethodId>, u64)>) -> Vec<PathCount> {
        v.into_iter().map(|(p, count)| PathCount { methods: self.names(&p), count }).collect()
    }

    /// Hottest call sequences of three or more methods. A sequence whose count all went on to
    /// longer sequences is left out (those say more).
    pub fn hottest_paths(&self, n: usize) -> Vec<PathCount> {
        let mut v = self.all_paths(true);
        self.sort_top(&mut v, n);
        self.named(v)
    }

    /// Hottest call sequences starting at `method`.
    pub fn hottest_paths_from(&self, method: &str, n: usize) -> Vec<PathCount> {
        let Some(&first) = self.method_index.get(method) else {
            return Vec::new();
        };
        let mut v = self.all_paths(true);
        v.retain(|(p, _)| p[0] == first);
        self.sort_top(&mut v, n);
        self.named(v)
    }

    /// Every call sequence with its count, unsorted, as method ids.
    fn all_paths(&self, drop_prefixes: bool) -> Vec<(Vec<MethodId>, u64)> {
        let mut out: IntMap<Vec<MethodId>, u64> = IntMap::default();
        for (i, r) in self.callee_refs.iter().enumerate() {
            if drop_prefixes && r.count > 0 && sat_sum(self.children_of_ref(r).map(|c| c.count)) >= r.count {
                continue;
            }
            let e = out.entry(self.ref_path(i as CalleeRefId)).or_default();
            *e = e.saturating_add(r.count);
        }
        out.into_iter().collect()
    }

    fn children_of_ref<'a>(&'a self, r: &'a CalleeRef) -> impl Iterator<Item = &'a CalleeRef> + 'a {
        r.sites
            .iter()
            .flat_map(move |&s| self.site_refs[s as usize].callees.iter())
            .map(move |&c| &self.callee_refs[c as usize])
    }

    /// Total count of a call sequence (two or more methods, outermost first) and how it splits
    /// among the callers of its first method: Figure 2's question "is B->C->D hot in every
    /// context, or only below A?".
    pub fn path_contexts(&self, path: &[&str]) -> Option<PathContexts> {
        if path.len() < 2 {
            return None;
        }
        let ids: Option<Vec<MethodId>> = path.iter().map(|m| self.method_index.get(*m).copied()).collect();
        let ids = ids?;
        let (n, last) = (ids.len(), path.len() - 1);
        let mut count = if n == 2 { self.calls(path[0], path[1]) } else { 0 };
        let mut callers: IntMap<MethodId, u64> = IntMap::default();
        for c in self.general_callees(path[last - 1], path[last]) {
            for &r in &c.contexts {
                let p = self.ref_path(r);
                let k = self.callee_refs[r as usize].count;
                if p == ids {
                    count = count.saturating_add(k);
                } else if p.len() == n + 1 && p[1..] == ids[..] {
                    let e = callers.entry(p[0]).or_default();
                    *e = e.saturating_add(k);
                }
            }
        }
        if count == 0 {
            return None;
        }
        let mut callers: Vec<(String, u64)> = callers.into_iter().map(|(m, k)| (self.name(m).to_string(), k)).collect();
        callers.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let seen = sat_sum(callers.iter().map(|c| c.1));
        Some(PathContexts { count, callers, without_caller: count.saturating_sub(seen) })
    }

    /// Call sites that have seen exactly one target in any context (`CallSite` level),
    /// hottest first.
    pub fn single_target_sites(&self) -> Vec<SingleTarget> {
        let mut v: Vec<SingleTarget> = self
            .sites
            .iter()
            .filter(|s| s.callees.len() == 1)
            .map(|s| {
                let c = &self.callees[s.callees[0] as usize];
                SingleTarget {
                    context: vec![self.name(s.caller).to_string()],
                    offset: s.offset,
                    callee: self.name(c.method).to_string(),
                    count: c.count,
                }
            })
            .collect();
        sort_targets(&mut v);
        v
    }

    /// Call sites with several targets overall that saw one target in a particular context
    /// (`CallSiteRef` level): candidates for devirtualisation after inlining into that context.
    pub fn single_target_in_context(&self) -> Vec<SingleTarget> {
        let mut v = Vec::new();
        for sr in &self.site_refs {
            if sr.callees.len() != 1 || self.sites[sr.site as usize].callees.len() < 2 {
                continue;
            }
            let r = &self.callee_refs[sr.callees[0] as usize];
            let mut path = self.ref_path(sr.callees[0]);
            let callee = path.pop().map(|m| self.name(m).to_string()).unwrap_or_default();
            v.push(SingleTarget {
                context: self.names(&path),
                offset: self.sites[sr.site as usize].offset,
                callee,
                count: r.count,
            });
        }
        sort_targets(&mut v);
        v
    }
}

fn sort_targets(v: &mut [SingleTarget]) {
    v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.context.cmp(&b.context)).then(a.offset.cmp(&b.offset)));
}
