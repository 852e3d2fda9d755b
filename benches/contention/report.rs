//! The table's vocabulary and how its lines print: a [`Target`] is one entry of the T-table
//! (its lines, whether it needs the antagonist, the pacing it is judged on, the functions that
//! measure it); a [`Check`] is one line (`<a>/<b>` against a [`Bound`], compared as
//! [`Versus`] says, maybe with a floor measured beside it). Every printed line is also kept
//! ([`outcomes`]) for the `--rounds` summary.

use crate::Round;
use nohz::Policy;
use nohz_stress::measure::{Interleaved, Pacing, Session, median};
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// One entry of the T-table: a target, or targets measured together (T6 and T7).
pub struct Target {
    /// Its lines, in the order its `run` reads and prints them.
    pub checks: &'static [Check],
    /// Whether it needs the antagonist on the second CPU (skipped without one).
    pub contended: bool,
    /// The pacing its verdict is judged on; the other one is printed on `also` lines.
    pub primary: Pacing,
    /// Measures the lines and prints them.
    pub run: Run,
}

/// How a [`Target`]'s lines are measured.
pub enum Run {
    /// By one function, for lines that share interleavings.
    Together(fn(&Round<'_>, &Target)),
    /// Line `i` by function `i`, each in interleavings of its own (a policy's row each).
    EachLine(&'static [fn(&Session<'_>, &Target, &Check)]),
}

impl Target {
    /// Measures and prints the target's lines.
    pub fn run(&self, round: &Round<'_>) {
        match self.run {
            Run::Together(run) => run(round, self),
            Run::EachLine(rows) => {
                for (row, check) in rows.iter().zip(self.checks) {
                    row(round.session, self, check);
                }
            }
        }
    }

    /// Whether a [`Run::EachLine`] target has one function per line (checked at compile time
    /// over the table).
    pub const fn is_consistent(&self) -> bool {
        match self.run {
            Run::Together(_) => !self.checks.is_empty(),
            Run::EachLine(rows) => rows.len() == self.checks.len(),
        }
    }

    /// The names `-- T1 ...` selects it by: its lines' targets, each once, in order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.checks
            .iter()
            .enumerate()
            .filter(|&(i, c)| self.checks[..i].iter().all(|d| d.target != c.target))
            .map(|(_, c)| c.target)
    }

    /// The primary pacing, then the `also` one: `paced` for a target judged `tight`, `tight`
    /// for the others.
    pub fn pacings(&self) -> [Pacing; 2] {
        let also = match self.primary {
            Pacing::Tight => Pacing::Paced,
            Pacing::Paced | Pacing::Worked => Pacing::Tight,
        };
        [self.primary, also]
    }

    /// Its `N` lines, as its `run` destructures them; panics if the table gives another count.
    pub fn checks<const N: usize>(&self) -> &'static [Check; N] {
        self.checks.try_into().unwrap_or_else(|_| {
            panic!(
                "{}: the table has {} lines, its run reads {N}",
                self.checks[0].target,
                self.checks.len()
            )
        })
    }
}

/// A line's bound on its value.
#[derive(Debug, Clone, Copy)]
pub enum Bound {
    /// The value must be at most this.
    AtMost(f64),
    /// The value must be at least this.
    AtLeast(f64),
    /// The value must lie in this closed range.
    Within(f64, f64),
    /// No bound: the line is reported alongside (always `pass`).
    Report,
}

impl Bound {
    fn holds(self, v: f64) -> bool {
        match self {
            Bound::AtMost(x) => v <= x,
            Bound::AtLeast(x) => v >= x,
            Bound::Within(lo, hi) => (lo..=hi).contains(&v),
            Bound::Report => true,
        }
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bound::AtMost(x) => write!(f, "<={x}"),
            Bound::AtLeast(x) => write!(f, ">={x}"),
            Bound::Within(lo, hi) => write!(f, "{lo}..{hi}"),
            Bound::Report => write!(f, "none"),
        }
    }
}

