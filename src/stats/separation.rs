//! Where the games leave Bradley–Terry strengths unpinned: groups of models that never lost
//! to (nor tied with) the models of another group.
//!
//! The maximum-likelihood strengths exist (are finite) exactly when the directed graph with an
//! edge i → j whenever i beat or tied j is strongly connected within every connected part of
//! the comparison graph (Zermelo 1929; Ford 1957; a tie is half a win each way, so it links
//! both ways). Otherwise the likelihood keeps rising as the groups are pulled apart, and only
//! the prior (`--prior`) sets how far: the gaps between the strongly connected groups are the
//! prior's, not the data's, and every resample (a subset of the same games) agrees.

use super::counts::{ActivePairs, PairCounts};

/// One connected part of the rated games that falls into more than one strongly connected
/// group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unlinked {
    /// The groups (model indices, increasing), in an order in which no group's models beat or
    /// tied a model of an earlier group.
    pub(crate) groups: Vec<Vec<usize>>,
    /// `(i, j)`: groups `i` and `j` played, and every game between them went `i`'s way (no
    /// tie). Groups that never played have no such pair: the data do not order them.
    pub(crate) above: Vec<(usize, usize)>,
}

/// The parts of the rated games that fall into more than one strongly connected group.
/// Models with `skip[i]` are left out first (with their games).
pub(crate) fn unlinked_groups(
    counts: &PairCounts,
    active: &ActivePairs,
    skip: &[bool],
) -> Vec<Unlinked> {
    let n = counts.n_models();
    let kept = |i: usize| !skip.get(i).copied().unwrap_or(false);
    // i → j: i beat or tied j.
    let mut ahead: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut behind: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut parent: Vec<usize> = (0..n).collect();
    let mut played = vec![false; n];
    for &(i, j) in &active.models {
        if !kept(i) || !kept(j) {
            continue;
        }
        let Ok(t) = counts.pair(i, j) else { continue };
        if t.rated() == 0 {
            continue;
        }
        let (x, y) = (find(&mut parent, i), find(&mut parent, j));
        parent[x] = y;
        played[i] = true;
        played[j] = true;
        let mut edge = |from: usize, to: usize| {
            ahead[from].push(to);
            behind[to].push(from);
        };
        if t.wins_first > 0 || t.ties > 0 {
            edge(i, j);
        }
        if t.wins_second > 0 || t.ties > 0 {
            edge(j, i);
        }
    }
    // Kosaraju: finishing order on the graph, then groups on the reversed graph in reverse
    // finishing order, which comes out sources first.
    let order = finishing_order(&ahead, &played);
    let mut group_of = vec![usize::MAX; n];
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for &start in order.iter().rev() {
        if group_of[start] != usize::MAX {
            continue;
        }
        let g = groups.len();
        let mut members = vec![start];
        group_of[start] = g;
        let mut stack = vec![start];
        while let Some(v) = stack.pop() {
            for &u in &behind[v] {
                if group_of[u] == usize::MAX {
                    group_of[u] = g;
                    members.push(u);
                    stack.push(u);
                }
            }
        }
        members.sort_unstable();
        groups.push(members);
    }
    // Per connected part, its groups in the order found, and which group is above which.
    let mut parts: Vec<(usize, Unlinked)> = Vec::new();
    let mut place = vec![(0usize, 0usize); groups.len()];
    for (g, members) in groups.iter().enumerate() {
        let root = find(&mut parent, members[0]);
        let k = match parts.iter().position(|(r, _)| *r == root) {
            Some(k) => k,
            None => {
                let empty = Unlinked {
                    groups: Vec::new(),
                    above: Vec::new(),
                };
                parts.push((root, empty));
                parts.len() - 1
            }
        };
        place[g] = (k, parts[k].1.groups.len());
        parts[k].1.groups.push(members.clone());
    }
    for (from, to) in ahead.iter().enumerate() {
        for &v in to {
            let (gf, gv) = (group_of[from], group_of[v]);
            if gf != gv {
                let (k, i) = place[gf];
                let (_, j) = place[gv];
                parts[k].1.above.push((i, j));
            }
        }
    }
    parts
        .into_iter()
        .map(|(_, mut part)| {
            part.above.sort_unstable();
            part.above.dedup();
            part
        })
        .filter(|part| part.groups.len() > 1)
        .collect()
}

