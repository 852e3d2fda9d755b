//! The C-to-Rust table (`src/c_names.md`, the docs' `nohz::c_names` page) against the source:
//! every C name it lists is findable (a function of that name, or a `doc(alias)`), and every
//! Rust item it names exists. `cargo doc` checks the table's links; this test also resolves
//! the internal items the table names without a link.
//!
//! The resolution is textual, over `src/`: an item `Type::item` exists when some block of
//! `Type` (an `impl` whose self type is `Type`, `trait Type`, or the `struct`/`enum` `Type`,
//! bitflags included) defines `item` (a `fn`, a `const`, or an enum variant); a bare name
//! exists when some item of that name is defined anywhere.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

/// Every `.rs` file under `dir`, as (path, text).
fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = fs::read_to_string(&path).expect("a source file");
            out.push((path.display().to_string(), text));
        }
    }
}

/// A line without its `//` comment, string literals blanked (so their braces do not count).
fn code_of(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    let mut in_str = false;
    while let Some(c) = chars.next() {
        if in_str {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => {
                    in_str = false;
                    out.push('"');
                }
                _ => out.push(' '),
            }
        } else if c == '"' {
            in_str = true;
            out.push('"');
        } else if c == '/' && chars.peek() == Some(&'/') {
            break;
        } else {
            out.push(c);
        }
    }
    out
}

/// One brace-delimited block of the source: its owner's name and its body (code only).
#[derive(Debug)]
struct Block {
    owner: String,
    body: String,
}

/// The identifier a type path ends on: `crate::fair::Fair<P, N, W>` is `Fair`.
fn type_name(path: &str) -> String {
    let path = path.trim();
    let end = path.find(['<', ' ', '{', '(']).unwrap_or(path.len());
    path[..end].rsplit("::").next().unwrap_or("").to_string()
}

/// Skips a leading `<...>` (balanced) of `s`.
fn skip_generics(s: &str) -> &str {
    let s = s.trim_start();
    if !s.starts_with('<') {
        return s;
    }
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return &s[i + 1..];
                }
            }
            _ => {}
        }
    }
    ""
}

/// The owner of a block whose header is `header` (the code before its `{`), if it is an
/// `impl`, a `trait`, a `struct` or an `enum`.
fn owner_of(header: &str) -> Option<String> {
    let words: Vec<&str> = header.split_whitespace().collect();
    let h = words.join(" ");
    let h = h
        .trim_start_matches("pub(crate) ")
        .trim_start_matches("pub ")
        .trim_start_matches("unsafe ");
    if let Some(rest) = h.strip_prefix("impl") {
        if !(rest.starts_with('<') || rest.starts_with(' ')) {
            return None;
        }
        let rest = skip_generics(rest);
        let self_ty = match rest.rfind(" for ") {
            Some(i) => &rest[i + 5..],
            None => rest,
        };
        let self_ty = self_ty.split(" where ").next().unwrap_or(self_ty);
        return Some(type_name(self_ty));
    }
    for kw in ["trait ", "struct ", "enum "] {
        if let Some(rest) = h.strip_prefix(kw) {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            return Some(rest[..end].to_string());
        }
    }
    None
}

/// Every `impl`, `trait`, `struct` and `enum` block of `text`, nested ones too.
fn blocks(text: &str) -> Vec<Block> {
    let lines: Vec<String> = text.lines().map(code_of).collect();
    let mut out = Vec::new();
    for start in 0..lines.len() {
        // A header starts a line and runs to the first `{` (a few lines at most).
        let mut header = String::new();
        let mut open = None;
        for (j, line) in lines.iter().enumerate().skip(start).take(6) {
            if let Some(i) = line.find('{') {
                header.push_str(&line[..i]);
                open = Some((j, i));
                break;
            }
            if line.contains(';') || (j > start && line.trim().is_empty()) {
                break;
            }
            header.push_str(line);
            header.push(' ');
        }
        let (Some((j, i)), Some(owner)) = (open, owner_of(&header)) else {
            continue;
        };
        let mut depth = 0i32;
        let mut body = String::new();
        'scan: for (k, line) in lines.iter().enumerate().skip(j) {
            let from = if k == j { i } else { 0 };
            for c in line[from..].chars() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break 'scan;
                        }
                    }
                    _ => {}
                }
            }
            body.push_str(&line[from..]);
            body.push('\n');
        }
        out.push(Block { owner, body });
    }
    out
}

