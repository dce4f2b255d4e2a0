//! What a reader makes of a parsed chunk's strings, made once per string: a string in a
//! constant pool is one place in the chunk however many entries name it, so a long string
//! named thousands of times is copied, hashed or converted once, not once per naming.

use std::marker::PhantomData;

use crate::hash::IntMap;

/// Values made from the strings of one chunk, kept by where the string is (its address and
/// length). A string inline in an event is a place of its own, paid for by its bytes; one in
/// a constant pool is found again at every reference. The lifetime ties the cache to the
/// chunk: addresses mean the same string only while the chunk lives.
pub struct ByPlace<'c, T> {
    made: IntMap<(usize, usize), T>,
    chunk: PhantomData<&'c str>,
}

impl<T> Default for ByPlace<'_, T> {
    fn default() -> Self {
        ByPlace { made: IntMap::default(), chunk: PhantomData }
    }
}

impl<'c, T: Clone> ByPlace<'c, T> {
    /// What `make` made of `s` the first time this place was asked for.
    pub fn get(&mut self, s: &'c str, make: impl FnOnce(&'c str) -> T) -> T {
        self.made.entry((s.as_ptr() as usize, s.len())).or_insert_with(|| make(s)).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_place_is_made_once_and_equal_text_elsewhere_again() {
        let text = String::from("abcabc");
        let (a, b) = (&text[..3], &text[3..]);
        let mut made = 0;
        let mut cache: ByPlace<'_, usize> = ByPlace::default();
        for s in [a, a, b, a] {
            cache.get(s, |_| {
                made += 1;
                made
            });
        }
        assert_eq!(made, 2, "a once, b (the same text, another place) once");
        assert_eq!(cache.get(a, |_| 99), 1);
    }
}
