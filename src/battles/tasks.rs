//! Task labels (`question_id`s) numbered by a 128-bit hash of their text, compactly.

use super::FastMap;

/// A task label's identity: the first 128 bits of its SHA-256. Two distinct labels collide
/// with probability about n²/2^129 (1.5e-27 for a million labels); holding these instead of
/// the labels keeps a million distinct question ids at 16 bytes each, and makes a label that
/// arrives escaped (`q\u00e9`) or as a number (`81`) the same task as its plain text.
pub(crate) fn label_key(label: &[u8]) -> u128 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(label);
    u128::from_le_bytes(digest[..16].try_into().expect("16 of 32 bytes"))
}

/// A block's task labels: by their bytes in the block (no hashing for a label seen before)
/// and by [`label_key`] (labels from both paths of [`super::parse_block`]).
#[derive(Default)]
pub(super) struct TaskTable<'a> {
    by_bytes: FastMap<&'a [u8], u32>,
    by_key: FastMap<u128, u32>,
}

impl<'a> TaskTable<'a> {
    /// The block-local number of `label` (UTF-8 text: the scanner checked it), new labels
    /// appended to `keys`.
    pub(super) fn intern(&mut self, keys: &mut Vec<u128>, label: &'a [u8]) -> u32 {
        if let Some(&i) = self.by_bytes.get(label) {
            return i;
        }
        let i = self.by_key(keys, label);
        self.by_bytes.insert(label, i);
        i
    }

    /// [`TaskTable::intern`] of a decoded label (not cached by its bytes).
    pub(super) fn by_key(&mut self, keys: &mut Vec<u128>, label: &[u8]) -> u32 {
        let key = label_key(label);
        *self.by_key.entry(key).or_insert_with(|| {
            keys.push(key);
            u32::try_from(keys.len() - 1).expect("fewer than 2^32 tasks")
        })
    }
}

/// Numbers [`label_key`]s in order of first appearance, at 16 bytes per key and 8 of table,
/// each up to twice that as they grow (24 to 48 bytes per key): a million distinct question
/// ids take 25 MB, where a map of `(u128, u32)` slots takes 64 MB (96 MB while it grows). Open addressing on the key's own
/// low bits (a SHA-256 prefix, uniform already), linear probing, at most half full.
#[derive(Default)]
pub(super) struct KeyNumbers {
    pub(super) keys: Vec<u128>,
    /// `number + 1` of the key in the slot, 0 for empty; its length is a power of two.
    pub(super) slots: Vec<u32>,
}

impl KeyNumbers {
    /// The number of `key`: the one it was given before, or the next.
    pub(super) fn number(&mut self, key: u128) -> u32 {
        if 2 * (self.keys.len() + 1) > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut at = key as usize & mask;
        loop {
            match self.slots[at] {
                0 => {
                    self.keys.push(key);
                    let number = u32::try_from(self.keys.len()).expect("fewer than 2^32 tasks");
                    self.slots[at] = number;
                    return number - 1;
                }
                n if self.keys[n as usize - 1] == key => return n - 1,
                _ => at = (at + 1) & mask,
            }
        }
    }

    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(64);
        self.slots = vec![0; size];
        let mask = size - 1;
        for (i, &key) in self.keys.iter().enumerate() {
            let mut at = key as usize & mask;
            while self.slots[at] != 0 {
                at = (at + 1) & mask;
            }
            self.slots[at] = i as u32 + 1;
        }
    }
}
