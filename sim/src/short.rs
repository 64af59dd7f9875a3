//! [`Short`]: a short string kept inline and ordered as its text by two integer comparisons.
//!
//! The Cilium model keys its address pools, used-IP maps and handshake maps by IP address
//! ("10.17.0.3") and stores interface names, pod names and handshake states as values. As `String`s
//! every map lookup was a chain of `memcmp` calls and every copied map an allocation per entry:
//! a fifth of a Cilium run's instructions went to comparing such strings. A `Short` holds up to
//! [`Short::MAX`] bytes in place, is `Copy`, and compares as two big-endian integers, which orders
//! it exactly as the text (see [`Ord`] below), so maps iterate in the same order as with `String`
//! keys and runs are unchanged. It serializes as a string: JSON and trace encodings are those of
//! the text.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;

/// A string of at most [`Short::MAX`] bytes and no NUL byte, stored inline (NUL-padded).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Short([u8; 24]);

/// A string that does not fit a [`Short`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TooLong(pub String);

impl fmt::Display for TooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "'{}' is not a short string (at most {} bytes, no NUL)",
            self.0.escape_debug(),
            Short::MAX
        )
    }
}

impl std::error::Error for TooLong {}

impl Short {
    /// The longest text a `Short` holds, in bytes.
    pub const MAX: usize = 23;

    /// `s` as a `Short`, if it is at most [`Short::MAX`] bytes and has no NUL byte.
    pub fn new(s: &str) -> Result<Short, TooLong> {
        let b = s.as_bytes();
        if b.len() > Self::MAX || b.contains(&0) {
            return Err(TooLong(s.to_string()));
        }
        let mut a = [0u8; 24];
        a[..b.len()].copy_from_slice(b);
        Ok(Short(a))
    }

    /// Formats `args` straight into a `Short` (no heap string in between): `Short::from_fmt(
    /// format_args!("eni-{i}"))`. Fails, with the text written so far, if it does not fit.
    pub fn from_fmt(args: fmt::Arguments<'_>) -> Result<Short, TooLong> {
        struct Fill([u8; 24], usize);
        impl fmt::Write for Fill {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                let b = s.as_bytes();
                let end = self.1 + b.len();
                if end > Short::MAX || b.contains(&0) {
                    return Err(fmt::Error);
                }
                self.0[self.1..end].copy_from_slice(b);
                self.1 = end;
                Ok(())
            }
        }
        let mut fill = Fill([0; 24], 0);
        match fmt::write(&mut fill, args) {
            Ok(()) => Ok(Short(fill.0)),
            Err(_) => Err(TooLong(args.to_string())),
        }
    }

    /// A string known to fit (a literal in the code), usable in constants. Panics if it does not.
    pub const fn lit(s: &str) -> Short {
        let b = s.as_bytes();
        assert!(b.len() <= Self::MAX, "a short string is at most 23 bytes");
        let mut a = [0u8; 24];
        let mut i = 0;
        while i < b.len() {
            assert!(b[i] != 0, "a short string has no NUL byte");
            a[i] = b[i];
            i += 1;
        }
        Short(a)
    }

    /// The text's first 16 and last 8 bytes as big-endian integers.
    fn words(&self) -> (u128, u64) {
        let (hi, lo) = self.0.split_at(16);
        (
            u128::from_be_bytes(hi.try_into().expect("16 bytes")),
            u64::from_be_bytes(lo.try_into().expect("8 bytes")),
        )
    }

    /// Its length in bytes: the padding is the trailing zero bytes.
    pub fn len(&self) -> usize {
        let (hi, lo) = self.words();
        if lo != 0 {
            24 - lo.trailing_zeros() as usize / 8
        } else {
            16 - hi.trailing_zeros() as usize / 8
        }
    }

    /// Whether it is the empty string.
    pub fn is_empty(&self) -> bool {
        self.0[0] == 0
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        // Checked: every constructor copies whole `&str`s into zeroed bytes, so this cannot fail
        // (skipping the check saved 0.8 % of a Cilium run; not worth it).
        std::str::from_utf8(&self.0[..self.len()]).expect("a Short holds whole UTF-8 text")
    }
}

/// Orders as the text: the bytes are compared as two big-endian integers, and a shorter string's
/// NUL padding sorts below any byte of a longer one that it is a prefix of (text has no NUL).
impl Ord for Short {
    fn cmp(&self, other: &Self) -> Ordering {
        self.words().cmp(&other.words())
    }
}

