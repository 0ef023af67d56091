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

/// One node of a tree. Split nodes come first; each leaf follows as a
/// node whose children are itself, so a walk that goes on past a leaf
/// stays there (`Forest::predict_rows` walks several rows in step).
#[derive(Clone, Copy, Debug)]
struct Node {
    threshold: f64,
    feature: u32,
    /// Children, as node indices within the tree.
    left: u32,
    right: u32,
    decision: u8,
    /// Where a NaN input goes, LightGBM's rule for this node's missing
    /// type worked out once: the default side for `NaN` missing values,
    /// else NaN counts as 0.
    nan_left: bool,
}

/// Where a tree's nodes and leaf values start, and how many split nodes it has.
#[derive(Clone, Copy, Debug)]
struct TreeAt {
    first_node: u32,
    first_leaf: u32,
    splits: u32,
}

/// Every tree's nodes and leaves in flat arrays.
#[derive(Debug, Default)]
pub(crate) struct Forest {
    trees: Vec<TreeAt>,
    nodes: Vec<Node>,
    leaf_value: Vec<f64>,
    /// Whether some split treats zero as missing (LightGBM's
    /// `zero_as_missing`): only then does a walk need the general rule.
    zero_missing: bool,
}

/// Rows a tree walks at once: their walks are independent, so the CPU
/// overlaps them instead of waiting on one row's chain of node loads.
const LANES: usize = 16;

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
        if forest.trees.is_empty() {
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
        let first_node = self.nodes.len() as u32;
        let first_leaf = self.leaf_value.len() as u32;
        self.leaf_value.extend_from_slice(&leaves);
        if leaves.len() == 1 {
            self.trees.push(TreeAt {
                first_node,
                first_leaf,
                splits: 0,
            });
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
        // LightGBM's children: >= 0 a split node, < 0 the leaf !child; here
        // leaf k is node n + k.
        let node_of = |c: i32| -> Option<u32> {
            let index = if c >= 0 {
                ((c as usize) < n).then_some(c as usize)
            } else {
                (((!c) as usize) < leaves.len()).then_some(n + (!c) as usize)
            };
            index.map(|i| i as u32)
        };
        for i in 0..n {
            let (Some(l), Some(r)) = (node_of(left[i]), node_of(right[i])) else {
                return Err(format!("{header}: a child index out of range"));
            };
            let (missing, default_left) = ((decision[i] >> 2) & 3, decision[i] & DEFAULT_LEFT != 0);
            self.zero_missing |= missing == MISSING_ZERO;
            self.nodes.push(Node {
                threshold: threshold[i],
                feature: feature[i],
                left: l,
                right: r,
                decision: decision[i],
                nan_left: match missing {
                    MISSING_NAN | MISSING_ZERO => default_left,
                    _ => 0.0 <= threshold[i],
                },
            });
        }
        for k in 0..leaves.len() {
            let itself = (n + k) as u32;
            self.nodes.push(Node {
                threshold: 0.0,
                feature: 0,
                left: itself,
                right: itself,
                decision: 0,
                nan_left: true,
            });
        }
        self.trees.push(TreeAt {
            first_node,
            first_leaf,
            splits: n as u32,
        });
        Ok(())
    }

    /// Highest input index a split reads.
    pub(crate) fn max_feature(&self) -> Option<usize> {
        self.trees
            .iter()
            .flat_map(|t| &self.nodes[t.first_node as usize..][..t.splits as usize])
            .map(|node| node.feature as usize)
            .max()
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
        for (t, tree) in self.trees.iter().enumerate() {
            let leaves_end = self
                .trees
                .get(t + 1)
                .map_or(self.leaf_value.len(), |n| n.first_leaf as usize);
            let leaves = &self.leaf_value[tree.first_leaf as usize..leaves_end];
            if tree.splits == 0 {
                sums.iter_mut().for_each(|s| *s += leaves[0]);
                continue;
            }
            let nodes = &self.nodes[tree.first_node as usize..][..tree.splits as usize + leaves.len()];
            for (rows, sums) in rows.chunks(LANES).zip(sums.chunks_mut(LANES)) {
                let mut at = [0u32; LANES];
                if self.zero_missing {
                    walk(nodes, tree.splits, rows, &mut at, child);
                } else {
                    walk(nodes, tree.splits, rows, &mut at, nan_aware_child);
                }
                for (sum, a) in sums.iter_mut().zip(at) {
                    *sum += leaves[(a - tree.splits) as usize];
                }
            }
        }
        sums
    }
}

/// Steps every lane of `rows` down one tree (`nodes`, of which the first
/// `splits` are split nodes) by `step` until all have reached a leaf (a
/// leaf steps to itself). Generic over `step`, so each rule is inlined.
#[inline]
fn walk<R: AsRef<[f64]>>(
    nodes: &[Node],
    splits: u32,
    rows: &[R],
    at: &mut [u32; LANES],
    step: impl Fn(&Node, f64) -> u32,
) {
    while at[..rows.len()].iter().any(|&a| a < splits) {
        for (a, row) in at.iter_mut().zip(rows) {
            let node = &nodes[*a as usize];
            *a = step(node, row.as_ref()[node.feature as usize]);
        }
    }
}

/// [`child`] where no split treats zero as missing: a comparison, and the
/// node's side for NaN. Without branches on the data, so the CPU does not
/// mispredict half the walks (`tracecast ops bench` prints the speed).
#[inline]
fn nan_aware_child(node: &Node, value: f64) -> u32 {
    let go_left = (value <= node.threshold) | (value.is_nan() & node.nan_left);
    if go_left { node.left } else { node.right }
}

/// LightGBM's numerical decision at a split node: the child's node index.
#[inline]
fn child(node: &Node, value: f64) -> u32 {
    let decision = node.decision;
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
        value <= node.threshold
    };
    if go_left { node.left } else { node.right }
}
