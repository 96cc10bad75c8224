//! Wrapping sequence numbers (RTP's 16-bit sequence, transport-wide sequence, RTP timestamps)
//! and their unwrapping into a monotonic 64-bit space.

/// A wrapping sequence number of `BITS` bits (16 for RTP and transport-wide sequence numbers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SeqNo<const BITS: u32>(u64);

impl<const BITS: u32> SeqNo<BITS> {
    const MODULUS: u64 = 1 << BITS;

    pub const fn new(value: u64) -> Self {
        Self(value & (Self::MODULUS - 1))
    }
    pub const fn value(self) -> u64 {
        self.0
    }
    /// The next number, wrapping at 2^BITS.
    pub const fn next(self) -> Self {
        Self::new(self.0 + 1)
    }
    /// Signed distance from `self` to `other` in the shorter direction (RFC 1982 style).
    pub fn distance_to(self, other: Self) -> i64 {
        let diff = other.0.wrapping_sub(self.0) & (Self::MODULUS - 1);
        if diff >= Self::MODULUS / 2 {
            diff as i64 - Self::MODULUS as i64
        } else {
            diff as i64
        }
    }
    /// True if `self` comes after `other` in sequence-number order.
    pub fn is_newer_than(self, other: Self) -> bool {
        other.distance_to(self) > 0
    }
}

/// Turns a stream of wrapping sequence numbers into 64-bit ones: each value is placed at the
/// unwrapped position closest to the last one seen, so reordering within half the space is safe.
#[derive(Clone, Debug, Default)]
pub struct SeqUnwrapper<const BITS: u32> {
    last: Option<i64>,
}

impl<const BITS: u32> SeqUnwrapper<BITS> {
    pub const fn new() -> Self {
        Self { last: None }
    }
    /// The unwrapped value of `seq`. Never negative for the first 2^(BITS-1) values.
    pub fn unwrap(&mut self, seq: SeqNo<BITS>) -> i64 {
        let unwrapped = match self.last {
            None => seq.value() as i64,
            Some(last) => {
                let last_wrapped = SeqNo::<BITS>::new(last.rem_euclid(1 << BITS) as u64);
                last + last_wrapped.distance_to(seq)
            }
        };
        self.last = Some(self.last.map_or(unwrapped, |l| l.max(unwrapped)));
        unwrapped
    }
    /// The unwrapped value of `seq` without remembering it.
    pub fn peek(&self, seq: SeqNo<BITS>) -> i64 {
        self.clone().unwrap(seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn wraps_and_orders() {
        let a = SeqNo::<16>::new(65535);
        assert_eq!(a.next().value(), 0);
        assert_eq!(a.distance_to(SeqNo::new(2)), 3);
        assert_eq!(SeqNo::<16>::new(2).distance_to(a), -3);
        assert!(SeqNo::<16>::new(1).is_newer_than(a));
    }

    #[test]
    fn unwraps_across_the_wrap_and_back() {
        let mut u = SeqUnwrapper::<16>::new();
        assert_eq!(u.unwrap(SeqNo::new(65534)), 65534);
        assert_eq!(u.unwrap(SeqNo::new(1)), 65537);
        // A late packet from before the wrap lands before it.
        assert_eq!(u.unwrap(SeqNo::new(65535)), 65535);
        assert_eq!(u.unwrap(SeqNo::new(2)), 65538);
    }

    proptest! {
        /// A monotonic 64-bit counter, wrapped to 16 bits and unwrapped, comes back unchanged.
        #[test]
        fn unwrap_inverts_wrap(start in 0u64..1_000_000, steps in proptest::collection::vec(1u64..30_000, 1..50)) {
            let mut u = SeqUnwrapper::<16>::new();
            let mut x = start;
            let first = u.unwrap(SeqNo::new(x));
            let offset = x as i64 - first;
            for s in steps {
                x += s;
                prop_assert_eq!(u.unwrap(SeqNo::new(x)) + offset, x as i64);
            }
        }
    }
}
