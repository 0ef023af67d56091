//! Trace timestamps are microseconds written as JSON numbers, integer or
//! decimal. Converting through f64 loses nanoseconds on epoch-scale values,
//! so the number's text is parsed straight into integer nanoseconds.

/// The largest time tracecast keeps, ns (about 146 years): a start plus a
/// duration within it cannot overflow.
pub const MAX_TIME_NS: i64 = 1 << 62;

/// [`micros_text_to_ns`], `None` also for times beyond [`MAX_TIME_NS`]
/// either side of zero.
pub fn time_ns(text: &str) -> Option<i64> {
    micros_text_to_ns(text).filter(|ns| ns.unsigned_abs() <= MAX_TIME_NS as u64)
}

/// Microseconds (as JSON number text) to integer nanoseconds, rounding
/// sub-nanosecond digits half away from zero. `None` if the text is not a number.
pub fn micros_text_to_ns(text: &str) -> Option<i64> {
    let text = text.trim();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    if digits.contains(['e', 'E']) {
        // Exponent notation is rare; f64 is exact enough for the small values it appears on.
        let micros: f64 = text.parse().ok()?;
        return micros.is_finite().then(|| (micros * 1000.0).round() as i64);
    }
    let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let mut ns: i64 = 0;
    for b in int_part.bytes() {
        if !b.is_ascii_digit() {
            return None;
        }
        ns = ns.checked_mul(10)?.checked_add((b - b'0') as i64)?;
    }
    ns = ns.checked_mul(1000)?;
    let frac = frac_part.as_bytes();
    if !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut scale = 100;
    for &b in frac.iter().take(3) {
        ns = ns.checked_add((b - b'0') as i64 * scale)?;
        scale /= 10;
    }
    if frac.len() > 3 && frac[3] >= b'5' {
        ns = ns.checked_add(1)?;
    }
    Some(if negative { -ns } else { ns })
}

#[cfg(test)]
mod tests {
    use super::micros_text_to_ns;

    #[test]
    fn integers_and_decimals_are_exact() {
        assert_eq!(micros_text_to_ns("1623142623460111"), Some(1_623_142_623_460_111_000));
        assert_eq!(micros_text_to_ns("4458676522690.655"), Some(4_458_676_522_690_655));
        assert_eq!(micros_text_to_ns("0.02"), Some(20));
        assert_eq!(micros_text_to_ns("156.777"), Some(156_777));
        assert_eq!(micros_text_to_ns("1.5"), Some(1_500));
    }

    #[test]
    fn rounds_below_a_nanosecond() {
        assert_eq!(micros_text_to_ns("1.0004"), Some(1_000));
        assert_eq!(micros_text_to_ns("1.0005"), Some(1_001));
        assert_eq!(micros_text_to_ns("-2.0005"), Some(-2_001));
    }

    #[test]
    fn out_of_range_times_are_refused() {
        assert_eq!(super::time_ns("1e400"), None);
        assert_eq!(super::time_ns("1e300"), None);
        assert_eq!(super::time_ns("-9223372036854775"), None);
        assert_eq!(super::time_ns("1623142623460111"), Some(1_623_142_623_460_111_000));
    }

    #[test]
    fn exponent_and_garbage() {
        assert_eq!(micros_text_to_ns("1.5e3"), Some(1_500_000));
        assert_eq!(micros_text_to_ns("\"12\""), None);
        assert_eq!(micros_text_to_ns("NaN"), None);
        assert_eq!(micros_text_to_ns("."), None);
    }
}
