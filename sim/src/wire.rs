//! The trace hash's canonical encoding: [postcard](https://postcard.jamesmunns.com/wire-format)'s
//! wire format, written straight into a byte vector.
//!
//! postcard 1.x defines the format the trace hash covers (replay files record hashes over it), and
//! stays the reference: a test checks this encoder against `postcard::to_allocvec` on every event
//! of several runs of each system, and on values of every serde shape. This encoder exists for
//! speed alone: it encodes every event of every run (the world hashes each one), and postcard's
//! serializer, built for fallible fixed-size buffers, goes through a `Result` and a flavor call
//! per value; this one appends to a `Vec<u8>` in inlined code (measured: about half the cost of a
//! trace line's encoding).
//!
//! The format, as postcard writes it: `u8` and `i8` as one byte, `bool` as 0 or 1; wider integers
//! as LEB128 varints (signed ones zigzag-encoded first); floats as little-endian bytes; strings and
//! byte strings as a varint length and the bytes; `Option` as a 0 or 1 byte then the value;
//! sequences and maps as a varint length then the items; structs and tuples as their fields in
//! order; enum variants as a varint index then their fields. It is not self-describing (no field
//! names), which is what makes it compact, and a sequence must know its length.

use serde::ser::{self, Serialize};

/// Appends `value`'s postcard encoding to `out`.
pub fn encode<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) -> Result<(), Error> {
    value.serialize(&mut Wire { out })
}

/// Why a value has no encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

struct Wire<'a> {
    out: &'a mut Vec<u8>,
}

impl Wire<'_> {
    #[inline]
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }

    /// The same LEB128 for 128 bits: the low groups while the rest is wider than 64 bits (each
    /// then has a continuation bit), the rest as a `u64`.
    fn varint128(&mut self, mut v: u128) {
        while v > u64::MAX as u128 {
            self.out.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.varint(v as u64);
    }

    /// A tuple or struct variant: its index, then its fields (postcard writes no length).
    #[inline]
    fn variant_start(&mut self, index: u32) -> Result<&mut Self, Error> {
        self.varint(index as u64);
        Ok(self)
    }

    #[inline]
    fn bytes(&mut self, b: &[u8]) {
        self.varint(b.len() as u64);
        self.out.extend_from_slice(b);
    }
}

fn unknown_length() -> Error {
    Error("a sequence or map of unknown length has no postcard encoding".into())
}

impl<'a, 'b> ser::Serializer for &'a mut Wire<'b> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    #[inline]
    fn is_human_readable(&self) -> bool {
        false
    }

    #[inline]
    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.out.push(v as u8);
        Ok(())
    }

    #[inline]
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.out.push(v as u8);
        Ok(())
    }

    #[inline]
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.varint(((v << 1) ^ (v >> 15)) as u16 as u64);
        Ok(())
    }

    #[inline]
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.varint(((v << 1) ^ (v >> 31)) as u32 as u64);
        Ok(())
    }

    #[inline]
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        self.varint(((v << 1) ^ (v >> 63)) as u64);
        Ok(())
    }

    #[inline]
    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        self.varint128(((v << 1) ^ (v >> 127)) as u128);
        Ok(())
    }

    #[inline]
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.out.push(v);
        Ok(())
    }

    #[inline]
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.varint(v as u64);
        Ok(())
    }

    #[inline]
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.varint(v as u64);
        Ok(())
    }

    #[inline]
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.varint(v);
        Ok(())
    }

    #[inline]
    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        self.varint128(v);
        Ok(())
    }

    #[inline]
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.out.extend_from_slice(&v.to_le_bytes());
        Ok(())
    }

    #[inline]
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        self.out.extend_from_slice(&v.to_le_bytes());
        Ok(())
    }

    #[inline]
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.bytes(v.encode_utf8(&mut [0u8; 4]).as_bytes());
        Ok(())
    }

    #[inline]
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.bytes(v.as_bytes());
        Ok(())
    }

    #[inline]
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        self.bytes(v);
        Ok(())
    }

    #[inline]
    fn serialize_none(self) -> Result<(), Error> {
        self.out.push(0);
        Ok(())
    }

    #[inline]
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        self.out.push(1);
        value.serialize(self)
    }

    #[inline]
    fn serialize_unit(self) -> Result<(), Error> {
        Ok(())
    }

    #[inline]
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        Ok(())
    }

    #[inline]
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
    ) -> Result<(), Error> {
        self.varint(index as u64);
        Ok(())
    }

    #[inline]
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }

    #[inline]
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.varint(index as u64);
        value.serialize(self)
    }

    #[inline]
    fn serialize_seq(self, len: Option<usize>) -> Result<Self, Error> {
        self.varint(len.ok_or_else(unknown_length)? as u64);
        Ok(self)
    }

    #[inline]
    fn serialize_tuple(self, _len: usize) -> Result<Self, Error> {
        Ok(self)
    }

    #[inline]
    fn serialize_tuple_struct(self, _name: &'static str, _len: usize) -> Result<Self, Error> {
        Ok(self)
    }

    #[inline]
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self, Error> {
        self.variant_start(index)
    }

    #[inline]
    fn serialize_map(self, len: Option<usize>) -> Result<Self, Error> {
        self.varint(len.ok_or_else(unknown_length)? as u64);
        Ok(self)
    }

    #[inline]
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self, Error> {
        Ok(self)
    }

    #[inline]
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self, Error> {
        self.variant_start(index)
    }

    fn collect_str<T: std::fmt::Display + ?Sized>(self, value: &T) -> Result<(), Error> {
        // Formatted once into a string (postcard formats twice to learn the length first).
        self.bytes(value.to_string().as_bytes());
        Ok(())
    }
}