/// Whether `code` defines an item called `name`: a `fn`, `const`, `static`, `type`, `struct`,
/// `enum`, `trait`, `mod` or `macro_rules!`.
fn defines(code: &str, name: &str) -> bool {
    [
        "fn ", "const ", "static ", "type ", "struct ", "enum ", "trait ", "mod ",
    ]
    .iter()
    .any(|kw| {
        let needle = format!("{kw}{name}");
        code.match_indices(&needle).any(|(i, _)| {
            let before = code[..i].chars().last();
            let after = code[i + needle.len()..].chars().next();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    }) || code.contains(&format!("macro_rules! {name} "))
}

/// Whether a block's body has a member `name` that is not a `fn` or `const`: an enum variant
/// (a line opening with it), or a field or a `relaxed_accessors!` getter (`pub name: T`).
fn has_member(body: &str, name: &str) -> bool {
    body.lines().any(|l| {
        let l = l.trim();
        let field = l
            .strip_prefix("pub(crate) ")
            .or_else(|| l.strip_prefix("pub "))
            .or_else(|| l.strip_prefix("testing "))
            .and_then(|rest| rest.strip_prefix(name))
            .is_some_and(|rest| rest.starts_with(':'));
        field
            || l.strip_prefix(name)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([',', '(', '{', ' ', '=']))
    })
}

/// The crate's source, parsed once.
struct Source {
    code: String,
    blocks: Vec<Block>,
    aliases: BTreeSet<String>,
}

impl Source {
    fn load() -> Self {
        let mut files = Vec::new();
        sources(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut files,
        );
        let mut code = String::new();
        let mut blocks_all = Vec::new();
        let mut aliases = BTreeSet::new();
        for (_, text) in &files {
            for l in text.lines() {
                if let Some(i) = l.find("doc(alias = \"") {
                    let rest = &l[i + 13..];
                    aliases.insert(rest[..rest.find('"').unwrap()].to_string());
                }
            }
            code.extend(text.lines().map(|l| code_of(l) + "\n"));
            blocks_all.extend(blocks(text));
        }
        Source {
            code,
            blocks: blocks_all,
            aliases,
        }
    }

    /// Whether the Rust path `path` (as the table writes it) names an existing item.
    fn resolves(&self, path: &str) -> bool {
        // `NrCpuIds<N>`, `per_cpu!`, `fence(SeqCst)`: the path alone.
        let path = path.split(['<', '(']).next().unwrap().trim_end_matches('!');
        let segs: Vec<&str> = path
            .split("::")
            .filter(|s| *s != "crate" && *s != "nohz")
            .collect();
        let Some((&item, init)) = segs.split_last() else {
            return false;
        };
        match init
            .iter()
            .rev()
            .find(|s| s.starts_with(|c: char| c.is_ascii_uppercase()))
        {
            // Type::item: a block of that type defines it.
            Some(owner) => self.blocks.iter().any(|b| {
                b.owner == *owner && (defines(&b.body, item) || has_member(&b.body, item))
            }),
            // A type, or a module's function or constant; a bare name may also be a C name
            // the cell quotes (an alias).
            None => defines(&self.code, item) || (init.is_empty() && self.aliases.contains(item)),
        }
    }

    /// Whether the C name `name` is findable: a Rust item has that name, or an alias.
    fn findable(&self, name: &str) -> bool {
        self.aliases.contains(name) || defines(&self.code, name)
    }
}

/// Every `code` span of a table cell.
fn spans(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

/// The C identifier a table's C span stands for, if it is one: `per_cpu(var, cpu)` is
/// `per_cpu`, `struct cpumask` is `cpumask`; `rq->sd` or `TS_FLAG_*` name none.
fn c_identifier(span: &str) -> Option<&str> {
    let span = span
        .trim_start_matches("struct ")
        .trim_start_matches("enum ");
    let name = span.split('(').next().unwrap().trim();
    let ident = |s: &str| {
        !s.is_empty()
            && s.chars().all(|c| c.is_alphanumeric() || c == '_')
            && !s.starts_with(|c: char| c.is_ascii_digit())
    };
    ident(name).then_some(name)
}

/// The table's rows: (C cell, Rust cell), from both tables (the exceptions table has its Rust
/// cell first).
fn rows(table: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rust_first = false;
    for line in table.lines() {
        if !line.starts_with('|') || line.starts_with("|---") {
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        if cells[0] == "Rust" || cells[0] == "C" {
            rust_first = cells[0] == "Rust";
            continue;
        }
        let (c, rust) = if rust_first {
            (cells[1], cells[0])
        } else {
            (cells[0], cells[1])
        };
        out.push((c.to_string(), rust.to_string()));
    }
    out
}

fn table() -> String {
    fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/c_names.md"))
        .expect("src/c_names.md")
}

#[test]
fn every_c_name_in_the_table_is_findable() {
    let src = Source::load();
    let rows = rows(&table());
    assert!(rows.len() > 80, "the table was read: {} rows", rows.len());
    let missing: Vec<String> = rows
        .iter()
        .flat_map(|(c, _)| spans(c))
        .filter_map(c_identifier)
        .filter(|name| !src.findable(name))
        .map(str::to_string)
        .collect();
    assert!(
        missing.is_empty(),
        "C names in src/c_names.md with neither a function of that name nor a doc(alias) in \
         src/: {missing:?}"
    );
}

#[test]
fn every_rust_item_in_the_table_exists() {
    let src = Source::load();
    let missing: Vec<String> = rows(&table())
        .iter()
        .flat_map(|(_, rust)| spans(rust))
        // Source paths (`src/idle.rs`) say where an internal item lives; they are no items.
        .filter(|span| {
            span.chars().any(char::is_alphabetic) && !span.contains(' ') && !span.contains('/')
        })
        .filter(|span| !src.resolves(span))
        .map(str::to_string)
        .collect();
    assert!(
        missing.is_empty(),
        "Rust items named in src/c_names.md that do not exist: {missing:?}"
    );
}

/// The resolver can fail: the six rows the table had wrong before (methods `Machine` does not
/// have), an item of another type, and a C name nothing carries.
#[test]
fn the_check_rejects_what_does_not_exist() {
    let src = Source::load();
    for wrong in [
        "Machine::nohz_csd_func",
        "Machine::update_nohz_stats",
        "Machine::nohz_idle_balance",
        "Machine::set_cpu_sd_state_idle",
        "Machine::update_blocked_averages",
        "Machine::nohz_newidle_balance",
        "Rq::tick_nohz_stop_tick",
        "NohzFlags::NOT_A_FLAG",
        "jiffies::not_a_function",
    ] {
        assert!(!src.resolves(wrong), "{wrong} resolved");
    }
    for right in [
        "Machine::nohz_balancer_kick",
        "Fair::update_nohz_stats",
        "platform::Balance::newidle_domain",
        "NohzFlags::STATS",
        "CpuIdleType::NewlyIdle",
        "NrCpuIds<N>",
        "per_cpu!",
    ] {
        assert!(src.resolves(right), "{right} did not resolve");
    }
    assert!(src.findable("tick_sched_timer_dying"));
    assert!(src.findable("nohz_balancer_kick"));
    assert!(!src.findable("tick_sched_timer_dead"));
}
