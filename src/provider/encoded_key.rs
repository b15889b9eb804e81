//! Finds an API key that a provider's error body quotes in a disguise the plain redaction
//! cannot see: in another letter case, JSON-escaped in a body that is not one JSON value (two
//! objects, an SSE `data:` line), percent-encoded, as HTML character references, or in
//! base64 (a server echoing an `Authorization: Basic` header, or a request dump). Pure: bytes
//! and the key in, a yes or no out.

/// Keys shorter than this are not looked for in disguise: a short value would be found by
/// chance in unrelated base64 or text.
const MIN_KEY_LEN: usize = 8;

/// Whether `body` holds `key` in another case, JSON-escaped (`\u002d`), percent-encoded
/// (`%2D`), as HTML character references (`&#45;`, `&#x2d;`), or base64 / base64url encoded at
/// any alignment.
pub fn holds_encoded_key(body: &[u8], key: &str) -> bool {
    if key.len() < MIN_KEY_LEN {
        return false;
    }
    let key = key.as_bytes().to_ascii_lowercase();
    let found = |text: &[u8]| contains(&text.to_ascii_lowercase(), &key);
    found(body)
        || found(&json_unescaped(body))
        || found(&percent_decoded(body))
        || found(&html_decoded(body))
        || base64_runs(body).any(|run| decodings(run).any(|bytes| found(&bytes)))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty()
        && haystack.len() >= needle.len()
        && haystack.windows(needle.len()).any(|w| w == needle)
}

fn hex_value(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// JSON string escapes of ASCII (`\u002d`, `\/`) decoded; anything else kept.
fn json_unescaped(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let escaped = match (body[i], body.get(i + 1)) {
            (b'\\', Some(b'u')) => body
                .get(i + 2..i + 6)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .and_then(|v| u8::try_from(v).ok())
                .filter(u8::is_ascii)
                .map(|v| (v, 6)),
            (b'\\', Some(b'/')) => Some((b'/', 2)),
            _ => None,
        };
        match escaped {
            Some((v, len)) => {
                out.push(v);
                i += len;
            }
            None => {
                out.push(body[i]);
                i += 1;
            }
        }
    }
    out
}

/// `%XX` sequences decoded (`+` left as it is); anything else kept.
fn percent_decoded(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        if body[i] == b'%'
            && let (Some(h), Some(l)) = (
                body.get(i + 1).copied().and_then(hex_value),
                body.get(i + 2).copied().and_then(hex_value),
            )
        {
            out.push(h * 16 + l);
            i += 3;
        } else {
            out.push(body[i]);
            i += 1;
        }
    }
    out
}

/// Numeric character references (`&#45;`, `&#x2D;`) of ASCII decoded; anything else kept.
fn html_decoded(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        if body[i..].starts_with(b"&#")
            && let Some(end) = body[i..].iter().take(12).position(|&b| b == b';')
        {
            let digits = &body[i + 2..i + end];
            let value = match digits.first() {
                Some(b'x' | b'X') => std::str::from_utf8(&digits[1..])
                    .ok()
                    .and_then(|d| u32::from_str_radix(d, 16).ok()),
                _ => std::str::from_utf8(digits)
                    .ok()
                    .and_then(|d| d.parse().ok()),
            };
            if let Some(v) = value
                .and_then(|v| u8::try_from(v).ok())
                .filter(u8::is_ascii)
            {
                out.push(v);
                i += end + 1;
                continue;
            }
        }
        out.push(body[i]);
        i += 1;
    }
    out
}

fn base64_digit(b: u8) -> Option<u8> {
    match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'a'..=b'z' => Some(b - b'a' + 26),
        b'0'..=b'9' => Some(b - b'0' + 52),
        b'+' | b'-' => Some(62),
        b'/' | b'_' => Some(63),
        _ => None,
    }
}

/// Maximal runs of base64 (or base64url) digits long enough to hold an encoded key.
fn base64_runs(body: &[u8]) -> impl Iterator<Item = &[u8]> {
    body.split(|&b| base64_digit(b).is_none())
        .filter(|run| run.len() >= MIN_KEY_LEN * 4 / 3)
}

/// A run decoded from each of its first four digits (the key may start anywhere in the
/// encoded bytes, and the run anywhere in an encoding); a last group of two or three digits
/// (unpadded) gives its one or two bytes.
fn decodings(run: &[u8]) -> impl Iterator<Item = Vec<u8>> + '_ {
    (0..4).map(move |skip| {
        let digits: Vec<u8> = run[skip.min(run.len())..]
            .iter()
            .filter_map(|&b| base64_digit(b))
            .collect();
        let mut out = Vec::with_capacity(digits.len() * 3 / 4);
        for group in digits.chunks(4) {
            let n = group
                .iter()
                .chain(std::iter::repeat(&0))
                .take(4)
                .fold(0u32, |n, &d| (n << 6) | u32::from(d));
            let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
            out.extend_from_slice(&bytes[..group.len().saturating_sub(1)]);
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-test-DO-NOT-LEAK-8f2c1a9b7e";

    fn base64(bytes: &[u8]) -> String {
        const DIGITS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for c in bytes.chunks(3) {
            let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for k in 0..=c.len() {
                out.push(DIGITS[((n >> (18 - 6 * k)) & 63) as usize] as char);
            }
        }
        out
    }

    #[test]
    fn finds_the_key_in_every_disguise() {
        let percent: String = KEY.bytes().map(|b| format!("%{b:02X}")).collect();
        let html: String = KEY.bytes().map(|b| format!("&#{b};")).collect();
        let html_hex: String = KEY.bytes().map(|b| format!("&#x{b:x};")).collect();
        let escaped = KEY.replace('-', "\\u002d");
        let mut bodies = vec![
            format!("{{\"error\": \"{escaped}\"}}{{\"error\": 2}}"),
            format!("data: {{\"message\": \"Bearer {escaped}\"}}"),
            format!("{{\"error\": \"bad key {}\"}}", KEY.to_uppercase()),
            format!("key={percent}&x=1"),
            format!("<p>{html}</p>"),
            format!("<p>{html_hex}</p>"),
        ];
        // Basic auth and request dumps: the key anywhere in what was encoded.
        for prefix in ["", "u", "us", "user:"] {
            bodies.push(format!(
                "Authorization: Basic {}",
                base64(format!("{prefix}{KEY}").as_bytes())
            ));
            let url_safe = base64(format!("{prefix}{KEY}!").as_bytes())
                .replace('+', "-")
                .replace('/', "_");
            bodies.push(format!("echo={url_safe}"));
        }
        for body in bodies {
            assert!(holds_encoded_key(body.as_bytes(), KEY), "{body}");
        }
    }

    #[test]
    fn ordinary_bodies_and_short_keys_are_left_alone() {
        let body = br#"{"error": {"message": "Incorrect API key provided: sk-tes**********9b7e", "code": "invalid_api_key", "id": "aGVsbG8gd29ybGQgaGVsbG8gd29ybGQ="}}"#;
        assert!(!holds_encoded_key(body, KEY));
        assert!(!holds_encoded_key(b"EMPTY key none", "none"));
        assert!(!holds_encoded_key(b"%41%42", "AB"));
    }
}
