//! Call Context Map (CC-Map) of Chilingarova & Safonov, section 3.1.
//!
//! A hash table of [`MethodProfile`]s (total executions per method) refers to [`CallSite`]s,
//! which refer to [`Callee`]s holding the number of calls from the caller to one callee *in any
//! context*. For every call sequence seen in a sample, a tree of reference nodes —
//! [`CallSiteRef`] and [`CalleeRef`] — hangs below the general `Callee` of its first call; a
//! `CalleeRef` counts the calls made *in that context*. Every general node keeps `contexts`
//! references to the reference nodes standing for the same call elsewhere (Figure 3), so the
//! contexts of a hot call are found by following references, not by searching trees.
//!
//! Samples are processed as in section 3.1.4: a buffer holds the frames from the top of the
//! stack to the outermost frame or to the first frame already visited by an earlier sample
//! (which is recorded, as it made the new call), and for `i` over the buffer:
//! `MethodProfile(buf[i])++`; if `i > 0`, `Callee(buf[i] -> buf[i-1])++`; then for
//! `j = i-2 .. 0`, `CalleeRef(buf[j])++` along the path from that `Callee`.
//!
//! That inner loop makes the map grow with the square of the stack depth (a 20,000-frame stack
//! alone would make 200 million reference nodes), so the path below a call is followed for at
//! most [`CCMAP_MAX_CONTEXT`] calls: every call sequence of up to that many calls after its
//! first is counted exactly, a longer one as the shorter sequences it contains. The bound
//! covers what the map is for, contexts for inlining decisions (HotSpot inlines at most 15
//! levels deep).
//!
//! Queries are in `ccmap_query.rs`, dump/load and pruning in `ccmap_io.rs`.

use crate::cct::{group_samples, Cct, NodeId, ROOT};
use crate::hash::IntMap;
pub use crate::limits::CCMAP_MAX_CONTEXT;
use crate::model::Recording;

pub type MethodId = u32;
pub type SiteId = u32;
pub type CalleeId = u32;
pub type SiteRefId = u32;
pub type CalleeRefId = u32;

/// A node's list of ids: the first few inline, so the millions of reference nodes of a deep
/// profile (most with one child) cost no allocation each.
pub type Ids = smallvec::SmallVec<[u32; 4]>;

/// One frame of a sample: the method and, for callers, the offset of the call instruction
/// (bytecode index; -1 where unknown, e.g. from collapsed stacks: one call site per method).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CcFrame {
    pub method: String,
    pub offset: i32,
}

impl CcFrame {
    pub fn new(method: &str, offset: i32) -> CcFrame {
        CcFrame { method: method.to_string(), offset }
    }
}

/// A sample buffer: frames from the top of the stack (index 0) outwards.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct CcSample {
    pub frames: Vec<CcFrame>,
    /// The walk stopped at a frame already visited by an earlier sample (the last frame).
    pub stopped_at_visited: bool,
}

