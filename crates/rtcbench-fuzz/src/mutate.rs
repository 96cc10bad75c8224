//! Mutations, AFL's "havoc" stage in spirit: a random stack of small edits of one input, with
//! another corpus input sometimes spliced in, plus token edits for text and a length fix-up for
//! RTCP.

use crate::targets::{Input, Target};

/// xoshiro256** seeded through splitmix64: small, fast and reproducible from one `u64`.
#[derive(Clone, Debug)]
pub struct Rng([u64; 4]);

impl Rng {
    pub fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Self([next(), next(), next(), next()])
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.0;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `0..n`; `n` must not be 0.
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// True with probability 1/n.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }
}

/// Values at the edges of integer ranges, where length and count checks go wrong.
const INTERESTING: &[u64] = &[
    0,
    1,
    2,
    3,
    4,
    7,
    8,
    15,
    16,
    31,
    32,
    63,
    64,
    100,
    127,
    128,
    255,
    256,
    512,
    1000,
    1023,
    1024,
    1500,
    4096,
    0x7FFF,
    0x8000,
    0xFFFF,
    0x1_0000,
    0x7F_FFFF,
    0x80_0000,
    0xFF_FFFF,
    0x7FFF_FFFF,
    0x8000_0000,
    0xFFFF_FFFF,
    u64::MAX,
];

/// Mutates inputs of one target.
pub struct Mutator {
    input: Input,
    max_len: usize,
    /// Tokens for text targets, and magic byte strings for binary ones.
    tokens: Vec<Vec<u8>>,
    /// How many of `tokens`, from the start, are the target's own dictionary.
    own: usize,
}

impl Mutator {
    /// A mutator for `target`, whose text tokens are its dictionary, the trace numbers and the
    /// words of its seeds.
    pub fn new(target: &Target, seeds: &[Vec<u8>]) -> Self {
        let mut tokens: Vec<Vec<u8>> = target.dictionary.iter().map(|t| t.as_bytes().to_vec()).collect();
        if target.input == Input::Text {
            tokens.extend(crate::targets::NUMBERS.iter().map(|t| t.as_bytes().to_vec()));
            for seed in seeds {
                for word in seed.split(|b| !(b.is_ascii_alphanumeric() || b"_.-$:/".contains(b))) {
                    if (2..=48).contains(&word.len()) {
                        tokens.push(word.to_vec());
                    }
                }
            }
        }
        // The target's own tokens first, where `token_edit` picks half of the time: the seeds'
        // words would otherwise drown them.
        let own = target.dictionary.len();
        let mut words = tokens.split_off(own);
        words.sort();
        words.dedup();
        words.retain(|w| !tokens.contains(w));
        tokens.extend(words);
        Self { input: target.input, max_len: target.max_len, tokens, own }
    }

    pub fn tokens(&self) -> usize {
        self.tokens.len()
    }

    /// Replaces `out` with a mutant of `parent`; `other` is another corpus input to splice from.
    pub fn mutate(&self, rng: &mut Rng, parent: &[u8], other: &[u8], out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(parent);
        // Mostly a few edits, sometimes many: most inputs stay close to a valid one.
        let edits = 1 << rng.below(5);
        for _ in 0..edits {
            self.edit(rng, other, out);
        }
        if self.input == Input::Rtcp && rng.one_in(3) {
            fix_rtcp_lengths(rng, out);
        }
        out.truncate(self.max_len);
    }

