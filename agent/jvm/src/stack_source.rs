//! The stack source: who gives a sample its Java stack, chosen on its own axis beside the event
//! source. An event source says only where its samples' stacks can be taken ([`StackSite`]);
//! [`choose`] picks the stack source for that site from `stack=` and the JVM, and says which in
//! one "Java stacks: ..." note.

use crate::options::{Options, StackWalker};
use hpm_capture::hotspot::Layout;

/// Where an event source's samples can have their stacks taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackSite {
    /// In the sampled thread (a signal handler, a JVMTI callback): hpm's walker or
    /// AsyncGetCallTrace, as `stack=` says.
    InThread,
    /// Later, by the processor, from a copy of the top of the stack: chain keys.
    Copied,
    /// The JVM hands the frames (GetThreadListStackTraces, the patched JVM's traces).
    Jvm,
}

/// Who walks the Java stacks of a session's samples.
#[derive(Clone, Copy, Debug)]
pub enum StackSource {
    /// hpm's own walker over HotSpot's frames, in the sampled thread.
    Walker(&'static Layout),
    /// hpm's walker kept, AsyncGetCallTrace on every sample too, to compare (`stack=compare`).
    Compare(&'static Layout),
    /// AsyncGetCallTrace in the sampled thread.
    Asgct,
    /// The processor walks each sample's stack copy with hpm's walker and completes the stack
    /// from the frames' depths below the thread's stack base (CallerChaining's keys).
    ChainKeys(&'static Layout),
    /// The JVM's own frames.
    Jvm,
}

impl StackSource {
    /// hpm's walker's layout, when it walks (in the thread or in the processor).
    pub fn walker(self) -> Option<&'static Layout> {
        match self {
            StackSource::Walker(l) | StackSource::Compare(l) | StackSource::ChainKeys(l) => Some(l),
            StackSource::Asgct | StackSource::Jvm => None,
        }
    }

    /// Whether AsyncGetCallTrace walks each sample beside hpm's walker.
    pub fn compares(self) -> bool {
        matches!(self, StackSource::Compare(_))
    }
}

/// The stack source for stacks taken at `site`, from `stack=` and hpm's walker's `layout` of
/// this JVM (asked only where it may walk), with the note that says which; `Err` where the site
/// has no stack source on this JVM.
pub fn choose(
    opts: &Options,
    site: StackSite,
    layout: impl FnOnce() -> Result<&'static Layout, String>,
) -> Result<(StackSource, Option<String>), String> {
    Ok(match (site, opts.stack) {
        (StackSite::InThread, StackWalker::Vm | StackWalker::Compare) => match layout() {
            Ok(l) if opts.stack == StackWalker::Compare => (
                StackSource::Compare(l),
                Some("Java stacks: hpm's own walker, and AsyncGetCallTrace on every sample to compare".into()),
            ),
            Ok(l) => (
                StackSource::Walker(l),
                Some("Java stacks: hpm's own walker over HotSpot's frames (stack=asgct: AsyncGetCallTrace)".into()),
            ),
            Err(e) => (
                StackSource::Asgct,
                Some(format!("Java stacks: AsyncGetCallTrace; hpm's own walker cannot read this JVM ({e})")),
            ),
        },
        (StackSite::InThread, StackWalker::Asgct) => {
            (StackSource::Asgct, Some("Java stacks: AsyncGetCallTrace (stack=asgct)".into()))
        }
        (StackSite::Copied, _) => match layout() {
            Ok(l) => (
                StackSource::ChainKeys(l),
                Some(
                    "Java stacks: no walk in the sampled thread; the processor walks each sample's copy of the top \
                     of the stack and completes it from the frames' stack depths (sampler=chain)"
                        .into(),
                ),
            ),
            Err(e) => return Err(format!("sampler=chain needs hpm's own walker, which cannot read this JVM ({e})")),
        },
        (StackSite::Jvm, _) => (StackSource::Jvm, None),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_walker() -> Result<&'static Layout, String> {
        Err("no VMStructs".into())
    }

    #[test]
    fn each_site_names_its_stack_source_in_one_note() {
        let opts = |s: &str| crate::options::parse(s).unwrap();
        let (s, note) = choose(&opts(""), StackSite::InThread, no_walker).unwrap();
        assert!(matches!(s, StackSource::Asgct));
        assert_eq!(
            note.unwrap(),
            "Java stacks: AsyncGetCallTrace; hpm's own walker cannot read this JVM (no VMStructs)"
        );
        let (s, note) = choose(&opts("stack=asgct"), StackSite::InThread, || panic!("not asked")).unwrap();
        assert!(matches!(s, StackSource::Asgct));
        assert_eq!(note.unwrap(), "Java stacks: AsyncGetCallTrace (stack=asgct)");
        let (s, note) = choose(&opts("sampler=jvmti"), StackSite::Jvm, || panic!("not asked")).unwrap();
        assert!(matches!(s, StackSource::Jvm) && note.is_none() && s.walker().is_none());
        let e = choose(&opts("sampler=chain"), StackSite::Copied, no_walker).unwrap_err();
        assert_eq!(e, "sampler=chain needs hpm's own walker, which cannot read this JVM (no VMStructs)");
    }
}
