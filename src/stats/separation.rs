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

/// The strongly connected groups of each connected part of the rated games that falls into
/// more than one, in order: every group's models beat or tied no model of an earlier group.
/// Models with `skip[i]` are left out first (with their games). Groups list model indices in
/// increasing order.
pub(crate) fn unlinked_groups(
    counts: &PairCounts,
    active: &ActivePairs,
    skip: &[bool],
) -> Vec<Vec<Vec<usize>>> {
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
    // Per connected part, its groups in the order found.
    let mut parts: Vec<(usize, Vec<Vec<usize>>)> = Vec::new();
    for members in groups {
        let root = find(&mut parent, members[0]);
        match parts.iter_mut().find(|(r, _)| *r == root) {
            Some((_, part)) => part.push(members),
            None => parts.push((root, vec![members])),
        }
    }
    parts
        .into_iter()
        .map(|(_, part)| part)
        .filter(|part| part.len() > 1)
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

    fn groups(n: usize, games: &[(usize, usize, Outcome)], skip: &[bool]) -> Vec<Vec<Vec<usize>>> {
        let mut counts = PairCounts::new(n);
        for &(a, b, o) in games {
            counts.add(a, b, o).unwrap();
        }
        let active = ActivePairs::from_counts(&counts);
        unlinked_groups(&counts, &active, skip)
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

    #[test]
    fn separate_parts_are_judged_apart() {
        use Outcome::{AWins, Tie};
        // {0, 1} linked both ways; {2, 3} not.
        let games = [(0, 1, Tie), (2, 3, AWins)];
        assert_eq!(groups(4, &games, &[]), vec![vec![vec![2], vec![3]]]);
    }
}