    fn edit(&self, rng: &mut Rng, other: &[u8], buf: &mut Vec<u8>) {
        let text = self.input == Input::Text;
        // Text gets token edits half of the time; bytes get them only for the magic strings.
        if !self.tokens.is_empty() && rng.below(if text { 2 } else { 12 }) == 0 {
            self.token_edit(rng, buf);
            return;
        }
        match rng.below(12) {
            0 if !buf.is_empty() => {
                let i = rng.below(buf.len());
                buf[i] ^= 1 << rng.below(8);
            }
            1 if !buf.is_empty() => {
                let i = rng.below(buf.len());
                buf[i] = rng.byte();
            }
            2 => self.interesting(rng, buf),
            3 if !buf.is_empty() => {
                // Small arithmetic on a byte, a length or a counter.
                let delta = rng.below(35) as i64 - 17;
                let width = [1, 2, 4][rng.below(3)];
                if buf.len() >= width {
                    let at = rng.below(buf.len() + 1 - width);
                    let v = read_be(&buf[at..at + width]).wrapping_add(delta as u64);
                    write_be(&mut buf[at..at + width], v);
                }
            }
            4 => {
                let at = rng.below(buf.len() + 1);
                let n = 1 + rng.below(16);
                let fill: Vec<u8> =
                    if rng.one_in(2) { (0..n).map(|_| rng.byte()).collect() } else { vec![rng.byte(); n] };
                splice_in(buf, at, &fill);
            }
            5 | 6 if !buf.is_empty() => {
                let (at, n) = range(rng, buf.len());
                buf.drain(at..at + n);
            }
            7 if !buf.is_empty() => {
                // Duplicate a range somewhere: repeated blocks, records and lines.
                let (from, n) = range(rng, buf.len());
                let chunk = buf[from..from + n].to_vec();
                let at = rng.below(buf.len() + 1);
                splice_in(buf, at, &chunk);
            }
            8 if buf.len() >= 2 => {
                // Overwrite a range with a copy of another range.
                let (from, n) = range(rng, buf.len());
                let to = rng.below(buf.len() - n + 1);
                buf.copy_within(from..from + n, to);
            }
            9 | 10 if !other.is_empty() => {
                // Splice: this input's head and the other's tail, or a piece of the other.
                if rng.one_in(2) {
                    let cut = rng.below(buf.len() + 1);
                    let from = rng.below(other.len());
                    buf.truncate(cut);
                    buf.extend_from_slice(&other[from..]);
                } else {
                    let (from, n) = range(rng, other.len());
                    let at = rng.below(buf.len() + 1);
                    splice_in(buf, at, &other[from..from + n]);
                }
            }
            11 if !buf.is_empty() => {
                let cut = rng.below(buf.len());
                buf.truncate(cut);
            }
            _ => {
                let at = rng.below(buf.len() + 1);
                buf.insert(at, rng.byte());
            }
        }
    }

    /// Writes an interesting integer: in binary as 1, 2, 4 or 8 bytes in either order, in text
    /// as decimal.
    fn interesting(&self, rng: &mut Rng, buf: &mut Vec<u8>) {
        let mut v = INTERESTING[rng.below(INTERESTING.len())];
        if rng.one_in(4) {
            v = v.wrapping_neg();
        }
        if self.input == Input::Text {
            let digits = if rng.one_in(4) { (v as i64).to_string() } else { v.to_string() };
            self.replace_or_insert(rng, buf, digits.as_bytes());
            return;
        }
        let width = [1, 2, 4, 8][rng.below(4)];
        if buf.len() < width {
            return;
        }
        let at = rng.below(buf.len() + 1 - width);
        write_be(&mut buf[at..at + width], v);
        if rng.one_in(2) {
            buf[at..at + width].reverse();
        }
    }

    fn token_edit(&self, rng: &mut Rng, buf: &mut Vec<u8>) {
        let from = if self.own > 0 && rng.one_in(2) { self.own } else { self.tokens.len() };
        let token = &self.tokens[rng.below(from)];
        if self.input == Input::Text && rng.one_in(4) {
            replace_quoted(rng, buf, token);
        } else if self.input == Input::Text {
            self.replace_or_insert(rng, buf, token);
        } else if buf.len() >= token.len() && rng.one_in(2) {
            let at = rng.below(buf.len() + 1 - token.len());
            buf[at..at + token.len()].copy_from_slice(token);
        } else {
            let at = rng.below(buf.len() + 1);
            splice_in(buf, at, token);
        }
    }