impl PartialOrd for Short {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Hashes as its text, as `Borrow<str>` requires.
impl std::hash::Hash for Short {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

/// Sound because equality, order and hash agree with the text's (a map keyed by `Short` can be
/// searched with a `&str`).
impl Borrow<str> for Short {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl std::ops::Deref for Short {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq<str> for Short {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Short {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl TryFrom<&str> for Short {
    type Error = TooLong;
    fn try_from(s: &str) -> Result<Short, TooLong> {
        Short::new(s)
    }
}

impl From<Short> for String {
    fn from(s: Short) -> String {
        s.as_str().to_string()
    }
}

impl fmt::Display for Short {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Short {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl Serialize for Short {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Short {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Short, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Short;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a string of at most {} bytes", Short::MAX)
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Short, E> {
                Short::new(s).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Text of 0 to 23 bytes from a small alphabet (digits, dots, letters, a two-byte char), so
    /// that prefixes and shared stems are common.
    fn text() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop::sample::select(vec!["0", "1", "9", ".", "-", "a", "z", "é"]),
            0..12,
        )
        .prop_map(|v| v.concat())
        .prop_filter("fits", |s| s.len() <= Short::MAX)
    }

    /// A fixed-key hash (every `DefaultHasher::new()` hashes alike).
    fn hash_of<T: std::hash::Hash + ?Sized>(t: &T) -> u64 {
        use std::hash::Hasher;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        t.hash(&mut h);
        h.finish()
    }

    proptest! {
        #[test]
        fn orders_and_compares_as_its_text(a in text(), b in text()) {
            let (x, y) = (Short::new(&a).unwrap(), Short::new(&b).unwrap());
            prop_assert_eq!(x.cmp(&y), a.cmp(&b));
            prop_assert_eq!(x == y, a == b);
            prop_assert_eq!(x.as_str(), a.as_str());
            prop_assert_eq!(x.len(), a.len());
            prop_assert_eq!(x.is_empty(), a.is_empty());
            prop_assert_eq!(hash_of(&x), hash_of(a.as_str()));
        }
    }

    #[test]
    fn addresses_sort_as_strings_do() {
        let mut v = [
            "10.0.0.9",
            "10.0.0.10",
            "10.0.0.1",
            "10.0.1.1",
            "9.0.0.0",
            "10.0.0.100",
        ];
        let mut s: Vec<Short> = v.iter().map(|a| Short::new(a).unwrap()).collect();
        v.sort();
        s.sort();
        assert_eq!(s.iter().map(|x| x.as_str()).collect::<Vec<_>>(), v);
    }

    #[test]
    fn formats_in_place_as_format_does() {
        for i in [0u32, 7, 42, 123_456] {
            let s = Short::from_fmt(format_args!("eni-{i}")).unwrap();
            assert_eq!(s.as_str(), format!("eni-{i}"));
            assert_eq!(s, Short::new(&format!("eni-{i}")).unwrap());
        }
        let long = Short::from_fmt(format_args!("{}-{}", "n".repeat(20), 1234));
        assert_eq!(long, Err(TooLong(format!("{}-1234", "n".repeat(20)))));
        assert!(Short::from_fmt(format_args!("a{}b", '\0')).is_err());
        let max = "x".repeat(Short::MAX);
        assert_eq!(
            Short::from_fmt(format_args!("{max}")).unwrap().as_str(),
            max
        );
    }

    #[test]
    fn the_longest_fits_and_longer_or_nul_does_not() {
        let max = "x".repeat(Short::MAX);
        assert_eq!(Short::new(&max).unwrap().as_str(), max);
        assert!(Short::new(&format!("{max}x")).is_err());
        assert!(Short::new("a\0b").is_err());
        assert_eq!(Short::new("").unwrap().len(), 0);
        const L: Short = Short::lit("marked-for-release");
        assert_eq!(L, Short::new("marked-for-release").unwrap());
    }

    #[test]
    fn serializes_as_its_text() {
        let m: std::collections::BTreeMap<Short, Short> =
            [("10.0.0.2", "eni-1"), ("10.0.0.10", "eni-0")]
                .map(|(a, b)| (Short::new(a).unwrap(), Short::new(b).unwrap()))
                .into();
        let j = serde_json::to_string(&m).unwrap();
        assert_eq!(j, r#"{"10.0.0.10":"eni-0","10.0.0.2":"eni-1"}"#);
        let back: std::collections::BTreeMap<Short, Short> = serde_json::from_str(&j).unwrap();
        assert_eq!(back, m);
        let s: std::collections::BTreeMap<String, String> = serde_json::from_str(&j).unwrap();
        assert_eq!(
            postcard::to_allocvec(&m).unwrap(),
            postcard::to_allocvec(&s).unwrap()
        );
        assert!(serde_json::from_str::<Short>(&format!("\"{}\"", "y".repeat(24))).is_err());
        assert!(serde_json::from_str::<Short>("7").is_err());
    }
}
