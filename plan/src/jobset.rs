//! A set of job indices with O(1) insert and remove, iterated in
//! insertion order (or the last `reorder`) except where removals swapped
//! the last job into a gap.

#[derive(Clone, Debug, Default)]
pub struct JobSet {
    jobs: Vec<usize>,
    /// Each job's index in `jobs` (`usize::MAX`: not in the set).
    at: Vec<usize>,
}

impl JobSet {
    /// An empty set of jobs numbered below `n`.
    pub fn new(n: usize) -> JobSet {
        JobSet {
            jobs: Vec::new(),
            at: vec![usize::MAX; n],
        }
    }

    pub fn insert(&mut self, j: usize) {
        if self.at.len() <= j {
            self.at.resize(j + 1, usize::MAX);
        }
        if self.at[j] == usize::MAX {
            self.at[j] = self.jobs.len();
            self.jobs.push(j);
        }
    }

    pub fn remove(&mut self, j: usize) {
        let Some(&p) = self.at.get(j).filter(|&&p| p != usize::MAX) else {
            return;
        };
        self.jobs.swap_remove(p);
        if p < self.jobs.len() {
            self.at[self.jobs[p]] = p;
        }
        self.at[j] = usize::MAX;
    }

    pub fn as_slice(&self) -> &[usize] {
        &self.jobs
    }

    /// Iterate from now on in `order`, which holds exactly the set's jobs.
    pub fn reorder(&mut self, order: impl IntoIterator<Item = usize>) {
        self.jobs.clear();
        self.jobs.extend(order);
        for (p, &j) in self.jobs.iter().enumerate() {
            self.at[j] = p;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserts_removes_and_reorders() {
        let mut s = JobSet::new(4);
        for j in [3, 0, 2, 7] {
            s.insert(j);
        }
        s.insert(0);
        assert_eq!(s.as_slice(), &[3, 0, 2, 7]);
        s.remove(3);
        s.remove(5);
        assert_eq!(s.as_slice(), &[7, 0, 2]);
        s.remove(0);
        assert_eq!(s.as_slice(), &[7, 2]);
        s.reorder([2, 7]);
        s.remove(2);
        s.insert(1);
        assert_eq!(s.as_slice(), &[7, 1]);
    }
}
