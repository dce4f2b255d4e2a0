//! Virtual threads' entries in the session's thread list: one per virtual thread id, up to
//! [`MAX_VIRTUAL_THREADS`], then one entry standing for all the others
//! ([`ThreadInfo::other_virtual`]). A program may start millions of virtual threads; the list,
//! this map and every output stay bounded by the constant.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};

use hpm_profile::model::ThreadInfo;
use hpm_profile::vthreads::MAX_VIRTUAL_THREADS;

/// Session index by virtual thread id (`Thread.threadId()`), and the names of the live named
/// ones (from VirtualThreadStart, `event=wall` only: the JDK leaves most unnamed).
#[derive(Default)]
pub struct VirtualIndex {
    by_id: HashMap<u64, u32>,
    /// The entry of the virtual threads past the bound, once one came.
    other: Option<u32>,
    /// Live named virtual threads' names, at most [`MAX_VIRTUAL_THREADS`] (more stay unnamed);
    /// kept across sessions, as the threads are.
    names: HashMap<u64, String>,
}

impl VirtualIndex {
    /// Forgets every entry (a new session's list starts empty); the names stay.
    pub fn clear(&mut self) {
        self.by_id.clear();
        self.other = None;
    }

    /// Virtual thread `id` started with the name `name` (not empty); returns how many live
    /// virtual threads have a name kept (for [`LiveCount::set_named`]).
    pub fn named(&mut self, id: u64, name: String) -> usize {
        if self.names.len() < MAX_VIRTUAL_THREADS {
            self.names.insert(id, name);
        }
        self.names.len()
    }

    /// Virtual thread `id` ended; returns how many live virtual threads have a name kept.
    pub fn unnamed(&mut self, id: u64) -> usize {
        self.names.remove(&id);
        self.names.len()
    }

    /// The index of virtual thread `id`; a new one is made by `add` (given its entry), which
    /// may refuse (`None`: the session's thread list is full).
    pub fn index(&mut self, id: u64, add: impl FnOnce(ThreadInfo) -> Option<u32>) -> Option<u32> {
        if let Some(&i) = self.by_id.get(&id) {
            return Some(i);
        }
        if self.by_id.len() < MAX_VIRTUAL_THREADS {
            // Unnamed unless it was given a name, as JFR shows them.
            let name = self.names.get(&id).cloned().unwrap_or_default();
            let i = add(ThreadInfo::virtual_thread(id, name))?;
            self.by_id.insert(id, i);
            return Some(i);
        }
        if let Some(i) = self.other {
            return Some(i);
        }
        let i = add(ThreadInfo::other_virtual())?;
        self.other = Some(i);
        Some(i)
    }

    /// Virtual threads with an entry of their own.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_id.len()
    }
}

/// Live virtual threads, counted by JVMTI VirtualThreadStart/End (`event=wall` on JDK 21+,
/// from the JVM's start: a count begun later would miss those already live). Updated by the
/// threads starting and ending them, read by the processor once a round.
#[derive(Default)]
pub struct LiveCount {
    counting: AtomicBool,
    live: AtomicI64,
    /// When [`LiveCount::look`] last read the count (ns; 0: never).
    looked: AtomicU64,
    /// Live virtual threads whose name [`VirtualIndex`] keeps, as it last said: an end looks
    /// here, without the lock, and takes the lock only if some name may be its own.
    named: AtomicUsize,
}

impl LiveCount {
    /// The count starts (the events are on).
    pub fn start(&self) {
        self.counting.store(true, Ordering::Release);
    }

    pub fn started(&self) {
        self.live.fetch_add(1, Ordering::Relaxed);
    }

    pub fn ended(&self) {
        self.live.fetch_sub(1, Ordering::Relaxed);
    }

    /// [`VirtualIndex::named`]'s or [`VirtualIndex::unnamed`]'s count, stored under the lock
    /// that guards the index: the stores come in the order of the changes, so the last one is
    /// the index's count.
    pub fn set_named(&self, n: usize) {
        self.named.store(n, Ordering::Release);
    }

    /// Whether an ending virtual thread may have a name kept. Its start (which stored a count
    /// that includes it) happened before its end, and no later store drops it before its end
    /// does: a named thread's end always sees a count above 0.
    pub fn any_named(&self) -> bool {
        self.named.load(Ordering::Acquire) > 0
    }

