//! A topological order that stays valid as ordering edges are added
//! (Pearce and Kelly's dynamic topological sort). Adding an edge costs time
//! proportional to the part of the order it disturbs, not to the graph, so
//! the in-place pass can test thousands of candidates on a large graph.

use crate::graph::NodeId;

pub struct DynTopo {
    pos: Vec<usize>,
    at: Vec<NodeId>,
    succ: Vec<Vec<NodeId>>,
    pred: Vec<Vec<NodeId>>,
    mark: Vec<u32>,
    epoch: u32,
}

impl DynTopo {
    /// Starts from `order`, a topological order of the edges `(from, to)`.
    pub fn new(order: &[NodeId], edges: impl IntoIterator<Item = (NodeId, NodeId)>) -> DynTopo {
        let n = order.len();
        let mut pos = vec![0; n];
        for (p, &v) in order.iter().enumerate() {
            pos[v] = p;
        }
        let mut t = DynTopo {
            pos,
            at: order.to_vec(),
            succ: vec![Vec::new(); n],
            pred: vec![Vec::new(); n],
            mark: vec![0; n],
            epoch: 0,
        };
        for (a, b) in edges {
            t.succ[a].push(b);
            t.pred[b].push(a);
        }
        t
    }

    pub fn order(&self) -> &[NodeId] {
        &self.at
    }

    fn next_epoch(&mut self) -> u32 {
        self.epoch += 1;
        self.epoch
    }

    /// Nodes reachable from `from` whose position is at most `bound`.
    fn forward(&mut self, from: NodeId, bound: usize) -> Vec<NodeId> {
        let e = self.next_epoch();
        let mut out = vec![from];
        self.mark[from] = e;
        let mut i = 0;
        while i < out.len() {
            let v = out[i];
            i += 1;
            for k in 0..self.succ[v].len() {
                let w = self.succ[v][k];
                if self.mark[w] != e && self.pos[w] <= bound {
                    self.mark[w] = e;
                    out.push(w);
                }
            }
        }
        out
    }

    /// Nodes that reach `to` whose position is at least `bound`.
    fn backward(&mut self, to: NodeId, bound: usize) -> Vec<NodeId> {
        let e = self.next_epoch();
        let mut out = vec![to];
        self.mark[to] = e;
        let mut i = 0;
        while i < out.len() {
            let v = out[i];
            i += 1;
            for k in 0..self.pred[v].len() {
                let w = self.pred[v][k];
                if self.mark[w] != e && self.pos[w] >= bound {
                    self.mark[w] = e;
                    out.push(w);
                }
            }
        }
        out
    }

    /// True when `to` can be reached from `from` along the edges.
    pub fn reaches(&mut self, from: NodeId, to: NodeId) -> bool {
        if self.pos[from] > self.pos[to] {
            return false;
        }
        let bound = self.pos[to];
        self.forward(from, bound).contains(&to)
    }

    /// Adds the edge `a -> b`. Returns false, adding nothing, when it would
    /// close a cycle.
    pub fn add_edge(&mut self, a: NodeId, b: NodeId) -> bool {
        if a == b {
            return false;
        }
        let (pa, pb) = (self.pos[a], self.pos[b]);
        if pa > pb {
            let fwd = self.forward(b, pa);
            if fwd.contains(&a) {
                return false;
            }
            let back = self.backward(a, pb);
            // Reassign the positions both sets occupy: everything that
            // reaches `a` first, then everything `b` reaches, each in its
            // current relative order.
            let mut back = back;
            let mut fwd = fwd;
            back.sort_by_key(|&v| self.pos[v]);
            fwd.sort_by_key(|&v| self.pos[v]);
            let mut slots: Vec<usize> = back.iter().chain(&fwd).map(|&v| self.pos[v]).collect();
            slots.sort_unstable();
            for (&v, &p) in back.iter().chain(&fwd).zip(&slots) {
                self.pos[v] = p;
                self.at[p] = v;
            }
        }
        self.succ[a].push(b);
        self.pred[b].push(a);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backward_edge_reorders_and_cycle_is_refused() {
        // 0 -> 1 -> 2, and 3 alone; order 0 1 2 3.
        let mut t = DynTopo::new(&[0, 1, 2, 3], [(0, 1), (1, 2)]);
        assert!(t.add_edge(3, 1));
        let o = t.order().to_vec();
        let p = |v| o.iter().position(|&x| x == v).unwrap();
        assert!(p(3) < p(1) && p(0) < p(1) && p(1) < p(2));
        assert!(!t.add_edge(2, 0));
        assert!(!t.add_edge(2, 3));
        assert!(t.reaches(3, 2));
        assert!(!t.reaches(2, 3));
    }
}
