//! LightGBM's trees evaluated in Rust: the op model is priced for every
//! kernel of every window of a trace, and LightGBM's C API spends most of a
//! call turning each dense row into a sparse one. This walks the same
//! trees over the dense rows directly, with LightGBM's decision rules for
//! numerical splits, and gives the same sums (a test checks it).

/// Bits of LightGBM's `decision_type`.
const CATEGORICAL: u8 = 1;
const DEFAULT_LEFT: u8 = 2;
/// Missing-value handling, bits 2-3 of `decision_type`.
const MISSING_ZERO: u8 = 1;
const MISSING_NAN: u8 = 2;
/// LightGBM's `kZeroThreshold`: values this close to 0 count as zero.
const ZERO: f64 = 1e-35;

/// Every tree's split nodes and leaves in flat arrays.
#[derive(Debug, Default)]
pub(crate) struct Forest {
    /// Per tree: its first split node and first leaf.
    roots: Vec<(u32, u32)>,
    feature: Vec<u32>,
    threshold: Vec<f64>,
    decision: Vec<u8>,
    /// Children: >= 0 a split node of the same tree, < 0 the leaf !child.
    left: Vec<i32>,
    right: Vec<i32>,
    leaf_value: Vec<f64>,
}

fn values<T: std::str::FromStr>(line: &str, key: &str) -> Result<Vec<T>, String> {
    line.split(' ')
        .filter(|v| !v.is_empty())
        .map(|v| v.parse::<T>().map_err(|_| format!("`{key}` holds `{v}`, not a number")))
        .collect()
}

impl Forest {
    /// From LightGBM's text model (`Booster::save_string`).
    pub(crate) fn parse(text: &str) -> Result<Forest, String> {
        let mut forest = Forest::default();
        let mut lines = text.lines().peekable();
        while let Some(line) = lines.next() {
            if !line.starts_with("Tree=") {
                continue;
            }
            let mut fields = std::collections::HashMap::new();
            while let Some(field) = lines.peek().filter(|l| !l.is_empty()) {
                if let Some((k, v)) = field.split_once('=') {
                    fields.insert(k, v);
                }
                lines.next();
            }
            forest.push_tree(line, &fields)?;
        }
        if forest.roots.is_empty() {
            return Err("no trees in the model text".into());
        }
        Ok(forest)
    }

    fn push_tree(&mut self, header: &str, f: &std::collections::HashMap<&str, &str>) -> Result<(), String> {
        let get = |k: &str| f.get(k).copied().ok_or_else(|| format!("{header}: no `{k}`"));
        let leaves: Vec<f64> = values(get("leaf_value")?, "leaf_value")?;
        if get("num_cat").is_ok_and(|n| n.trim() != "0") {
            return Err(format!("{header}: categorical splits are not supported"));
        }
        let first_node = self.feature.len() as u32;
        self.roots.push((first_node, self.leaf_value.len() as u32));
        self.leaf_value.extend_from_slice(&leaves);
        if leaves.len() == 1 {
            return Ok(());
        }
        let feature: Vec<u32> = values(get("split_feature")?, "split_feature")?;
        let threshold: Vec<f64> = values(get("threshold")?, "threshold")?;
        let decision: Vec<u8> = values(get("decision_type")?, "decision_type")?;
        let left: Vec<i32> = values(get("left_child")?, "left_child")?;
        let right: Vec<i32> = values(get("right_child")?, "right_child")?;
        let n = leaves.len() - 1;
        if [feature.len(), threshold.len(), decision.len(), left.len(), right.len()]
            .iter()
            .any(|&l| l != n)
        {
            return Err(format!(
                "{header}: {} leaves but split arrays of other lengths",
                leaves.len()
            ));
        }
        if decision.iter().any(|d| d & CATEGORICAL != 0) {
            return Err(format!("{header}: categorical splits are not supported"));
        }
        let in_range = |c: i32| {
            if c >= 0 {
                (c as usize) < n
            } else {
                ((!c) as usize) < leaves.len()
            }
        };
        if !left.iter().chain(&right).all(|&c| in_range(c)) {
            return Err(format!("{header}: a child index out of range"));
        }
        self.feature.extend(feature);
        self.threshold.extend(threshold);
        self.decision.extend(decision);
        self.left.extend(left);
        self.right.extend(right);
        Ok(())
    }

    /// Highest input index a split reads.
    pub(crate) fn max_feature(&self) -> Option<usize> {
        self.feature.iter().max().map(|&f| f as usize)
    }

    /// The raw score of one dense row: the sum of its leaves.
    #[cfg(test)]
    pub(crate) fn predict(&self, row: &[f64]) -> f64 {
        self.predict_rows(&[row])[0]
    }

    /// The raw scores of many dense rows, tree by tree: a tree's nodes stay
    /// in cache while it walks every row, where a walk of all trees per row
    /// fetches the whole forest again for each row. Each row's leaves are
    /// added in tree order, so its sum is the same to the bit.
    pub(crate) fn predict_rows<R: AsRef<[f64]>>(&self, rows: &[R]) -> Vec<f64> {
        let mut sums = vec![0.0; rows.len()];
        for (t, &(first_node, first_leaf)) in self.roots.iter().enumerate() {
            let leaves_end = self.roots.get(t + 1).map_or(self.leaf_value.len(), |r| r.1 as usize);
            let leaves = &self.leaf_value[first_leaf as usize..leaves_end];
            if leaves.len() == 1 {
                sums.iter_mut().for_each(|s| *s += leaves[0]);
                continue;
            }
            for (row, sum) in rows.iter().zip(&mut sums) {
                let row = row.as_ref();
                let mut node = first_node as usize;
                let leaf = loop {
                    let child = self.child(node, row[self.feature[node] as usize]);
                    if child < 0 {
                        break (!child) as usize;
                    }
                    node = first_node as usize + child as usize;
                };
                *sum += leaves[leaf];
            }
        }
        sums
    }

    /// LightGBM's numerical decision at a split node.
    fn child(&self, node: usize, value: f64) -> i32 {
        let decision = self.decision[node];
        let missing = (decision >> 2) & 3;
        let value = if value.is_nan() && missing != MISSING_NAN {
            0.0
        } else {
            value
        };
        let is_missing = (missing == MISSING_ZERO && value.abs() <= ZERO) || (missing == MISSING_NAN && value.is_nan());
        let go_left = if is_missing {
            decision & DEFAULT_LEFT != 0
        } else {
            value <= self.threshold[node]
        };
        if go_left { self.left[node] } else { self.right[node] }
    }
}
