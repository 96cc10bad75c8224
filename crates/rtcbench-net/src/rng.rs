//! Deterministic randomness: every random element gets its own generator, derived from the
//! scenario seed and the element's path ("link/forward/loss"), so adding an element never
//! changes the draws of another and a run is a pure function of (scenario, controller, seed).
//! The simulator derives the streams of its other random parts (sources, ids) here too.

use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

/// The generator type of every element (and of the simulator's other random parts).
pub type SimRng = Pcg64Mcg;

/// FNV-1a over the path, mixed with the seed by SplitMix64 (both stable across platforms and
/// Rust versions, unlike `std`'s hasher).
pub fn derive_seed(seed: u64, path: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in path.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    splitmix64(seed ^ splitmix64(h))
}

/// SplitMix64's output function (Steele, Lea, Flood 2014): a bijective mix of 64 bits.
pub(crate) fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A generator for the element at `path`.
pub fn rng_for(seed: u64, path: &str) -> SimRng {
    SimRng::seed_from_u64(derive_seed(seed, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_seeds_give_distinct_streams() {
        assert_ne!(derive_seed(1, "link/forward/loss"), derive_seed(1, "link/backward/loss"));
        assert_ne!(derive_seed(1, "a"), derive_seed(2, "a"));
        assert_eq!(derive_seed(7, "a"), derive_seed(7, "a"));
    }
}