    /// Live virtual threads now; `None` when not counted. An end seen before its start (the
    /// two come from different threads) reads as 0, not as a negative count.
    pub fn live(&self) -> Option<u64> {
        self.counting.load(Ordering::Acquire).then(|| self.live.load(Ordering::Relaxed).max(0) as u64)
    }

    /// The count at `now` and the ns since the previous look (0 at the first: a session's
    /// processor looks once as it starts); `None` when not counted.
    pub fn look(&self, now: u64) -> Option<(u64, u64)> {
        let live = self.live()?;
        let before = self.looked.swap(now, Ordering::Relaxed);
        Some((live, if before == 0 { 0 } else { now.saturating_sub(before) }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An index whose entries go to `list`.
    fn index_into(v: &mut VirtualIndex, list: &mut Vec<ThreadInfo>, id: u64) -> Option<u32> {
        v.index(id, |info| {
            list.push(info);
            Some(list.len() as u32 - 1)
        })
    }

    #[test]
    fn each_virtual_thread_gets_one_entry_and_keeps_it() {
        let (mut v, mut list) = (VirtualIndex::default(), Vec::new());
        assert_eq!(index_into(&mut v, &mut list, 77), Some(0));
        assert_eq!(index_into(&mut v, &mut list, 78), Some(1));
        assert_eq!(index_into(&mut v, &mut list, 77), Some(0));
        assert_eq!(
            list,
            [ThreadInfo::virtual_thread(77, String::new()), ThreadInfo::virtual_thread(78, String::new())]
        );
    }

    #[test]
    fn past_the_bound_every_other_virtual_thread_shares_one_entry() {
        let (mut v, mut list) = (VirtualIndex::default(), Vec::new());
        for id in 0..MAX_VIRTUAL_THREADS as u64 {
            index_into(&mut v, &mut list, id);
        }
        let other = index_into(&mut v, &mut list, 1 << 40);
        assert_eq!(other, Some(MAX_VIRTUAL_THREADS as u32));
        assert_eq!(index_into(&mut v, &mut list, (1 << 40) + 1), other);
        assert_eq!(index_into(&mut v, &mut list, 5), Some(5), "the ones kept keep their entry");
        assert_eq!((list.len(), v.len()), (MAX_VIRTUAL_THREADS + 1, MAX_VIRTUAL_THREADS));
        assert!(list[MAX_VIRTUAL_THREADS].is_virtual_group());
    }

    #[test]
    fn the_live_count_is_none_until_started_and_never_negative() {
        let c = LiveCount::default();
        c.started();
        assert_eq!(c.live(), None, "events not on");
        c.start();
        assert_eq!(c.live(), Some(1));
        c.ended();
        c.ended();
        assert_eq!(c.live(), Some(0), "an end seen before its start");
        c.started();
        assert_eq!(c.live(), Some(0));
        c.started();
        assert_eq!(c.live(), Some(1));
        assert_eq!(c.look(1_000), Some((1, 0)), "the first look spans nothing");
        assert_eq!(c.look(1_500), Some((1, 500)));
    }

    #[test]
    fn a_virtual_thread_named_at_its_start_keeps_its_name_until_it_ends() {
        let (mut v, mut list) = (VirtualIndex::default(), Vec::new());
        assert_eq!(v.named(77, "task-77".into()), 1);
        index_into(&mut v, &mut list, 77);
        index_into(&mut v, &mut list, 78);
        assert_eq!(list[0].shown_name(), "task-77");
        assert_eq!(list[1].shown_name(), "virtual thread #78");
        assert_eq!(v.unnamed(78), 1, "an unnamed thread's end changes nothing");
        assert_eq!(v.unnamed(77), 0);
        v.clear();
        v.named(79, "x".into());
        v.clear();
        assert_eq!(v.unnamed(80), 1, "names outlive a session");
    }

    #[test]
    fn a_full_thread_list_leaves_the_sample_on_its_carrier() {
        let mut v = VirtualIndex::default();
        assert_eq!(v.index(77, |_| None), None);
        assert_eq!(v.len(), 0, "nothing kept for a refused entry");
        v.clear();
    }
}
