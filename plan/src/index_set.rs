//! A set of indices below a fixed bound, kept as bits: insert, remove and
//! the smallest member in a few word operations, members in ascending
//! order. The placer moves a node between its free-count sets at every
//! change of a placement, millions of times on a big plan, where ordered
//! tree sets spent their time allocating and rebalancing.

/// Bits per word.
const WORD: usize = 64;

#[derive(Clone, Debug)]
pub(crate) struct IndexSet {
    words: Vec<u64>,
    /// Bit `w` says whether `words[w]` has a member, so that the smallest
    /// member is found without scanning empty words.
    nonempty: Vec<u64>,
}

impl IndexSet {
    /// An empty set that can hold `0..bound`.
    pub(crate) fn new(bound: usize) -> IndexSet {
        let words = bound.div_ceil(WORD);
        IndexSet {
            words: vec![0; words],
            nonempty: vec![0; words.div_ceil(WORD)],
        }
    }

    pub(crate) fn insert(&mut self, i: u32) {
        let (w, bit) = (i as usize / WORD, i as usize % WORD);
        self.words[w] |= 1 << bit;
        self.nonempty[w / WORD] |= 1 << (w % WORD);
    }

    pub(crate) fn remove(&mut self, i: u32) {
        let (w, bit) = (i as usize / WORD, i as usize % WORD);
        self.words[w] &= !(1 << bit);
        if self.words[w] == 0 {
            self.nonempty[w / WORD] &= !(1 << (w % WORD));
        }
    }

    /// The smallest member.
    pub(crate) fn first(&self) -> Option<u32> {
        let (s, summary) = self.nonempty.iter().enumerate().find(|(_, s)| **s != 0)?;
        let w = s * WORD + summary.trailing_zeros() as usize;
        Some((w * WORD + self.words[w].trailing_zeros() as usize) as u32)
    }

    /// The members, smallest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &bits)| {
            let mut left = bits;
            std::iter::from_fn(move || {
                (left != 0).then(|| {
                    let bit = left.trailing_zeros() as usize;
                    left &= left - 1;
                    (w * WORD + bit) as u32
                })
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::IndexSet;

    #[test]
    fn answers_as_an_ordered_tree_set_does() {
        // Indices across several words and summary words, inserted and
        // removed in a scrambled order, against BTreeSet after every step.
        let bound = 64 * 64 * 2 + 37;
        let mut bits = IndexSet::new(bound);
        let mut tree = BTreeSet::new();
        let mut x: u64 = 12345;
        for step in 0..20_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let i = ((x >> 33) % bound as u64) as u32;
            if step % 3 == 2 {
                bits.remove(i);
                tree.remove(&i);
            } else {
                bits.insert(i);
                tree.insert(i);
            }
            assert_eq!(bits.first(), tree.first().copied(), "after step {step}");
        }
        assert!(bits.iter().eq(tree.iter().copied()));
        for i in tree.clone() {
            bits.remove(i);
            tree.remove(&i);
        }
        assert_eq!(bits.first(), None);
        assert_eq!(bits.iter().count(), 0);
    }

    #[test]
    fn removing_what_is_not_there_changes_nothing() {
        let mut s = IndexSet::new(130);
        s.insert(129);
        s.remove(128);
        s.remove(5);
        assert_eq!(s.first(), Some(129));
        s.remove(129);
        assert_eq!(s.first(), None);
    }
}