fn find(p: &mut [usize], mut x: usize) -> usize {
    while p[x] != x {
        p[x] = p[p[x]];
        x = p[x];
    }
    x
}

/// The played vertices in the order a depth-first search finishes them (iterative: no
/// recursion depth to run out of).
fn finishing_order(ahead: &[Vec<usize>], played: &[bool]) -> Vec<usize> {
    let n = ahead.len();
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    for root in (0..n).filter(|&i| played[i]) {
        if seen[root] {
            continue;
        }
        seen[root] = true;
        let mut stack = vec![(root, 0usize)];
        while let Some((v, next)) = stack.last_mut() {
            if let Some(&u) = ahead[*v].get(*next) {
                *next += 1;
                if !seen[u] {
                    seen[u] = true;
                    stack.push((u, 0));
                }
            } else {
                order.push(*v);
                stack.pop();
            }
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Outcome;

    fn parts(n: usize, games: &[(usize, usize, Outcome)], skip: &[bool]) -> Vec<Unlinked> {
        let mut counts = PairCounts::new(n);
        for &(a, b, o) in games {
            counts.add(a, b, o).unwrap();
        }
        let active = ActivePairs::from_counts(&counts);
        unlinked_groups(&counts, &active, skip)
    }

    fn groups(n: usize, games: &[(usize, usize, Outcome)], skip: &[bool]) -> Vec<Vec<Vec<usize>>> {
        parts(n, games, skip)
            .into_iter()
            .map(|p| p.groups)
            .collect()
    }

    #[test]
    fn a_group_that_never_lost_to_the_rest_is_found_in_order() {
        use Outcome::{AWins, BWins, Tie};
        // 0 and 1 tie and beat 2, 3 and 4, which beat each other round.
        let games = [
            (0, 1, Tie),
            (0, 2, AWins),
            (3, 1, BWins),
            (2, 3, AWins),
            (3, 4, AWins),
            (4, 2, AWins),
        ];
        assert_eq!(
            groups(5, &games, &[]),
            vec![vec![vec![0, 1], vec![2, 3, 4]]]
        );
        // One loss of 0 to 4 links everything.
        let mut linked = games.to_vec();
        linked.push((4, 0, AWins));
        assert!(groups(5, &linked, &[]).is_empty());
    }

    #[test]
    fn a_chain_is_one_group_per_model_and_skipped_models_leave_it() {
        use Outcome::AWins;
        let chain = [(0, 1, AWins), (1, 2, AWins), (2, 3, AWins), (0, 3, AWins)];
        assert_eq!(
            groups(4, &chain, &[]),
            vec![vec![vec![0], vec![1], vec![2], vec![3]]]
        );
        // Without the top and the bottom (each warned of alone), 1 and 2 still split.
        assert_eq!(
            groups(4, &chain, &[true, false, false, true]),
            vec![vec![vec![1], vec![2]]]
        );
        assert!(groups(3, &chain[..2], &[true, false, true]).is_empty());
    }

    /// Groups that never played are not ordered: only the pairs of groups that did are.
    #[test]
    fn only_groups_that_played_are_ordered() {
        use Outcome::{AWins, Tie};
        // {0, 1} beat {2, 3} and {4, 5}, which never meet.
        let games = [
            (0, 1, Tie),
            (2, 3, Tie),
            (4, 5, Tie),
            (0, 2, AWins),
            (1, 5, AWins),
        ];
        let found = parts(6, &games, &[]);
        assert_eq!(found.len(), 1);
        let part = &found[0];
        let name = |i: usize| part.groups[i].clone();
        let mut above: Vec<(Vec<usize>, Vec<usize>)> = part
            .above
            .iter()
            .map(|&(i, j)| (name(i), name(j)))
            .collect();
        above.sort();
        assert_eq!(
            above,
            vec![(vec![0, 1], vec![2, 3]), (vec![0, 1], vec![4, 5])]
        );
    }

    #[test]
    fn separate_parts_are_judged_apart() {
        use Outcome::{AWins, Tie};
        // {0, 1} linked both ways; {2, 3} not.
        let games = [(0, 1, Tie), (2, 3, AWins)];
        assert_eq!(groups(4, &games, &[]), vec![vec![vec![2], vec![3]]]);
    }
}
