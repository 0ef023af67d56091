//! Deserializers that accept what real traces put in a field and turn
//! anything else into `None` instead of failing the whole file: trace
//! writers disagree on types (`"stream 7"` vs `7`, `occupancy` as an
//! object, ids as strings), and one odd value must not lose a trace.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A scalar as the trace wrote it.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar<'a> {
    Int(i64),
    /// Integers above `i64::MAX` (64-bit ids); kept exact.
    BigUint(u64),
    Float(f64),
    Str(Cow<'a, str>),
    Other,
}

impl<'a> Scalar<'a> {
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Scalar::Int(v) => Some(*v),
            Scalar::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(*f as i64),
            Scalar::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Scalar::Int(v) => Some(*v as f64),
            Scalar::BigUint(v) => Some(*v as f64),
            Scalar::Float(f) => Some(*f),
            Scalar::Str(s) => s.trim().parse().ok(),
            Scalar::Other => None,
        }
    }

    pub fn into_string(self) -> Option<String> {
        match self {
            Scalar::Int(v) => Some(v.to_string()),
            Scalar::BigUint(v) => Some(v.to_string()),
            Scalar::Float(f) => Some(f.to_string()),
            Scalar::Str(s) => Some(s.into_owned()),
            Scalar::Other => None,
        }
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Scalar::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(i64::try_from(v).map_or(Scalar::BigUint(v), Scalar::Int))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Scalar::Float(v))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }
}

impl<'de: 'a, 'a> de::Deserialize<'de> for Scalar<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

pub fn int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(Scalar::deserialize(d)?.as_i64())
}

pub fn float<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Ok(Scalar::deserialize(d)?.as_f64())
}

pub fn string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    Ok(match Scalar::deserialize(d)? {
        Scalar::Str(s) => Some(s),
        Scalar::Int(v) => Some(Cow::Owned(v.to_string())),
        Scalar::BigUint(v) => Some(Cow::Owned(v.to_string())),
        Scalar::Float(v) => Some(Cow::Owned(v.to_string())),
        Scalar::Other => None,
    })
}

/// For visitors that only want lists: every other kind of value is consumed
/// and answered with `$value`.
macro_rules! non_list_gives {
    ($value:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok($value)
        }
    };
}

/// `[x, y, z]` launch dimensions; anything else is `None`.
pub fn dim3<'de, D: Deserializer<'de>>(d: D) -> Result<Option<[Option<i64>; 3]>, D::Error> {
    struct Dim3Visitor;
    impl<'de> Visitor<'de> for Dim3Visitor {
        type Value = Option<[Option<i64>; 3]>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list of up to three integers")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = [None; 3];
            let mut i = 0;
            while let Some(s) = seq.next_element::<Scalar<'_>>()? {
                if i < 3 {
                    out[i] = s.as_i64();
                }
                i += 1;
            }
            Ok(Some(out))
        }
        non_list_gives!(None);
    }
    d.deserialize_any(Dim3Visitor)
}

/// One entry of a shape list: a flat integer list, else `None`.
struct ShapeEntry(Option<Vec<i64>>);

impl<'de> de::Deserialize<'de> for ShapeEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct EntryVisitor;
        impl<'de> Visitor<'de> for EntryVisitor {
            type Value = ShapeEntry;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a shape")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ShapeEntry, A::Error> {
                let mut dims = Vec::new();
                let mut flat = true;
                while let Some(s) = seq.next_element::<Scalar<'_>>()? {
                    match s.as_i64() {
                        Some(v) if flat => dims.push(v),
                        _ => flat = false,
                    }
                }
                Ok(ShapeEntry(flat.then_some(dims)))
            }
            non_list_gives!(ShapeEntry(None));
        }
        d.deserialize_any(EntryVisitor)
    }
}

/// One shape per input; `None` where an input has none (a scalar, a nested list).
pub type Shapes = Vec<Option<Vec<i64>>>;

/// A list of shapes (`[[8, 3, 224, 224], [], [[1], [2]], ...]`): flat integer
/// lists are kept, scalars and nested lists become `None` entries.
pub fn shapes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Shapes>, D::Error> {
    struct ShapesVisitor;
    impl<'de> Visitor<'de> for ShapesVisitor {
        type Value = Option<Vec<Option<Vec<i64>>>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list of shapes")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(ShapeEntry(e)) = seq.next_element()? {
                out.push(e);
            }
            Ok(Some(out))
        }
        non_list_gives!(None);
    }
    d.deserialize_any(ShapesVisitor)
}

/// A list of strings; non-string entries become their text or `""`.
pub fn strings<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    struct StringsVisitor;
    impl<'de> Visitor<'de> for StringsVisitor {
        type Value = Option<Vec<String>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list of strings")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(s) = seq.next_element::<Scalar<'_>>()? {
                out.push(s.into_string().unwrap_or_default());
            }
            Ok(Some(out))
        }
        non_list_gives!(None);
    }
    d.deserialize_any(StringsVisitor)
}
