//! Drawing random members as memberlist v0.5.1 does.

use rand::Rng;

/// v0.5.1's `kRandomNodes` (util.go l. 129-160) over a list of `n` entries: up to `k` distinct
/// entries that `pick` accepts, from at most `3n` draws of a random index (`randomOffset`, util.go
/// l. 61-67). The same entry drawn twice counts once, so fewer than `k` may come back.
pub fn k_random<T>(
    k: usize,
    n: usize,
    rng: &mut impl Rng,
    pick: impl Fn(usize) -> Option<T>,
) -> Vec<T> {
    let mut out: Vec<(usize, T)> = Vec::with_capacity(k);
    for _ in 0..3 * n {
        if out.len() >= k {
            break;
        }
        let i = rng.random_range(0..n);
        if out.iter().any(|(j, _)| *j == i) {
            continue;
        }
        if let Some(t) = pick(i) {
            out.push((i, t));
        }
    }
    out.into_iter().map(|(_, t)| t).collect()
}

#[cfg(test)]
mod tests {
    use super::k_random;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// memberlist util_test.go `TestKRandomNodes` (v0.5.1): of 90 nodes, a third alive, three
    /// draws of 3 alive nodes other than `test0` differ, and each has 3 distinct such nodes.
    #[test]
    fn upstream_k_random_nodes() {
        let alive = |i: usize| i.is_multiple_of(3) && i != 0;
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let draws: Vec<Vec<usize>> = (0..3)
            .map(|_| k_random(3, 90, &mut rng, |i| alive(i).then_some(i)))
            .collect();
        assert_ne!(draws[0], draws[1]);
        assert_ne!(draws[0], draws[2]);
        assert_ne!(draws[1], draws[2]);
        for d in &draws {
            assert_eq!(d.len(), 3);
            assert!(d.iter().all(|&i| alive(i)));
            let mut u = d.clone();
            u.sort();
            u.dedup();
            assert_eq!(u.len(), 3, "distinct: {d:?}");
        }
    }

    /// v0.5.1's draw is not a shuffle: with one acceptable entry among many it makes at most
    /// `3n` draws and can come back empty; with none it comes back empty.
    #[test]
    fn k_random_may_return_fewer_than_k() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut empty = 0;
        for _ in 0..2000 {
            let d = k_random(3, 50, &mut rng, |i| (i == 17).then_some(i));
            assert!(d.len() <= 1);
            empty += d.is_empty() as u32;
        }
        // P(no hit in 150 draws) = (49/50)^150, about 4.8%.
        assert!((40..=170).contains(&empty), "{empty} empty draws of 2000");
        assert!(k_random(3, 5, &mut rng, |_| None::<usize>).is_empty());
        assert!(k_random(3, 0, &mut rng, Some).is_empty());
    }
}
