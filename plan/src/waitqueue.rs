//! The waiting jobs in a policy's order, kept from one event to the next. A
//! waiting job's place (for the planner: class, priority, key; for a
//! baseline: its sort key) does not change while it waits, so at each event
//! only the running jobs are sorted anew, and the order is read off by
//! merging them with this queue, stopping once the GPUs run out: a long
//! queue costs the jobs reached per event, not a sort of it.

use std::collections::{BTreeMap, BTreeSet};
use std::iter::Peekable;

/// `f64`s mapped to `u64`s ordered as `f64::total_cmp` orders them.
pub fn ordered_bits(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 { !b } else { b | (1 << 63) }
}

/// Waiting jobs at places of type `P` (an order that ends in the job index,
/// so that places are unique).
pub struct WaitQueue<P> {
    /// By the fewest GPUs the job can start with: its waiting jobs in order.
    buckets: BTreeMap<u32, BTreeSet<P>>,
    /// Each job's (bucket, place) while it waits.
    at: Vec<Option<(u32, P)>>,
    /// The buckets' sum over the waiting jobs: GPUs they would take at their base counts.
    base_total: u64,
}

impl<P> Default for WaitQueue<P> {
    fn default() -> Self {
        WaitQueue {
            buckets: BTreeMap::new(),
            at: Vec::new(),
            base_total: 0,
        }
    }
}

impl<P: Ord + Copy> WaitQueue<P> {
    /// Job `j` waits at `place` needing at least `base` GPUs (`None`: it does not wait).
    pub fn set(&mut self, j: usize, want: Option<(u32, P)>) {
        if self.at.len() <= j {
            self.at.resize(j + 1, None);
        }
        if self.at[j] == want {
            return;
        }
        if let Some((b, p)) = self.at[j].take()
            && let Some(set) = self.buckets.get_mut(&b)
        {
            set.remove(&p);
            if set.is_empty() {
                self.buckets.remove(&b);
            }
            self.base_total -= u64::from(b);
        }
        if let Some((b, p)) = want {
            self.buckets.entry(b).or_default().insert(p);
            self.base_total += u64::from(b);
        }
        self.at[j] = want;
    }

    /// GPUs the waiting jobs would take at their base counts.
    pub fn base_total(&self) -> u64 {
        self.base_total
    }

    /// Job `j`'s place, while it waits.
    pub fn place_of(&self, j: usize) -> Option<P> {
        self.at.get(j).copied().flatten().map(|(_, p)| p)
    }

    /// Every waiting job's place, in no particular order.
    pub fn places(&self) -> impl Iterator<Item = P> + '_ {
        self.buckets.values().flatten().copied()
    }

    pub fn merge(&self) -> Merge<'_, P> {
        Merge {
            heads: self.buckets.iter().map(|(&b, s)| (b, s.iter().peekable())).collect(),
        }
    }
}

/// The queue in order across buckets.
pub struct Merge<'a, P> {
    heads: Vec<(u32, Peekable<std::collections::btree_set::Iter<'a, P>>)>,
}

impl<P: Ord + Copy> Merge<'_, P> {
    /// The first waiting job that could start on `limit` GPUs, without taking
    /// it: (its bucket, to pass to [`Merge::advance`], and its place).
    #[inline(always)]
    pub fn peek(&mut self, limit: u32) -> Option<(usize, P)> {
        let mut best: Option<(usize, P)> = None;
        for (i, (base, it)) in self.heads.iter_mut().enumerate() {
            if *base > limit {
                break;
            }
            if let Some(&&p) = it.peek()
                && best.is_none_or(|(_, b)| p < b)
            {
                best = Some((i, p));
            }
        }
        best
    }

    /// Take the head of bucket `i` (from [`Merge::peek`]).
    #[inline]
    pub fn advance(&mut self, i: usize) {
        self.heads[i].1.next();
    }
}

/// What a caller keeps between calls of [`first_in_order`]: the first
/// place the queues offered when the list's head last went ahead of them
/// (`Some(None)`: they offered none; `None`: not known). While the limits
/// only fall, the queues' first place can only move later, so a list head
/// ahead of it goes next without asking the queues again.
pub type Floor<P> = Option<Option<P>>;

