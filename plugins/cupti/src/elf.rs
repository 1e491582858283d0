//! Reads a module's GNU build id from its ELF file (for `ModuleDef::build_id`).

use std::io::{Read, Seek, SeekFrom};

/// The GNU build id of the ELF file at `path`, if it has one (64-bit little-endian ELF only).
pub fn build_id(path: &str) -> Option<Vec<u8>> {
    let mut f = std::fs::File::open(path).ok()?;
    let mut h = [0u8; 64];
    f.read_exact(&mut h).ok()?;
    if &h[..4] != b"\x7fELF" || h[4] != 2 || h[5] != 1 {
        return None;
    }
    let phoff = u64::from_le_bytes(h[32..40].try_into().ok()?);
    let phentsize = u16::from_le_bytes(h[54..56].try_into().ok()?) as u64;
    let phnum = u16::from_le_bytes(h[56..58].try_into().ok()?) as u64;
    for i in 0..phnum.min(64) {
        let mut ph = [0u8; 56];
        f.seek(SeekFrom::Start(phoff + i * phentsize)).ok()?;
        f.read_exact(&mut ph).ok()?;
        if u32::from_le_bytes(ph[..4].try_into().ok()?) != 4 {
            continue; // not PT_NOTE
        }
        let off = u64::from_le_bytes(ph[8..16].try_into().ok()?);
        let size = u64::from_le_bytes(ph[32..40].try_into().ok()?).min(4096);
        let mut notes = vec![0u8; size as usize];
        f.seek(SeekFrom::Start(off)).ok()?;
        f.read_exact(&mut notes).ok()?;
        if let Some(id) = find_gnu_build_id(&notes) {
            return Some(id);
        }
    }
    None
}

fn find_gnu_build_id(mut n: &[u8]) -> Option<Vec<u8>> {
    let align4 = |x: usize| (x + 3) & !3;
    while n.len() >= 12 {
        let namesz = u32::from_le_bytes(n[..4].try_into().ok()?) as usize;
        let descsz = u32::from_le_bytes(n[4..8].try_into().ok()?) as usize;
        let ty = u32::from_le_bytes(n[8..12].try_into().ok()?);
        let name_end = 12 + align4(namesz);
        let desc_end = name_end + align4(descsz);
        if desc_end > n.len() {
            return None;
        }
        if ty == 3 && &n[12..12 + namesz.min(4)] == b"GNU\0" {
            return Some(n[name_end..name_end + descsz].to_vec());
        }
        n = &n[desc_end..];
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_the_build_id_of_this_test_binary_or_none() {
        let exe = std::env::current_exe().unwrap();
        // Rust test binaries carry a GNU build id on Linux with the default linker setup.
        if let Some(id) = super::build_id(exe.to_str().unwrap()) {
            assert!(id.len() >= 8, "build id too short: {id:?}");
        }
        assert_eq!(super::build_id("/nonexistent"), None);
    }
}