/// What a line's `<a>` is compared with: its comparison kind.
#[derive(Debug, Clone, Copy)]
pub enum Versus {
    /// Variant `B` of the same interleaving: the value is median(A) / median(B).
    Variant(&'static str),
    /// Nothing: the value is median(A) in nanoseconds (printed as `<a>/ns`).
    Ns,
}

impl Versus {
    /// `<b>` as the line prints it.
    fn name(self) -> &'static str {
        match self {
            Versus::Variant(b) => b,
            Versus::Ns => "ns",
        }
    }

    fn value(self, r: &Interleaved<f64>) -> Option<f64> {
        let a = median(&r.a)?;
        match self {
            Versus::Variant(_) => Some(a / median(&r.b)?),
            Versus::Ns => Some(a),
        }
    }
}

/// One line of the table: `<target> <name> <a>/<b>` against `bound`.
#[derive(Debug, Clone, Copy)]
pub struct Check {
    /// `T1`, `T5a`, ...
    pub target: &'static str,
    /// The line's name (`pair-churn`, ...).
    pub name: &'static str,
    /// Variant `A`.
    pub a: &'static str,
    /// What `A` is compared with.
    pub versus: Versus,
    /// The bound the value is judged by.
    pub bound: Bound,
    /// The floor measured beside this line in the same interleaving, as `(<a>, <b>)` of a
    /// ratio judged by the same bound: the best any design of the kind could do there. It
    /// prints as an indented `floor` line after this one (`reachable` or `below-floor`), and
    /// the summary counts this line's verdicts where the floor was reachable.
    pub floor: Option<(&'static str, &'static str)>,
}

impl Check {
    /// This line with the floor `a`/`b` measured beside it.
    pub const fn with_floor(self, a: &'static str, b: &'static str) -> Self {
        Check {
            floor: Some((a, b)),
            ..self
        }
    }

    /// Panics unless this line's `A` is policy `P`'s (its name starts with `P::NAME`): the
    /// table's order of lines and a run's order of policies must agree.
    pub fn expect_policy<P: Policy>(&self) {
        assert!(
            self.a.starts_with(P::NAME),
            "{} {}: the table's line measures {}, the run {}",
            self.target,
            self.name,
            self.a,
            P::NAME
        );
    }

    /// Measures with the first of `pacings` and prints the target line, then with the second
    /// and prints the `also` line. `measure(pacing)` runs one interleaved comparison. Returns
    /// the primary measurement.
    pub fn report(
        &self,
        s: &Session<'_>,
        pacings: [Pacing; 2],
        mut measure: impl FnMut(Pacing) -> Interleaved<f64>,
    ) -> Interleaved<f64> {
        let [primary, other] = pacings;
        let r = measure(primary);
        self.print_as(&r, None, primary, false, Some(s.lost()));
        let r2 = measure(other);
        self.print_as(&r2, None, other, true, Some(s.lost()));
        r
    }

    /// Prints the target line for a measurement already reported by another line.
    pub fn print(&self, r: &Interleaved<f64>, pacing: Pacing) {
        self.print_as(r, None, pacing, false, None);
    }

    /// Prints one line measured with `pacing`: the target line, or (`also`) the indented line
    /// of the other pacing; then, if the line has a floor, the `floor` line for `floor`, the
    /// floor's runs of the same interleaving. `lost`: runs the gate discarded for the
    /// measuring thread and for the antagonist (stderr).
    pub fn print_as(
        &self,
        r: &Interleaved<f64>,
        floor: Option<&Interleaved<f64>>,
        pacing: Pacing,
        also: bool,
        lost: Option<(usize, usize)>,
    ) {
        let floor = self.floor.map(|(a, b)| {
            let r =
                floor.unwrap_or_else(|| panic!("{} {}: no floor measured", self.target, self.name));
            (a, Versus::Variant(b), r)
        });
        let head = if also {
            format!("also {} {}-{}", self.target, self.name, pacing.name())
        } else {
            format!("{} {}", self.target, self.name)
        };
        let indent = if also { "   " } else { "" };
        let line = verdict_line(self.a, self.versus, self.bound, r, ["pass", "fail"]);
        println!("{indent}{head} {line}");
        let reachable =
            floor.map(|(_, versus, r)| versus.value(r).is_some_and(|v| self.bound.holds(v)));
        record(
            head,
            self.a,
            self.versus,
            self.bound,
            self.versus.value(r),
            reachable,
        );
        let ns = |xs: &[f64]| median(xs).map_or_else(|| "n/a".to_owned(), |m| format!("{m:.2} ns"));
        let lost = lost.map_or_else(String::new, |(m, a)| {
            format!("; descheduled: measuring thread {m}, antagonist {a}")
        });
        eprintln!(
            "{} {} {} ({}): {} {} ({} kept, {} discarded), {} {} ({} kept, {} discarded){lost}",
            self.target,
            self.name,
            pacing.name(),
            if also { "info" } else { "target" },
            self.a,
            ns(&r.a),
            r.a.len(),
            r.discarded.0,
            match self.versus {
                Versus::Variant(b) => b,
                Versus::Ns => "reference",
            },
            ns(&r.b),
            r.b.len(),
            r.discarded.1,
        );
        if let Some((a, versus, r)) = floor {
            let head = format!(
                "floor {} {}-floor-{}",
                self.target,
                self.name,
                pacing.name()
            );
            let line = verdict_line(a, versus, self.bound, r, ["reachable", "below-floor"]);
            println!("   {head} {line}");
            record(head, a, versus, self.bound, versus.value(r), None);
        }
    }
}

