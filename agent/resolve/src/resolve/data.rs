//! What a sample's data address touched: the address from the event or decoded from the
//! instruction, and the heap object, class metadata or stack frame it is in.

use super::*;

/// Class metadata reads through the method source.
pub(super) struct Metadata<'a>(pub(super) &'a mut dyn JavaMethods);

impl crate::objects::MetaRead for Metadata<'_> {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> bool {
        self.0.read_metadata(addr, buf)
    }
}

impl SampleResolver {
    /// A stack address's frame, which hpm's walk found (`Captured::data.stack_slot`): the
    /// method whose physical frame holds it (inlined methods share their caller's).
    pub(super) fn name_stack_frame(
        &mut self,
        rec: &mut Recording,
        jm: &mut dyn JavaMethods,
        c: &Captured,
        slot: usize,
        t: &mut DataTarget,
    ) {
        let Some((_, frames, slots)) = c.raw_walk() else { return };
        let n = frames.len();
        if slot >= n {
            return;
        }
        let method = if slots[slot] == SlotKind::Pc {
            if slot + 1 >= n {
                return;
            }
            frames[slot + 1].method_id
        } else {
            frames[slot].method_id
        };
        let Some(p) = (method != 0).then(|| jm.by_pointer(method)).flatten() else { return };
        let idx = self.method_idx(rec, jm, p.id);
        let name = rec.methods.get(idx).display_name();
        if let Some(o) = self.objects.as_mut() {
            t.space = hpm_profile::model::Space::Stack;
            t.field = Some(o.intern(&name));
        }
    }

    /// The address the sample's event reported (page faults, precise memory samples), else,
    /// with `data`, the one its instruction was about to touch. Where both exist they are
    /// compared (`DataStats::agreed`): the event's address checks the decoding. With a heap
    /// capture, also what the address touched (`objects`).
    pub(super) fn data_address(
        &mut self,
        c: &Captured,
        jm: &mut dyn JavaMethods,
    ) -> (Option<u64>, Option<Box<DataTarget>>) {
        let event = (self.data_addresses && c.raw.addr != 0).then_some(c.raw.addr);
        if !self.decode_instructions {
            return (event, None);
        }
        let d = &c.data;
        let decoded = if d.code_len == 0 {
            self.stats.data.record(Err(hpm_capture::operand::NOT_CAPTURED));
            None
        } else {
            let code = &d.code[..usize::from(d.code_len).min(d.code.len())];
            match hpm_capture::operand::sampled_access(code, c.raw.ip, &d.regs) {
                Ok(a) => {
                    self.stats.data.record(Ok(&a));
                    Some(a)
                }
                Err(e) => {
                    self.stats.data.record(Err(e.name()));
                    None
                }
            }
        };
        if let (Some(e), Some(a)) = (event, decoded) {
            self.stats.data.compare(e, &a);
        }
        // The event's own address wins (a precise sample's is the PMU's); the decoding then
        // only splits it into object and offset where the two agree.
        let access = match (event, decoded) {
            (Some(e), Some(a)) if a.address != e => {
                Some(MemoryAccess { address: e, displacement: 0, register_based: false, ..a })
            }
            (Some(e), None) => Some(MemoryAccess {
                address: e,
                displacement: 0,
                register_based: false,
                size: 0,
                access: hpm_capture::operand::Access::Load,
                len: 0,
                stored: None,
            }),
            (_, a) => a,
        };
        let target = match (self.objects.as_mut(), access) {
            (Some(o), Some(a)) if d.heap.space != 0 => {
                let sp = d.regs.0[4];
                let created = match a.access {
                    hpm_capture::operand::Access::Store if event.is_none() => {
                        o.creation(d.heap.space(), &a, &mut Metadata(jm))
                    }
                    _ => None,
                };
                let mut t = match created {
                    Some(t) => t,
                    None => {
                        let mut t = o.identify(&d.heap, &a, sp, &mut Metadata(jm));
                        if event.is_some() {
                            o.written_class_word(&mut t, &a);
                        }
                        t
                    }
                };
                if c.raw.data_src != 0 || c.raw.weight != 0 {
                    t.source = hpm_capture::perf_record::data_source(c.raw.data_src).map(|s| o.intern(&s));
                    t.latency = c.raw.weight & 0xffff_ffff;
                }
                Some(Box::new(t))
            }
            _ => None,
        };
        (event.or(decoded.map(|a| a.address)), target)
    }
}
