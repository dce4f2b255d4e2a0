//! Virtual threads' entries in the session's thread list: one per virtual thread id, up to
//! [`MAX_VIRTUAL_THREADS`], then one entry standing for all the others
//! ([`ThreadInfo::other_virtual`]). A program may start millions of virtual threads; the list,
//! this map and every output stay bounded by the constant.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

use hpm_profile::model::ThreadInfo;
use hpm_profile::vthreads::MAX_VIRTUAL_THREADS;

/// Session index by virtual thread id (`Thread.threadId()`).
#[derive(Default)]
pub struct VirtualIndex {
    by_id: HashMap<u64, u32>,
    /// The entry of the virtual threads past the bound, once one came.
    other: Option<u32>,
}

impl VirtualIndex {
    /// Forgets every entry (a new session's list starts empty).
    pub fn clear(&mut self) {
        self.by_id.clear();
        self.other = None;
    }

    /// The index of virtual thread `id`; a new one is made by `add` (given its entry), which
    /// may refuse (`None`: the session's thread list is full).
    pub fn index(&mut self, id: u64, add: impl FnOnce(ThreadInfo) -> Option<u32>) -> Option<u32> {
        if let Some(&i) = self.by_id.get(&id) {
            return Some(i);
        }
        if self.by_id.len() < MAX_VIRTUAL_THREADS {
            // Unnamed, as the JDK leaves virtual threads and as JFR shows them.
            let i = add(ThreadInfo::virtual_thread(id, String::new()))?;
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
    fn a_full_thread_list_leaves_the_sample_on_its_carrier() {
        let mut v = VirtualIndex::default();
        assert_eq!(v.index(77, |_| None), None);
        assert_eq!(v.len(), 0, "nothing kept for a refused entry");
        v.clear();
    }
}
