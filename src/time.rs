//! UTC calendar arithmetic for timestamps and HTTP dates, without a date crate. Pure: the
//! current time is always passed in.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A civil UTC date-time (proleptic Gregorian calendar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcDateTime {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

/// Days since 1970-01-01 → (year, month, day). Howard Hinnant's `civil_from_days`.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// (year, month, day) → days since 1970-01-01. Howard Hinnant's `days_from_civil`.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

impl UtcDateTime {
    /// The civil time of a `SystemTime` (times before 1970 clamp to the epoch).
    pub fn from_system(t: SystemTime) -> Self {
        let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
        let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
        let rem = secs.rem_euclid(86_400) as u32;
        UtcDateTime {
            year,
            month,
            day,
            hour: rem / 3600,
            minute: rem / 60 % 60,
            second: rem % 60,
        }
    }

    /// Back to a `SystemTime` (None before the epoch).
    pub fn to_system(self) -> Option<SystemTime> {
        let days = days_from_civil(self.year, self.month, self.day);
        let secs = days * 86_400
            + i64::from(self.hour) * 3600
            + i64::from(self.minute) * 60
            + i64::from(self.second);
        u64::try_from(secs)
            .ok()
            .map(|s| UNIX_EPOCH + Duration::from_secs(s))
    }

    /// RFC 3339, e.g. `2026-11-30T08:55:15Z`.
    pub fn rfc3339(self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }

    /// Compact form for run names, e.g. `20261130-085515`.
    pub fn compact(self) -> String {
        format!(
            "{:04}{:02}{:02}-{:02}{:02}{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

/// Parses an HTTP date in any of the three forms RFC 9110 §5.6.7 says a recipient must
/// accept: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850 (`Sunday, 06-Nov-94
/// 08:49:37 GMT`; a two-digit year more than 50 years ahead is of the past century) and
/// asctime (`Sun Nov  6 08:49:37 1994`).
pub fn parse_http_date(s: &str) -> Option<SystemTime> {
    let parts: Vec<&str> = s.split_whitespace().collect();
    let (day, month, year, hms) = match parts.as_slice() {
        [_weekday, day, month, year, hms, "GMT"] => (*day, *month, year.parse().ok()?, *hms),
        [_weekday, date, hms, "GMT"] => {
            let mut d = date.split('-');
            let (day, month, yy) = (d.next()?, d.next()?, d.next()?);
            if d.next().is_some() || yy.len() != 2 {
                return None;
            }
            // RFC 9110: a two-digit year more than 50 years ahead is in the past century.
            let yy: i64 = yy.parse().ok()?;
            let this_year = UtcDateTime::from_system(SystemTime::now()).year;
            let mut year = this_year - this_year.rem_euclid(100) + yy;
            if year > this_year + 50 {
                year -= 100;
            }
            (day, month, year, *hms)
        }
        [_weekday, month, day, hms, year] => (*day, *month, year.parse().ok()?, *hms),
        _ => return None,
    };
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| *m == month)? as u32 + 1;
    let mut t = hms.split(':').map(|p| p.parse::<u32>().ok());
    let (hour, minute, second) = (t.next()??, t.next()??, t.next()??);
    if t.next().is_some() || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let day: u32 = day.parse().ok().filter(|d| (1..=31).contains(d))?;
    // HTTP dates have four-digit years (RFC 9110); a longer one would overflow the arithmetic.
    if !(0..=9999).contains(&year) {
        return None;
    }
    UtcDateTime {
        year,
        month,
        day,
        hour,
        minute,
        second,
    }
    .to_system()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants_round_trip() {
        let t = UNIX_EPOCH + Duration::from_secs(1_796_028_915); // 2026-11-30T08:55:15Z
        let c = UtcDateTime::from_system(t);
        assert_eq!(c.rfc3339(), "2026-11-30T08:55:15Z");
        assert_eq!(c.compact(), "20261130-085515");
        assert_eq!(c.to_system(), Some(t));
        let leap = UtcDateTime::from_system(UNIX_EPOCH + Duration::from_secs(951_782_400));
        assert_eq!(leap.rfc3339(), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn http_date_parses_rfc_example() {
        let t = parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").expect("valid date");
        assert_eq!(t, UNIX_EPOCH + Duration::from_secs(784_111_777));
        // The obsolete forms a recipient must accept too (RFC 9110 §5.6.7).
        for obsolete in ["Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
            assert_eq!(parse_http_date(obsolete), Some(t), "{obsolete}");
        }
        assert_eq!(
            parse_http_date("Tuesday, 01-Dec-26 12:47:08 GMT"),
            parse_http_date("Tue, 01 Dec 2026 12:47:08 GMT")
        );
        for bad in [
            "Sun, 06-Nov-1994 08:49:37 GMT",
            "Sun Nov 6 08:49 1994",
            "Sun Nov 6 1994",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad}");
        }
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 PST"), None);
        assert_eq!(parse_http_date("120"), None);
        assert_eq!(parse_http_date("Sun, 32 Nov 1994 08:49:37 GMT"), None);
        // A year no HTTP date has, which would overflow the day arithmetic.
        assert_eq!(
            parse_http_date("Sun, 06 Nov 9223372036854775807 08:49:37 GMT"),
            None
        );
        assert_eq!(
            parse_http_date("Sun Nov  6 08:49:37 -9223372036854775808"),
            None
        );
    }
}