    /// Text: replaces a word (a run of letters, digits and `._-`) with `token`, or inserts it at
    /// a word boundary or the start of a line.
    fn replace_or_insert(&self, rng: &mut Rng, buf: &mut Vec<u8>, token: &[u8]) {
        let is_word = |b: u8| b.is_ascii_alphanumeric() || b"._-+".contains(&b);
        if buf.is_empty() {
            buf.extend_from_slice(token);
            return;
        }
        let mut at = rng.below(buf.len());
        match rng.below(3) {
            0 => {
                while at > 0 && is_word(buf[at - 1]) {
                    at -= 1;
                }
                let mut end = at;
                while end < buf.len() && is_word(buf[end]) {
                    end += 1;
                }
                buf.splice(at..end, token.iter().copied());
            }
            1 => {
                while at > 0 && buf[at - 1] != b'\n' {
                    at -= 1;
                }
                splice_in(buf, at, token);
            }
            _ => {
                while at < buf.len() && is_word(buf[at]) {
                    at += 1;
                }
                splice_in(buf, at, token);
            }
        }
    }
}

/// Text: replaces a whole quoted string (`"..."` on one line, quotes included) with `token`, so
/// that a value can become a number, a list or a table and the document still parse (a word
/// replaced inside the quotes stays a string).
fn replace_quoted(rng: &mut Rng, buf: &mut Vec<u8>, token: &[u8]) {
    if buf.is_empty() {
        return;
    }
    let from = rng.below(buf.len());
    let Some(open) = buf[from..].iter().position(|&b| b == b'"').map(|k| from + k) else { return };
    let Some(len) = buf[open + 1..].iter().position(|&b| b == b'"' || b == b'\n') else { return };
    let close = open + 1 + len;
    if buf[close] == b'"' {
        buf.splice(open..=close, token.iter().copied());
    }
}

/// A random non-empty range of a buffer of `len` bytes (`len` > 0), biased to short ones.
fn range(rng: &mut Rng, len: usize) -> (usize, usize) {
    let max = if rng.one_in(4) { len } else { len.min(16) };
    let n = 1 + rng.below(max);
    (rng.below(len - n + 1), n)
}

fn splice_in(buf: &mut Vec<u8>, at: usize, bytes: &[u8]) {
    buf.splice(at..at, bytes.iter().copied());
}

fn read_be(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0, |v, &b| (v << 8) | u64::from(b))
}

fn write_be(bytes: &mut [u8], v: u64) {
    let n = bytes.len();
    for (k, b) in bytes.iter_mut().enumerate() {
        *b = (v >> (8 * (n - 1 - k))) as u8;
    }
}

/// Makes the RTCP packets in `buf` tile it (RFC 3550 §6.4.1: each length field counts 32-bit
/// words minus one), keeping each packet's length where it fits and shortening the one that runs
/// past the end. Sometimes also sets V=2. Without this, almost every mutant of a compound fails
/// the length check before any message parser sees it.
pub fn fix_rtcp_lengths(rng: &mut Rng, buf: &mut Vec<u8>) {
    buf.truncate(buf.len() & !3);
    let mut at = 0;
    while at + 4 <= buf.len() {
        if rng.one_in(2) {
            buf[at] = 0x80 | (buf[at] & 0x3F);
        }
        let words = usize::from(u16::from_be_bytes([buf[at + 2], buf[at + 3]]));
        let room = (buf.len() - at) / 4 - 1;
        let words = if words > room { room } else { words };
        buf[at + 2..at + 4].copy_from_slice(&(words as u16).to_be_bytes());
        at += (words + 1) * 4;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtcp_lengths_are_fixed_to_tile_the_buffer() {
        let mut rng = Rng::new(1);
        // Two packets: the first claims 100 words, the second nothing sensible; 3 stray bytes.
        let mut buf = vec![0x80, 201, 0, 100, 0, 0, 0, 1, 0x81, 206, 0xFF, 0xFF, 0, 0, 0, 0, 1, 2, 3];
        fix_rtcp_lengths(&mut rng, &mut buf);
        assert_eq!(buf.len(), 16);
        assert_eq!(&buf[2..4], &[0, 3]);
    }

    #[test]
    fn mutants_are_reproducible_and_bounded() {
        let target = crate::targets::find("rtcp-compound").unwrap();
        let seed = vec![0x80, 201, 0, 1, 0, 0, 0, 7];
        let m = Mutator::new(target, std::slice::from_ref(&seed));
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for _ in 0..1000 {
            m.mutate(&mut a, &seed, &seed, &mut x);
            m.mutate(&mut b, &seed, &seed, &mut y);
            assert_eq!(x, y);
            assert!(x.len() <= target.max_len);
        }
    }
}