/// A line `<a>/<b>`: median(A) / median(B) against `bound`.
pub const fn ratio(
    target: &'static str,
    name: &'static str,
    a: &'static str,
    b: &'static str,
    bound: Bound,
) -> Check {
    Check {
        target,
        name,
        a,
        versus: Versus::Variant(b),
        bound,
        floor: None,
    }
}

/// A line `<a>/ns`: median(A) in nanoseconds against `bound`.
pub const fn ns(target: &'static str, name: &'static str, a: &'static str, bound: Bound) -> Check {
    Check {
        target,
        name,
        a,
        versus: Versus::Ns,
        bound,
        floor: None,
    }
}

/// `<a>/<b> ratio=<v> runs=<n> target=<bound> <verdict>`, the verdict `words[0]` if the bound
/// holds, else `words[1]`.
fn verdict_line(
    a: &str,
    versus: Versus,
    bound: Bound,
    r: &Interleaved<f64>,
    words: [&str; 2],
) -> String {
    let v = versus.value(r);
    let verdict = words[usize::from(!v.is_some_and(|v| bound.holds(v)))];
    let value = v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.3}"));
    let runs = r.a.len().min(r.b.len());
    format!(
        "{a}/{} ratio={value} runs={runs} target={bound} {verdict}",
        versus.name()
    )
}

/// One printed line, kept for the `--rounds` summary.
pub struct Outcome {
    /// `T1 pair-churn`, `also T1 pair-churn-paced`, `floor ...`, `transfer ...`.
    pub head: String,
    /// `<a>/<b>`.
    pub ab: String,
    /// `None` for an informational line (no bound).
    pub bound: Option<Bound>,
    /// The line's value, if both medians existed.
    pub value: Option<f64>,
    /// For a line measured beside a floor: whether the floor met the line's bound.
    pub floor_reachable: Option<bool>,
}

impl Outcome {
    /// Whether the line's bound held (false for a line without a value or a bound).
    pub fn held(&self) -> bool {
        self.bound
            .zip(self.value)
            .is_some_and(|(bound, v)| bound.holds(v))
    }
}

/// Every line printed so far, in order.
static OUTCOMES: Mutex<Vec<Outcome>> = Mutex::new(Vec::new());

/// Every line printed so far, in order.
pub fn outcomes() -> MutexGuard<'static, Vec<Outcome>> {
    OUTCOMES.lock().unwrap_or_else(PoisonError::into_inner)
}

fn record(
    head: String,
    a: &str,
    versus: Versus,
    bound: Bound,
    value: Option<f64>,
    floor_reachable: Option<bool>,
) {
    outcomes().push(Outcome {
        head,
        ab: format!("{a}/{}", versus.name()),
        bound: Some(bound),
        value,
        floor_reachable,
    });
}

/// Keeps an informational line (a `transfer` line: a value in ns, no bound).
pub fn record_info(head: String, value: Option<f64>) {
    outcomes().push(Outcome {
        head,
        ab: "ns".to_owned(),
        bound: None,
        value,
        floor_reachable: None,
    });
}