/// The first in order of a sorted list's head (taking it advances
/// `next`) and the heads of the queues that fit their GPU limits; advances
/// the one taken, and says whether it was the list's. The limits must not
/// rise between calls that share a `floor` (start a new one where they do).
#[inline(always)]
pub fn first_in_order<P: Ord + Copy>(
    head: Option<P>,
    next: &mut usize,
    queues: &mut [(&mut Merge<'_, P>, u32)],
    floor: &mut Floor<P>,
) -> Option<(P, bool)> {
    if let (Some(h), Some(f)) = (head, *floor)
        && f.is_none_or(|f| h < f)
    {
        *next += 1;
        return Some((h, true));
    }
    let mut first: Option<(P, usize, usize)> = None;
    for (q, (merge, limit)) in queues.iter_mut().enumerate() {
        if let Some((bucket, p)) = merge.peek(*limit)
            && first.is_none_or(|(b, _, _)| p < b)
        {
            first = Some((p, q, bucket));
        }
    }
    match (head, first) {
        (Some(h), f) if f.is_none_or(|(p, _, _)| h < p) => {
            *next += 1;
            *floor = Some(f.map(|f| f.0));
            Some((h, true))
        }
        (_, f) => {
            let (p, q, bucket) = f?;
            queues[q].0.advance(bucket);
            *floor = None;
            Some((p, false))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_in_order_within_the_limit() {
        let mut q: WaitQueue<(u8, i64, u64, usize)> = WaitQueue::default();
        let p = |class, key: f64, j| (class, 0i64, ordered_bits(key), j);
        q.set(0, Some((1, p(2, 5.0, 0))));
        q.set(1, Some((8, p(2, 1.0, 1))));
        q.set(2, Some((1, p(0, 9.0, 2))));
        q.set(3, Some((1, p(2, -3.0, 3))));
        // Job 3 moves to the front of its class; job 0 stops waiting.
        q.set(0, None);
        assert_eq!(q.base_total(), 10);
        let mut m = q.merge();
        let mut seen = Vec::new();
        assert_eq!(q.place_of(3), Some(p(2, -3.0, 3)));
        assert_eq!(q.place_of(0), None);
        while let Some((i, place)) = m.peek(8) {
            seen.push(place.3);
            m.advance(i);
        }
        assert_eq!(seen, vec![2, 3, 1]);
        // On 4 GPUs the 8-GPU job is out of reach.
        let mut m = q.merge();
        let mut seen = Vec::new();
        while let Some((i, place)) = m.peek(4) {
            seen.push(place.3);
            m.advance(i);
        }
        assert_eq!(seen, vec![2, 3]);
        assert!(ordered_bits(-1.0) < ordered_bits(0.0) && ordered_bits(0.0) < ordered_bits(2.5));
    }

    #[test]
    fn list_and_queue_merge_in_order_with_a_kept_floor() {
        let mut q: WaitQueue<(u64, usize)> = WaitQueue::default();
        q.set(10, Some((1, (5, 10))));
        q.set(11, Some((4, (2, 11))));
        let list = [(1, 0), (3, 1), (4, 2), (6, 3), (7, 4)];
        let mut m = q.merge();
        let (mut next, mut floor) = (0, None);
        let mut take = |limit: u32, m: &mut Merge<'_, (u64, usize)>| {
            first_in_order(list.get(next).copied(), &mut next, &mut [(m, limit)], &mut floor).map(|(p, _)| p.1)
        };
        // On 8 GPUs: 0, then job 11 (place 2), then 1 and 2 ahead of job 10 (place 5).
        assert_eq!(take(8, &mut m), Some(0));
        assert_eq!(take(8, &mut m), Some(11));
        assert_eq!(take(8, &mut m), Some(1));
        assert_eq!(take(8, &mut m), Some(2));
        // The limit falls to 0: job 10 no longer fits, the list goes on.
        assert_eq!(take(0, &mut m), Some(3));
        assert_eq!(take(0, &mut m), Some(4));
        assert_eq!(take(0, &mut m), None);
    }
}
