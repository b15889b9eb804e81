//! The response cache: `CacheKey` (SHA-256 over the canonical request, never the API key) and
//! `Cache` (`cache/<aa>/<hash>.json`, written to a temp file and renamed into place).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context;
use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Bumped when the canonical form or the entry layout changes.
pub const CACHE_FORMAT: u32 = 1;

/// The hash naming one cache entry (64 hex chars).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct CacheKey(String);

impl CacheKey {
    /// The hex digest.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The canonical request: provider kind, endpoint (`base_url` and path, which names the model
/// for Gemini), the full request body (model, messages, every generation parameter) and the
/// attempt number. serde_json maps are sorted (BTreeMap),
/// so equal requests serialise to equal bytes. Auth lives in headers and never appears here.
pub fn canonical_request(
    kind: &str,
    base_url: &str,
    path: &str,
    body: &Value,
    attempt: u32,
) -> Value {
    json!({
        "cache_format": CACHE_FORMAT,
        "provider_kind": kind,
        "base_url": base_url,
        "path": path,
        "body": body,
        "attempt": attempt,
    })
}

/// The key of a canonical request.
pub fn cache_key(canonical: &Value) -> CacheKey {
    let bytes = serde_json::to_vec(canonical).expect("a JSON value always serialises");
    CacheKey(crate::hex(&Sha256::digest(&bytes)))
}

/// The on-disk cache.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Cache {
    /// A cache rooted at `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Cache { dir: dir.into() }
    }

    /// Path of an entry: `<dir>/<first two hex>/<hash>.json`.
    pub fn entry_path(&self, key: &CacheKey) -> PathBuf {
        self.dir.join(&key.0[..2]).join(format!("{}.json", key.0))
    }

    /// The stored response body, if any. An unreadable or corrupt entry is treated as a miss
    /// (it is rewritten on the next put), and so is an entry that does not answer this key's
    /// request: its stored request must hash to the key (a file copied or renamed into another
    /// entry's place, or a request edited by hand, would otherwise answer for another model).
    pub fn get(&self, key: &CacheKey) -> Option<Value> {
        let bytes = std::fs::read(self.entry_path(key)).ok()?;
        let entry: Value = serde_json::from_slice(&bytes).ok()?;
        let answers_key = entry.get("cache_format")? == CACHE_FORMAT
            && entry.get("key")?.as_str()? == key.0
            && cache_key(entry.get("request")?).0 == key.0;
        let response = entry.get("response")?;
        // Entries written before responses carried their digest are taken as they are.
        let intact = match entry.get("response_sha256") {
            None => true,
            Some(digest) => digest.as_str() == Some(response_digest(response).as_str()),
        };
        (answers_key && intact).then(|| response.clone())
    }

    /// Stores a response atomically (temp file + rename), next to its canonical request.
    pub fn put(&self, key: &CacheKey, canonical: &Value, response: &Value) -> anyhow::Result<()> {
        let path = self.entry_path(key);
        let entry = json!({
            "cache_format": CACHE_FORMAT,
            "key": key.0,
            "request": canonical,
            "response": response,
            "response_sha256": response_digest(response),
        });
        let bytes = serde_json::to_vec_pretty(&entry)?;
        write_atomic(&path, &bytes).with_context(|| {
            format!(
                "failed to write cache entry `{}` (is the cache directory writable?)",
                path.display()
            )
        })
    }
}

/// SHA-256 of a response as compact JSON (object keys sorted): an entry whose response was
/// edited no longer matches it and is a miss.
fn response_digest(response: &Value) -> String {
    crate::sha256_hex(&response.to_string())
}

/// Writes `bytes` to `path` via a uniquely named temp file in the same directory and a rename,
/// so readers see the old file or the whole new one, never a part. No fsync: the rename is
/// atomic with respect to a killed process, and a file emptied by a power loss reads as a
/// corrupt entry (a cache miss) or a torn record (repaired on resume).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// Writes several files as one step as far as a filesystem allows: every file goes to its
/// temp file first, and only when all are written are they renamed into place. A failure
/// while writing (a full disk, a directory where a file belongs) leaves every old file as
/// it was, rather than some new and some old.
pub fn write_atomic_all(files: &[(std::path::PathBuf, Vec<u8>)]) -> std::io::Result<()> {
    let mut staged: Vec<(std::path::PathBuf, &Path)> = Vec::with_capacity(files.len());
    let result = (|| {
        for (path, bytes) in files {
            let tmp = temp_path(path)?;
            staged.push((tmp.clone(), path));
            std::fs::write(&tmp, bytes)?;
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
                return Err(std::io::Error::other(format!(
                    "`{}` is a directory",
                    path.display()
                )));
            }
        }
        for (tmp, path) in &staged {
            std::fs::rename(tmp, path)?;
        }
        Ok(())
    })();
    if result.is_err() {
        for (tmp, _) in &staged {
            let _ = std::fs::remove_file(tmp);
        }
    }
    result
}