impl CcSample {
    /// A complete sample from method names, top of stack first, offsets unknown.
    pub fn of(top_first: &[&str]) -> CcSample {
        CcSample { frames: top_first.iter().map(|m| CcFrame::new(m, -1)).collect(), stopped_at_visited: false }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct MethodProfile {
    pub name: String,
    /// Executions: frames of this method seen in samples (the paper's total counter).
    pub total: u64,
    /// Samples with this method on top of the stack.
    pub top: u64,
    pub sites: Ids,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CallSite {
    pub caller: MethodId,
    pub offset: i32,
    pub callees: Ids,
    /// The reference nodes standing for this call site in particular contexts.
    pub contexts: Ids,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Callee {
    pub site: SiteId,
    pub method: MethodId,
    /// Calls from the site's caller to this callee, in any context.
    pub count: u64,
    /// Call sites of the callee reached through this call: the root of its context tree.
    pub sites: Ids,
    /// The reference nodes standing for this call in particular contexts.
    pub contexts: Ids,
}

/// What a [`CallSiteRef`] hangs below: a general call (first call of the sequence) or a call
/// in context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefParent {
    Callee(CalleeId),
    CalleeRef(CalleeRefId),
}

#[derive(Clone, Debug, PartialEq)]
pub struct CallSiteRef {
    pub site: SiteId,
    pub parent: RefParent,
    pub callees: Ids,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CalleeRef {
    pub callee: CalleeId,
    pub site_ref: SiteRefId,
    /// Calls made in this context.
    pub count: u64,
    pub sites: Ids,
}

/// A call sequence (at least three methods) with the number of calls of its last call made
/// in the context of the whole sequence.
#[derive(Clone, Debug, PartialEq)]
pub struct PathCount {
    pub methods: Vec<String>,
    pub count: u64,
}

/// How often a call sequence occurred in total, and below which callers.
#[derive(Clone, Debug, PartialEq)]
pub struct PathContexts {
    pub count: u64,
    /// Methods seen calling the first method of the path, with the count of the path below
    /// each, hottest first.
    pub callers: Vec<(String, u64)>,
    /// Occurrences with no caller recorded (the first method was outermost in the buffer).
    pub without_caller: u64,
}

/// A call site that has seen one target so far (a devirtualisation candidate).
#[derive(Clone, Debug, PartialEq)]
pub struct SingleTarget {
    /// The context of the call site: the methods leading to the caller, caller last.
    pub context: Vec<String>,
    pub offset: i32,
    pub callee: String,
    pub count: u64,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct CcMap {
    pub(super) methods: Vec<MethodProfile>,
    pub(super) sites: Vec<CallSite>,
    pub(super) callees: Vec<Callee>,
    pub(super) site_refs: Vec<CallSiteRef>,
    pub(super) callee_refs: Vec<CalleeRef>,
    pub(super) samples: u64,
    /// Samples made only of a frame already visited: the top frame repeated (section 3.3).
    pub(super) repeats: u64,
    pub(super) method_index: IntMap<String, MethodId>,
    // Keyed by the map's own ids: the fast hasher.
    pub(super) site_index: IntMap<(MethodId, i32), SiteId>,
    pub(super) callee_index: IntMap<(SiteId, MethodId), CalleeId>,
    pub(super) site_ref_index: IntMap<(RefParent, SiteId), SiteRefId>,
    pub(super) callee_ref_index: IntMap<(SiteRefId, CalleeId), CalleeRefId>,
    /// Reference nodes (call sites and callees in context) the map may make; once it has,
    /// adding stops and [`Self::full`] says so ([`Self::from_cct_within`]).
    pub(super) max_refs: Option<usize>,
    pub(super) full: bool,
}

impl CcMap {
    pub fn new() -> CcMap {
        CcMap::default()
    }

    /// Builds the map from a calling context tree: each root-first path with `n` self samples
    /// counts as `n` complete samples. Call-site offsets are unknown (-1). Each frame name is
    /// looked up once per name, not once per frame.
    pub fn from_cct(cct: &Cct) -> CcMap {
        CcMap::build_cct(cct, None)
    }

    /// [`Self::from_cct`] making at most `max_refs` reference nodes (see
    /// [`crate::limits::ccmap_max_contexts`]); `Err(max_refs)` when it would make more.
    pub fn from_cct_within(cct: &Cct, max_refs: usize) -> Result<CcMap, usize> {
        let map = CcMap::build_cct(cct, Some(max_refs));
        if map.full {
            return Err(max_refs);
        }
        Ok(map)
    }

    /// [`Self::from_recording`] making at most `max_refs` reference nodes, as
    /// [`Self::from_cct_within`].
    pub fn from_recording_within(rec: &Recording, max_refs: usize) -> Result<CcMap, usize> {
        let map = CcMap::build_recording(rec, Some(max_refs));
        if map.full {
            return Err(max_refs);
        }
        Ok(map)
    }

    /// Whether building stopped at the bound on reference nodes.
    pub fn full(&self) -> bool {
        self.full
    }

    fn build_cct(cct: &Cct, max_refs: Option<usize>) -> CcMap {
        let mut map = CcMap { max_refs, ..CcMap::new() };
        // Tree name id -> map method id (u32::MAX: not yet).
        let mut by_name = vec![u32::MAX; cct.name_count()];
        let mut path = Vec::new();
        for leaf in 1..cct.nodes.len() as NodeId {
            let n = cct.node(leaf).self_samples;
            if n == 0 {
                continue;
            }
            // Top of the stack first: from the leaf up.
            path.clear();
            let mut id = leaf;
            while id != ROOT {
                let name = cct.node_name_id(id) as usize;
                if by_name[name] == u32::MAX {
                    by_name[name] = map.method_id(&cct.node(id).name);
                }
                path.push(by_name[name]);
                id = cct.node(id).parent;
            }
            map.add_ids(&path, |_| -1, false, n);
            if map.full {
                break;
            }
        }
        map
    }

    /// Builds the map from a recording; a caller frame's bytecode index is its call site.
    /// Samples that share a stack are processed together, as one sample counted `n` times.
    /// Each method's name is made and looked up once.
    pub fn from_recording(rec: &Recording) -> CcMap {
        CcMap::build_recording(rec, None)
    }

    fn build_recording(rec: &Recording, max_refs: Option<usize>) -> CcMap {
        let mut map = CcMap { max_refs, ..CcMap::new() };
        let mut by_method: Vec<MethodId> = Vec::new();
        let mut ids = Vec::new();
        for g in group_samples(&rec.samples, false) {
            let stack = &rec.samples[g.first].stack;
            ids.clear();
            for f in stack.iter() {
                let m = f.method.0 as usize;
                if m >= by_method.len() {
                    by_method.resize(m + 1, u32::MAX);
                }
                if by_method[m] == u32::MAX {
                    by_method[m] = map.method_id(&rec.method(f.method).display_name());
                }
                ids.push(by_method[m]);
            }
            map.add_ids(&ids, |k| stack[k].bci, false, g.samples);
            if map.full {
                break;
            }
        }
        map
    }

    pub fn add_sample(&mut self, s: &CcSample) {
        self.add_samples(s, 1)
    }

    /// Processes `n` identical samples: the paper's algorithm with every counter bumped by `n`.
    pub fn add_samples(&mut self, s: &CcSample, n: u64) {
        let ids: Vec<MethodId> = s.frames.iter().map(|f| self.method_id(&f.method)).collect();
        self.add_ids(&ids, |k| s.frames[k].offset, s.stopped_at_visited, n);
    }

    /// [`Self::add_samples`] of a buffer of method ids (top of the stack first) whose frame `k`
    /// calls at `offset(k)`.
    fn add_ids(&mut self, ids: &[MethodId], offset: impl Fn(usize) -> i32, stopped_at_visited: bool, n: u64) {
        if ids.is_empty() || n == 0 {
            return;
        }
        self.samples = self.samples.saturating_add(n);
        if stopped_at_visited && ids.len() == 1 {
            self.repeats = self.repeats.saturating_add(n);
        }
        // The call made by frame k (k >= 1): its site, and the general callee node.
        let mut sites = vec![0 as SiteId; ids.len()];
        let mut calls = vec![0 as CalleeId; ids.len()];
        for k in 1..ids.len() {
            sites[k] = self.site_id(ids[k], offset(k));
            calls[k] = self.callee_id(sites[k], ids[k - 1]);
        }
        self.methods[ids[0] as usize].top = self.methods[ids[0] as usize].top.saturating_add(n);
        for i in 0..ids.len() {
            self.methods[ids[i] as usize].total = self.methods[ids[i] as usize].total.saturating_add(n);
            if i == 0 {
                continue;
            }
            let callee = calls[i];
            self.callees[callee as usize].count = self.callees[callee as usize].count.saturating_add(n);
            let mut parent = RefParent::Callee(callee);
            // At most CCMAP_MAX_CONTEXT calls of context below the call (see the module docs).
            for j in (i.saturating_sub(1 + CCMAP_MAX_CONTEXT)..i.saturating_sub(1)).rev() {
                if self.max_refs.is_some_and(|m| self.site_refs.len() + self.callee_refs.len() + 2 > m) {
                    self.full = true;
                    return;
                }
                let site_ref = self.site_ref_id(parent, sites[j + 1]);
                let r = self.callee_ref_id(site_ref, calls[j + 1]);
                self.callee_refs[r as usize].count = self.callee_refs[r as usize].count.saturating_add(n);
                parent = RefParent::CalleeRef(r);
            }
        }
    }

    fn method_id(&mut self, name: &str) -> MethodId {
        if let Some(&id) = self.method_index.get(name) {
            return id;
        }
        let id = self.methods.len() as MethodId;
        self.methods.push(MethodProfile { name: name.to_string(), total: 0, top: 0, sites: Ids::new() });
        self.method_index.insert(name.to_string(), id);
        id
    }

    fn site_id(&mut self, caller: MethodId, offset: i32) -> SiteId {
        if let Some(&id) = self.site_index.get(&(caller, offset)) {
            return id;
        }
        let id = self.sites.len() as SiteId;
        self.sites.push(CallSite { caller, offset, callees: Ids::new(), contexts: Ids::new() });
        self.methods[caller as usize].sites.push(id);
        self.site_index.insert((caller, offset), id);
        id
    }

    fn callee_id(&mut self, site: SiteId, method: MethodId) -> CalleeId {
        if let Some(&id) = self.callee_index.get(&(site, method)) {
            return id;
        }
        let id = self.callees.len() as CalleeId;
        self.callees.push(Callee { site, method, count: 0, sites: Ids::new(), contexts: Ids::new() });
        self.sites[site as usize].callees.push(id);
        self.callee_index.insert((site, method), id);
        id
    }

    fn site_ref_id(&mut self, parent: RefParent, site: SiteId) -> SiteRefId {
        if let Some(&id) = self.site_ref_index.get(&(parent, site)) {
            return id;
        }
        let id = self.site_refs.len() as SiteRefId;
        self.site_refs.push(CallSiteRef { site, parent, callees: Ids::new() });
        self.sites[site as usize].contexts.push(id);
        match parent {
            RefParent::Callee(c) => self.callees[c as usize].sites.push(id),
            RefParent::CalleeRef(r) => self.callee_refs[r as usize].sites.push(id),
        }
        self.site_ref_index.insert((parent, site), id);
        id
    }

    fn callee_ref_id(&mut self, site_ref: SiteRefId, callee: CalleeId) -> CalleeRefId {
        if let Some(&id) = self.callee_ref_index.get(&(site_ref, callee)) {
            return id;
        }
        let id = self.callee_refs.len() as CalleeRefId;
        self.callee_refs.push(CalleeRef { callee, site_ref, count: 0, sites: Ids::new() });
        self.site_refs[site_ref as usize].callees.push(id);
        self.callees[callee as usize].contexts.push(id);
        self.callee_ref_index.insert((site_ref, callee), id);
        id
    }

    // ---- read access ----

    pub fn samples(&self) -> u64 {
        self.samples
    }
    pub fn repeats(&self) -> u64 {
        self.repeats
    }
    pub fn methods(&self) -> &[MethodProfile] {
        &self.methods
    }
    pub fn sites(&self) -> &[CallSite] {
        &self.sites
    }
    pub fn callees(&self) -> &[Callee] {
        &self.callees
    }
    pub fn site_refs(&self) -> &[CallSiteRef] {
        &self.site_refs
    }
    pub fn callee_refs(&self) -> &[CalleeRef] {
        &self.callee_refs
    }
    pub fn method(&self, name: &str) -> Option<&MethodProfile> {
        self.method_index.get(name).map(|&i| &self.methods[i as usize])
    }
    pub(super) fn name(&self, m: MethodId) -> &str {
        &self.methods[m as usize].name
    }
}
