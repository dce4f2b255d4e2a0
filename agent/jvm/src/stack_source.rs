//! The stack source: who gives a sample its Java stack, chosen on its own axis beside the event
//! source. An event source says only where its samples' stacks can be taken ([`StackSite`]);
//! [`choose`] picks the stack source for that site from `stack=` and the JVM, and says which in
//! one "Java stacks: ..." note, with how native frames are unwound (`cstack=`: only hpm's walker
//! in the thread unwinds them).

use crate::options::{CStack, Options, StackWalker};
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
    /// hpm's own walker over HotSpot's frames, in the sampled thread; native frames unwound
    /// as `cstack=` says.
    Walker(&'static Layout, CStack),
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
            StackSource::Walker(l, _) | StackSource::Compare(l) | StackSource::ChainKeys(l) => Some(l),
            StackSource::Asgct | StackSource::Jvm => None,
        }
    }

    /// Whether AsyncGetCallTrace walks each sample beside hpm's walker.
    pub fn compares(self) -> bool {
        matches!(self, StackSource::Compare(_))
    }

    /// How the walker in the thread unwinds native frames; `No` for every other source.
    pub fn cstack(self) -> CStack {
        match self {
            StackSource::Walker(_, c) => c,
            _ => CStack::No,
        }
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
                StackSource::Walker(l, opts.cstack),
                Some(format!(
                    "Java stacks: hpm's own walker over HotSpot's frames (stack=asgct: AsyncGetCallTrace); {}",
                    native_note(opts.cstack)
                )),
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
    .map(|(source, note)| {
        // Native frames are walked by hpm's walker in the thread only: said where asked for.
        let lost = opts.cstack != CStack::No && source.cstack() == CStack::No && site != StackSite::Jvm;
        let note = note.map(|n| {
            if lost {
                format!("{n}; native frames: the leaf only (cstack= needs hpm's own walker in the sampled thread)")
            } else {
                n
            }
        });
        (source, note)
    })
}

/// The note's part on native frames.
fn native_note(cstack: CStack) -> &'static str {
    match cstack {
        CStack::Dwarf => "native frames: the libraries' DWARF unwind tables (cstack=dwarf)",
        CStack::Fp => "native frames: frame pointers only (cstack=fp; libjvm's and libc's callers are lost)",
        CStack::No => "native frames: the leaf only (cstack=no)",
    }
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
            "Java stacks: AsyncGetCallTrace; hpm's own walker cannot read this JVM (no VMStructs); native frames: \
             the leaf only (cstack= needs hpm's own walker in the sampled thread)"
        );
        let (s, note) = choose(&opts("stack=asgct,cstack=no"), StackSite::InThread, || panic!("not asked")).unwrap();
        assert!(matches!(s, StackSource::Asgct));
        assert_eq!(note.unwrap(), "Java stacks: AsyncGetCallTrace (stack=asgct)");
        let (s, note) = choose(&opts("sampler=jvmti"), StackSite::Jvm, || panic!("not asked")).unwrap();
        assert!(matches!(s, StackSource::Jvm) && note.is_none() && s.walker().is_none());
        let (s, note) = choose(&opts("stack=asgct,cstack=fp"), StackSite::InThread, || panic!("not asked")).unwrap();
        assert_eq!(s.cstack(), CStack::No);
        assert_eq!(
            note.unwrap(),
            "Java stacks: AsyncGetCallTrace (stack=asgct); native frames: the leaf only (cstack= needs hpm's own \
             walker in the sampled thread)"
        );
        let e = choose(&opts("sampler=chain"), StackSite::Copied, no_walker).unwrap_err();
        assert_eq!(e, "sampler=chain needs hpm's own walker, which cannot read this JVM (no VMStructs)");
    }
}