/// The compound shapes: each element or field in order (a sequence's or map's length, a
/// variant's index, went first).
macro_rules! compound {
    ($($trait:ident :: $method:ident),*) => {$(
        impl<'a, 'b> ser::$trait for &'a mut Wire<'b> {
            type Ok = ();
            type Error = Error;

            #[inline]
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
                value.serialize(&mut **self)
            }

            #[inline]
            fn end(self) -> Result<(), Error> {
                Ok(())
            }
        }
    )*};
}

compound!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// Structs and struct variants: the fields in order, without their names.
macro_rules! fields {
    ($($trait:ident),*) => {$(
        impl<'a, 'b> ser::$trait for &'a mut Wire<'b> {
            type Ok = ();
            type Error = Error;

            #[inline]
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                _key: &'static str,
                value: &T,
            ) -> Result<(), Error> {
                value.serialize(&mut **self)
            }

            #[inline]
            fn end(self) -> Result<(), Error> {
                Ok(())
            }
        }
    )*};
}

fields!(SerializeStruct, SerializeStructVariant);

impl<'a, 'b> ser::SerializeMap for &'a mut Wire<'b> {
    type Ok = ();
    type Error = Error;

    #[inline]
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        key.serialize(&mut **self)
    }

    #[inline]
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        value.serialize(&mut **self)
    }

    #[inline]
    fn end(self) -> Result<(), Error> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::encode;
    use proptest::prelude::*;
    use serde::Serialize;
    use std::collections::BTreeMap;

    fn same<T: Serialize + std::fmt::Debug>(v: &T) {
        let mut ours = vec![0xAA]; // appends: what was there stays
        encode(v, &mut ours).unwrap();
        assert_eq!(ours[0], 0xAA);
        assert_eq!(
            &ours[1..],
            postcard::to_allocvec(v).unwrap().as_slice(),
            "{v:?}"
        );
    }

    #[derive(Serialize, Debug)]
    enum Shape {
        Unit,
        Newtype(i64),
        Tuple(u8, String),
        Struct { a: Option<u32>, b: Vec<bool> },
    }

    #[derive(Serialize, Debug)]
    #[serde(tag = "type", rename_all = "kebab-case")]
    enum Tagged {
        Plain,
        Fields { n: u64, s: String },
        Inner(Inner),
    }

    #[derive(Serialize, Debug)]
    struct Inner {
        x: i32,
    }

    #[derive(Serialize, Debug)]
    struct Unit;

    #[derive(Serialize, Debug)]
    struct Wrap(u16);

    #[derive(Serialize, Debug)]
    struct Pair(i16, u128);

    #[test]
    fn every_serde_shape_encodes_as_postcard_does() {
        same(&());
        same(&Unit);
        same(&Wrap(300));
        same(&Pair(-2, u128::MAX));
        // Where a 128-bit varint hands over to the 64-bit one.
        for v in [
            u64::MAX as u128 - 1,
            u64::MAX as u128,
            u64::MAX as u128 + 1,
            1 << 70,
        ] {
            same(&v);
        }
        same(&(1u8, -1i8, true, 'é', 1.5f32, -2.25f64));
        same(&serde_bytes_like());
        same(&vec![
            Shape::Unit,
            Shape::Newtype(-5),
            Shape::Tuple(7, "x".into()),
        ]);
        same(&Shape::Struct {
            a: Some(1 << 20),
            b: vec![true, false],
        });
        same(&[
            Tagged::Plain,
            Tagged::Fields {
                n: 1 << 40,
                s: "é".into(),
            },
        ]);
        same(&Tagged::Inner(Inner { x: i32::MIN }));
        same(&BTreeMap::from([("a", 1i128), ("b", i128::MIN)]));
        same(&serde_json::json!({"k": [1, -2, 3.5, null, "s", {"n": true}]}));
        same(&std::time::Duration::from_micros(1_234_567));
    }

    /// `serialize_bytes` (serde has no std type that calls it; a small wrapper does).
    fn serde_bytes_like() -> impl Serialize + std::fmt::Debug {
        #[derive(Debug)]
        struct B(Vec<u8>);
        impl Serialize for B {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(&self.0)
            }
        }
        B(vec![0, 255, 128])
    }

    #[test]
    fn collect_str_is_a_string() {
        #[derive(Debug)]
        struct D;
        impl Serialize for D {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(&format_args!("{}-{}", 12, "ab"))
            }
        }
        same(&D);
    }

    #[test]
    fn a_sequence_of_unknown_length_is_an_error_not_a_panic() {
        struct Unknown;
        impl Serialize for Unknown {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeSeq;
                s.serialize_seq(None)?.end()
            }
        }
        assert!(encode(&Unknown, &mut Vec::new()).is_err());
        assert!(postcard::to_allocvec(&Unknown).is_err());
    }

    proptest! {
        #[test]
        fn integers_and_strings_encode_as_postcard_does(
            a in any::<u64>(), b in any::<i64>(), c in any::<u32>(), d in any::<i32>(),
            e in any::<u16>(), f in any::<i16>(), g in any::<u128>(), h in any::<i128>(),
            s in ".{0,200}", v in proptest::collection::vec(any::<Option<u8>>(), 0..300),
        ) {
            same(&(a, b, c, d, e, f, g, h, s, v));
        }
    }
}