/// A fresh temp file name beside `path` (its folder created).
fn temp_path(path: &Path) -> std::io::Result<std::path::PathBuf> {
    let dir = path
        .parent()
        .expect("atomic writes target a file inside a directory");
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    Ok(dir.join(format!(".{name}.tmp.{}.{n}", std::process::id())))
}

/// The temp files that other processes' atomic writes of `target` left beside it (named
/// `.NAME.tmp.PID.N` exactly, as `temp_path` names them; a longer name that merely starts
/// the same, such as another file's whose name holds dots, is not one), with each one's PID.
pub fn temp_files_of(target: &Path) -> Vec<(std::path::PathBuf, u32)> {
    let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else {
        return Vec::new();
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let prefix = format!(".{}.tmp.", name.to_string_lossy());
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let file = entry.file_name().to_string_lossy().into_owned();
            let (pid, n) = file.strip_prefix(&prefix)?.split_once('.')?;
            let pid: u32 = pid.parse().ok().filter(|_| digits(pid) && digits(n))?;
            let own = pid == std::process::id();
            (!own && entry.file_type().is_ok_and(|t| t.is_file())).then(|| (entry.path(), pid))
        })
        .collect()
}

/// Like [`write_atomic`], streaming the contents through `fill`.
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = temp_path(path)?;
    let result = (|| {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        fill(&mut f)?;
        f.flush()?;
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    /// A set of files is replaced all together or not at all: a directory where the second
    /// belongs leaves the first as it was, and no temp file behind.
    #[test]
    fn files_written_together_all_stay_old_when_one_cannot_be_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b, c) = (
            dir.path().join("a.json"),
            dir.path().join("b.csv"),
            dir.path().join("sub/c.md"),
        );
        std::fs::write(&a, "old a").expect("write");
        std::fs::create_dir(&b).expect("mkdir");
        let files = [
            (a.clone(), b"new a".to_vec()),
            (b.clone(), b"new b".to_vec()),
            (c.clone(), b"new c".to_vec()),
        ];
        assert!(super::write_atomic_all(&files).is_err());
        assert_eq!(std::fs::read_to_string(&a).expect("read"), "old a");
        assert!(!c.exists());
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .expect("ls")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(left.len(), 2, "{left:?}");
        std::fs::remove_dir(&b).expect("rmdir");
        super::write_atomic_all(&files).expect("written");
        for (path, bytes) in &files {
            assert_eq!(&std::fs::read(path).expect("read"), bytes);
        }
    }

    /// Users' caches survive judge's upgrades only while equal requests keep their keys: the
    /// key of each provider kind's default request is pinned (the canonical JSON with sorted keys, hashed
    /// as Python's `json.dumps(sort_keys=True, separators=(",", ":"))` would give it).
    #[test]
    fn the_keys_of_default_requests_are_pinned() {
        use crate::provider::{ChatRequest, Message};
        let req = ChatRequest {
            model: "gpt-4o-mini".into(),
            messages: vec![Message::system("s"), Message::user("u")],
            max_tokens: 64,
            temperature: 0.0,
        };
        let body =
            crate::provider::openai::build_request(&req, crate::config::TokenLimitField::MaxTokens);
        let canonical = canonical_request(
            "openai",
            "https://api.openai.com/v1",
            crate::provider::openai::PATH,
            &body,
            1,
        );
        assert_eq!(
            cache_key(&canonical).as_str(),
            "6e60ad96b8d7d20d541f54a047f3df4705ad58eeb03523f994ee75e77296b213"
        );
        // And the other kinds' default requests.
        let anthropic = canonical_request(
            "anthropic",
            "https://api.anthropic.com",
            crate::provider::anthropic::PATH,
            &crate::provider::anthropic::build_request(&req),
            1,
        );
        let gemini = canonical_request(
            "gemini",
            "https://generativelanguage.googleapis.com",
            &crate::provider::gemini::path(&req.model),
            &crate::provider::gemini::build_request(&req),
            1,
        );
        assert_eq!(
            [cache_key(&anthropic).as_str(), cache_key(&gemini).as_str()],
            [
                "1a2cf993b75500fe8f552ee39f6cb5bd385b7739c28ae5c89bcf851aed254461",
                "dab0405ca68fd04add92e16282e0837ed0da5dee376190f52d0cfda8d9abf511"
            ]
        );
    }

    use super::*;

    fn body(temp: f64) -> Value {
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 10, "temperature": temp})
    }

    #[test]
    fn same_request_same_key() {
        let a = cache_key(&canonical_request(
            "openai",
            "http://x/v1",
            "/p",
            &body(0.0),
            1,
        ));
        let b = cache_key(&canonical_request(
            "openai",
            "http://x/v1",
            "/p",
            &body(0.0),
            1,
        ));
        assert_eq!(a, b);
        assert_eq!(a.as_str().len(), 64);
    }

    #[test]
    fn key_order_in_body_does_not_matter() {
        let reordered: Value = serde_json::from_str(
            r#"{"temperature":0.0,"max_tokens":10,"messages":[{"content":"hi","role":"user"}],"model":"m"}"#,
        )
        .expect("json");
        assert_eq!(
            cache_key(&canonical_request("openai", "u", "/p", &body(0.0), 1)),
            cache_key(&canonical_request("openai", "u", "/p", &reordered, 1))
        );
    }

    #[test]
    fn any_change_changes_key() {
        let base = cache_key(&canonical_request("openai", "u", "/p", &body(0.0), 1));
        let mut other_model = body(0.0);
        other_model["model"] = json!("m2");
        let mut other_msg = body(0.0);
        other_msg["messages"][0]["content"] = json!("hi!");
        let mut other_cap = body(0.0);
        other_cap["max_tokens"] = json!(11);
        for changed in [
            canonical_request("openai", "u", "/p", &body(0.5), 1),
            canonical_request("openai", "u", "/p", &other_model, 1),
            canonical_request("openai", "u", "/p", &other_msg, 1),
            canonical_request("openai", "u", "/p", &other_cap, 1),
            canonical_request("openai", "u", "/p", &body(0.0), 2),
            canonical_request("openai", "u2", "/p", &body(0.0), 1),
            canonical_request("anthropic", "u", "/p", &body(0.0), 1),
            canonical_request("openai", "u", "/q", &body(0.0), 1),
        ] {
            assert_ne!(cache_key(&changed), base, "{changed}");
        }
    }

    #[test]
    fn round_trip_and_corrupt_entry_is_a_miss() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = Cache::new(dir.path());
        let canonical = canonical_request("openai", "u", "/p", &body(0.0), 1);
        let key = cache_key(&canonical);
        assert_eq!(cache.get(&key), None);
        cache
            .put(&key, &canonical, &json!({"ok": true}))
            .expect("put");
        assert_eq!(cache.get(&key), Some(json!({"ok": true})));
        // A response's floats read back exactly, so its digest matches on every read (without
        // serde_json's float_roundtrip some came back one ulp off: a miss every time).
        for x in [
            -0.955_472_451_154_121_5,
            1.234_567_890_123_456_7e-9,
            3.0e-300,
            0.1,
        ] {
            let value = json!({"avgLogprobs": x, "n": [x, x * 3.0]});
            cache.put(&key, &canonical, &value).expect("put");
            assert_eq!(cache.get(&key), Some(value), "{x}");
        }
        cache
            .put(&key, &canonical, &json!({"ok": true}))
            .expect("put");
        let path = cache.entry_path(&key);
        assert!(path.starts_with(dir.path().join(&key.as_str()[..2])));
        // Another request's entry in this key's place is a miss, however it got there.
        let other = canonical_request("openai", "u", "/p", &body(0.5), 1);
        let other_key = cache_key(&other);
        cache
            .put(&other_key, &other, &json!({"other": true}))
            .expect("put");
        std::fs::copy(cache.entry_path(&other_key), &path).expect("copy");
        assert_eq!(cache.get(&key), None, "an entry copied over another");
        let mut edited: Value =
            serde_json::from_slice(&std::fs::read(cache.entry_path(&other_key)).expect("read"))
                .expect("json");
        edited["key"] = json!(key.as_str());
        std::fs::write(&path, serde_json::to_vec(&edited).expect("json")).expect("write");
        assert_eq!(cache.get(&key), None, "a key edited to match");
        assert_eq!(cache.get(&other_key), Some(json!({"other": true})));
        // An edited response is a miss too.
        let other_path = cache.entry_path(&other_key);
        let mut tampered: Value =
            serde_json::from_slice(&std::fs::read(&other_path).expect("read")).expect("json");
        tampered["response"]["other"] = json!(false);
        std::fs::write(&other_path, serde_json::to_vec(&tampered).expect("json")).expect("write");
        assert_eq!(cache.get(&other_key), None, "a response edited");
        std::fs::write(&path, b"{\"cache_format\": 1, \"resp").expect("write");
        assert_eq!(cache.get(&key), None);
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().expect("dir"))
            .expect("read")
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp."))
            .collect();
        assert!(leftovers.is_empty());
    }
}
