//! The ordering-site registry: every `Site` the library declares is listed in `nohz::internals::SITES`
//! exactly once, with a unique name and its pair and forbidden outcome spelled out. The loom
//! mutation runner walks that list, so a site missing from it would never be weakened.

use nohz::internals::SITES;
use std::collections::BTreeSet;
use std::path::Path;

/// `static NAME: Site = ...` declarations in library code (test modules excluded).
fn declared_sites(dir: &Path, out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            declared_sites(&path, out);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for line in without_test_modules(&text).lines() {
            let line = line.trim();
            let rest = line
                .strip_prefix("pub(crate) static ")
                .or_else(|| line.strip_prefix("pub static "))
                .or_else(|| line.strip_prefix("static "));
            if let Some((name, ty)) = rest.and_then(|r| r.split_once(':'))
                && ty.trim_start().starts_with("Site ")
            {
                out.insert(name.trim().to_string());
            }
        }
    }
}

/// The text with every `#[cfg(test)]` / `#[cfg(all(test, ..))]` module body removed (braces
/// counted; the library has no braces inside string literals of those modules' headers).
fn without_test_modules(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    loop {
        let next = ["#[cfg(test)]", "#[cfg(all(test"]
            .iter()
            .filter_map(|m| rest.find(m))
            .min();
        let Some(at) = next else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let Some(open) = after.find('{') else {
            return out;
        };
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, ch) in after[open..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
}

#[test]
fn every_declared_site_is_registered_once() {
    let mut declared = BTreeSet::new();
    declared_sites(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut declared,
    );
    let registry =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/internals/mod.rs"))
            .unwrap();
    let list = registry
        .split("pub static SITES: &[&Site] = &[")
        .nth(1)
        .and_then(|rest| rest.split("];").next())
        .expect("SITES list in src/internals/mod.rs");
    // Each entry without the `#[cfg(feature = ..)]` of a policy beyond the kernel: this test
    // runs with every feature, so every entry is in `SITES`.
    let list: String = list
        .lines()
        .filter(|l| !l.trim_start().starts_with("#["))
        .collect();
    let registered: Vec<String> = list
        .split(',')
        .map(|s| s.trim().trim_start_matches('&'))
        .filter(|s| !s.is_empty())
        .map(|s| s.rsplit("::").next().unwrap().to_string())
        .collect();
    let unique: BTreeSet<String> = registered.iter().cloned().collect();
    assert_eq!(unique.len(), registered.len(), "a site is listed twice");
    assert_eq!(unique, declared, "declared sites and SITES differ");
    assert_eq!(SITES.len(), registered.len());
}

#[test]
fn registered_sites_are_fully_described() {
    let mut names = BTreeSet::new();
    for site in SITES {
        assert!(
            names.insert(site.name()),
            "duplicate site name {}",
            site.name()
        );
        assert!(!site.obligation().is_empty(), "{}", site.name());
        assert!(!site.pairs_with().is_empty(), "{}", site.name());
        assert!(!site.forbids().is_empty(), "{}", site.name());
        assert!(!site.weakenings().is_empty(), "{}", site.name());
    }
}

/// Every site names an obligation of the ordering contract, names its pair by the
/// pair's site name (what `ci/mutants.sh`'s table prints), and says in a sentence what the
/// pair forbids.
#[test]
fn every_site_names_its_obligation_its_pair_and_what_it_forbids() {
    let names: BTreeSet<&str> = SITES.iter().map(|s| s.name()).collect();
    for site in SITES {
        // O1..O8 of the kernel's contract (spec §6), S1.. of the sharded idle set, and the
        // crate's two protocols of its own.
        let o = site.obligation();
        let numbered =
            |p: char| o.starts_with(p) && o[1..].starts_with(|c: char| c.is_ascii_digit());
        assert!(
            numbered('O')
                || numbered('S')
                || o.starts_with("kick deadline")
                || o.starts_with("domain rebuild"),
            "{}: obligation {o:?}",
            site.name()
        );
        let pair = site.pairs_with().split(':').next().unwrap_or_default();
        assert!(
            names.contains(pair),
            "{}: pairs with {pair:?}, not a registered site",
            site.name()
        );
        assert!(
            site.forbids().split_whitespace().count() >= 5,
            "{}: forbids {:?}",
            site.name(),
            site.forbids()
        );
    }
}
