//! Kernel function names for the kernel part of sampled call chains, from the text of
//! `/proc/kallsyms` (`ADDRESS TYPE NAME [MODULE]` per line). Read once, by the processing
//! thread, at the first kernel frame of a session that samples kernel mode.
//!
//! Addresses are printed as zeros to a reader the kernel does not trust (kptr_restrict): such a
//! table is empty and frames stay `[kernel]`.

/// Lines read at most (a kernel has ~100,000-300,000): a bound on memory, whatever the input.
pub const MAX_LINES: usize = 2_000_000;

#[derive(Default)]
pub struct KernelSymbols {
    /// (address, name offset, name length) of text symbols, sorted by address.
    syms: Vec<(u64, u32, u32)>,
    names: String,
}

impl std::fmt::Debug for KernelSymbols {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KernelSymbols({} functions)", self.syms.len())
    }
}

impl KernelSymbols {
    /// Text (`t`/`T`) symbols with a non-zero address; other lines are skipped.
    pub fn parse(text: &str) -> KernelSymbols {
        let mut k = KernelSymbols::default();
        for line in text.lines().take(MAX_LINES) {
            let mut it = line.split_ascii_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (it.next(), it.next(), it.next()) else { continue };
            if !matches!(kind, "t" | "T") {
                continue;
            }
            let Ok(addr) = u64::from_str_radix(addr, 16) else { continue };
            if addr == 0 || name.len() > u16::MAX as usize || k.names.len() > u32::MAX as usize - name.len() {
                continue;
            }
            k.syms.push((addr, k.names.len() as u32, name.len() as u32));
            k.names.push_str(name);
        }
        k.syms.sort_by_key(|s| s.0);
        // Kept for the process's life, so without the growth's spare room: 121,775 functions
        // held 7.5 MB grown (heaptrack), 4.7 MB trimmed (their names' and entries' bytes).
        k.syms.shrink_to_fit();
        k.names.shrink_to_fit();
        k
    }

    /// `/proc/kallsyms`, or an empty table when it cannot be read.
    pub fn load() -> KernelSymbols {
        std::fs::read_to_string("/proc/kallsyms").map(|t| Self::parse(&t)).unwrap_or_default()
    }

    /// The function `addr` is in: the nearest symbol at or below it.
    pub fn lookup(&self, addr: u64) -> Option<&str> {
        let i = self.syms.partition_point(|s| s.0 <= addr);
        let (_, off, len) = *self.syms.get(i.checked_sub(1)?)?;
        self.names.get(off as usize..(off + len) as usize)
    }

    pub fn len(&self) -> usize {
        self.syms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
ffffffff81000000 T _stext
ffffffff81001000 t clear_page_erms
ffffffff81001100 T exc_page_fault
ffffffff82000000 D some_data
ffffffffc0001000 t nf_hook [nf_tables]
0000000000000000 A fixed_percpu_data
";

    #[test]
    fn names_the_function_an_address_is_in() {
        let k = KernelSymbols::parse(TEXT);
        assert_eq!(k.len(), 4, "text symbols only: {k:?}");
        assert_eq!(k.lookup(0xffff_ffff_8100_1010), Some("clear_page_erms"));
        assert_eq!(k.lookup(0xffff_ffff_8100_1100), Some("exc_page_fault"));
        assert_eq!(k.lookup(0xffff_ffff_c000_1004), Some("nf_hook"), "module symbol without its [module]");
        assert_eq!(k.lookup(0xffff_ffff_8000_0000), None, "below the first");
    }

    #[test]
    fn hidden_addresses_give_an_empty_table() {
        let hidden = "0000000000000000 T _stext\n0000000000000000 t clear_page_erms\n";
        assert!(KernelSymbols::parse(hidden).is_empty());
        assert!(KernelSymbols::parse("garbage\n\nffff T\nzz T x\n").is_empty());
    }
}
