//! T8f (spec `sharded-idle.md` §3.3 and §4): line-touch counts from the counting build
//! (`--cfg nohz_linecount`), exact and host-independent.
//!
//! One thread plays every logical CPU ([`linecount::as_cpu`]); each recorded access goes
//! through [`Coherence`], a MESI-like model of private caches: an access *transfers* a line
//! when the CPU does not hold it in the state it needs (exclusive for a store or an RMW) and
//! another CPU's cache does. A line is *machine-wide* when it lies in no CPU's runqueue: the
//! idle mask or the shard words, the `nohz` scalar line, the LLC busy counts, the shard tables.
//!
//! What is checked, one `T8f` line each (the spec's counts, for `Sharded`; the flat policies
//! and the rejected exact summary are printed beside it). "Lines" are machine-wide lines
//! whose value moves after init; the masks and tables that only init writes are counted apart
//! (read by everyone, they stay Shared and never transfer).
//!
//! - **replay check**: the model on bare counted words (a ping-pong moves the line each turn,
//!   shared reads move nothing);
//! - **pair lines**: the lines CPU 0's enter writes and reads and its exit writes (spec: 1 + 1
//!   and 1 + 0);
//! - **pair transfers** per CPU-0 pair, in two interleavings: whole pairs alternating, the
//!   spec's §3.2 cost model (flat 1, sticky 0, the same-shard control as flat), and CPU 1's
//!   enter and exit between CPU 0's, the worst case (flat 2, sticky 0). The exact summary
//!   transfers as the flat mask does (1 and 2), where §3.2 assumes about 3: its summary line
//!   moves exactly as the mask's line does, one transfer per RMW at worst; what makes its pair
//!   9-12 times the sticky pair in the bench (T8d) is the `SeqCst` fence and the extra RMWs it
//!   runs on the contended line, which a transfer count does not price;
//! - **tick test**: `nohz_anyone_tickless` on the busy CPU 1 between CPU 0's enter and exit:
//!   the lines it reads and the transfers (`Hint` 1 line and 0; flat and exact 1 transfer);
//! - **ILB pass**: 64 CPUs in 8 shards of 8, 63 of them idle, one STATS pass: the lines whose
//!   value moves (shard words, scalar line) it reads, `S + 1`;
//! - **at scale**: 768 logical CPUs, 10^5 random idle transitions: the busiest machine-wide
//!   line's share of the transitions and its writers (Sharded in 48 shards of 16: at most 16
//!   writers and about 1/48 of the transitions; the flat mask: 512 writers, two thirds);
//! - **summary writes**: 10^6 idle transitions of two CPUs, each its own shard, with a busy
//!   CPU's tick every 1,000 transitions (one jiffy): writes to the scalar line, which holds the
//!   summary (an upper bound on summary writes), against the exact summary's writes on the same
//!   transitions: at most 0.01 of them.

use crate::{Bare, N};
use nohz::internals::NOHZ_SHARD_GC_FENCE;
use nohz::sharded::Contiguous;
use nohz::sync::NOHZ_ENTER_IDLE_FENCE;
use nohz::sync::linecount::{self, Access};
use nohz::{CpuId, KickDecision, KickOutcome, NohzFlags, Patched, Policy, Scalable, Sharded};
use std::collections::{BTreeSet, HashMap};
use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;

/// Each of two CPUs its own shard: the spec's layout on two cores.
type Sticky = Sharded<N, Contiguous<1>>;
/// Both CPUs in one shard: the same code, the flat layout (the T8b control).
type SameShard = Sharded<{ N / 2 }, Contiguous<2>>;
/// [`Sticky`] with the `Validated` emptiness test.
type StickyValidated = Sharded<N, Contiguous<1>, nohz::sharded::LowestId, nohz::sharded::Validated>;
/// 64 CPUs in 8 shards of 8, for the ILB pass.
type EightShards = Sharded<8, Contiguous<8>>;

/// Which CPU's cache holds a line, and how.
#[derive(Default)]
struct Holders {
    /// The one CPU holding it exclusively (Modified or Exclusive), if any.
    exclusive: Option<usize>,
    /// The CPUs holding it Shared (empty while one holds it exclusively).
    shared: BTreeSet<usize>,
}

/// A MESI-like replay of the recorded accesses: private caches of unbounded size, so the only
/// misses are cold ones and coherence transfers, and only transfers are counted.
#[derive(Default)]
struct Coherence {
    lines: HashMap<usize, Holders>,
}

impl Coherence {
    /// Replays `a`; true if the line had to come from (or be taken from) another CPU's cache.
    fn access(&mut self, a: Access) -> bool {
        let h = self.lines.entry(a.line).or_default();
        if a.write {
            if h.exclusive == Some(a.cpu) {
                return false;
            }
            let others = h.exclusive.is_some() || h.shared.iter().any(|&c| c != a.cpu);
            h.exclusive = Some(a.cpu);
            h.shared.clear();
            others
        } else {
            if h.exclusive == Some(a.cpu) || h.shared.contains(&a.cpu) {
                return false;
            }
            let others = h.exclusive.is_some() || !h.shared.is_empty();
            if let Some(owner) = h.exclusive.take() {
                h.shared.insert(owner);
            }
            h.shared.insert(a.cpu);
            others
        }
    }
}

/// What one operation touched, counting machine-wide lines only.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Touch {
    /// Lines it stored to or RMW'd.
    written: BTreeSet<usize>,
    /// Lines it only loaded.
    read: BTreeSet<usize>,
    /// Coherence transfers it caused (any line, its own runqueue's included).
    transfers: u64,
}

/// A machine of two or more CPUs (of a machine for `C` CPUs, `W` mask words) driven as
/// logical CPUs on this thread, its accesses replayed.
struct Rig<P: Policy, const C: usize = N, const W: usize = 1> {
    m: Box<nohz::Machine<P, C, W>>,
    p: Bare,
    cpus: Vec<CpuId<C>>,
    /// Each CPU's runqueue, as lines: not machine-wide.
    rqs: Vec<Range<usize>>,
    coherence: Coherence,
    /// Every line any recorded operation wrote, warm-up included: the lines whose value moves.
    ever_written: BTreeSet<usize>,
}

impl<P: Policy, const C: usize, const W: usize> Rig<P, C, W> {
    fn new(nr: usize) -> Self {
        let p = Bare {
            jiffies: std::sync::atomic::AtomicUsize::new(1000),
        };
        let m = Box::new(nohz::Machine::<P, C, W>::new());
        if let Err(e) = m.init(nr, 0, &p) {
            eprintln!("T8f: init failed: {e}");
            std::process::exit(2);
        }
        let cpus: Vec<_> = (0..nr).map(|i| m.cpu(i).expect("initialised")).collect();
        let rqs = cpus.iter().map(|&c| linecount::lines_of(m.rq(c))).collect();
        // Every CPU busy with one task, as the kernel's rq of a running CPU.
        for &c in &cpus {
            m.rq(c).set_curr_is_idle(false);
            m.rq(c).set_nr_running(1);
        }
        drop(linecount::take());
        Rig {
            m,
            p,
            cpus,
            rqs,
            coherence: Coherence::default(),
            ever_written: BTreeSet::new(),
        }
    }

    fn machine_wide(&self, line: usize) -> bool {
        !self.rqs.iter().any(|r| r.contains(&line))
    }

    /// Runs `f` as CPU `i` and replays what it touched.
    fn run<R>(
        &mut self,
        i: usize,
        f: impl FnOnce(&nohz::Machine<P, C, W>, CpuId<C>, &Bare) -> R,
    ) -> (R, Touch) {
        let cpu = self.cpus[i];
        let r = linecount::as_cpu(i, || f(&self.m, cpu, &self.p));
        let mut t = Touch::default();
        for a in linecount::take() {
            t.transfers += u64::from(self.coherence.access(a));
            if a.write {
                self.ever_written.insert(a.line);
            }
            if self.machine_wide(a.line) {
                if a.write {
                    t.written.insert(a.line);
                } else {
                    t.read.insert(a.line);
                }
            }
        }
        t.read.retain(|l| !t.written.contains(l));
        (r, t)
    }

    /// The kernel's idle entry of CPU `i` with its tick stopped: the rq goes idle, then
    /// `nohz_balance_enter_idle`.
    fn enter(&mut self, i: usize) -> Touch {
        self.run(i, |m, c, p| {
            m.rq(c).set_nr_running(0);
            m.rq(c).set_curr_is_idle(true);
            m.nohz_balance_enter_idle(c, p);
        })
        .1
    }

    /// CPU `i` busy again: `nohz_balance_exit_idle`, as the first busy tick calls it.
    fn exit(&mut self, i: usize) -> Touch {
        self.run(i, |m, c, p| {
            m.rq(c).set_curr_is_idle(false);
            m.rq(c).set_nr_running(1);
            m.nohz_balance_exit_idle(c, p);
        })
        .1
    }

    fn tick_test(&mut self, i: usize) -> Touch {
        self.run(i, |m, c, _| m.nohz_anyone_tickless(c)).1
    }

    /// Lines `t` reads or writes whose value ever moved (not the tables written at init).
    fn moving(&self, lines: &BTreeSet<usize>) -> usize {
        lines
            .iter()
            .filter(|l| self.ever_written.contains(l))
            .count()
    }
}

/// The rejected exact summary (spec §2.4) from counted atomics: one word per shard (one CPU
/// each) and the summary, each on its own line; set on 0 -> 1, cleared on 1 -> 0 with the fence
/// and the re-check it needs.
#[repr(C, align(128))]
struct Exact {
    words: [Line; 2],
    summary: Line,
}

#[repr(C, align(128))]
#[derive(Default)]
struct Line(linecount::AtomicU64);

impl Exact {
    fn new() -> Box<Self> {
        Box::new(Exact {
            words: Default::default(),
            summary: Line::default(),
        })
    }
    fn enter(&self, i: usize) {
        linecount::as_cpu(i, || {
            if self.words[i].0.fetch_or(1, Relaxed) == 0 {
                NOHZ_ENTER_IDLE_FENCE.fence_after_rmw();
                self.summary.0.fetch_or(1 << i, Relaxed);
            }
        });
    }
    fn exit(&self, i: usize) {
        linecount::as_cpu(i, || {
            if self.words[i].0.fetch_and(!1, Relaxed) == 1 {
                self.summary.0.fetch_and(!(1 << i), Relaxed);
                NOHZ_SHARD_GC_FENCE.fence();
                if self.words[i].0.load(Relaxed) != 0 {
                    self.summary.0.fetch_or(1 << i, Relaxed);
                }
            }
        });
    }
    fn anyone(&self, i: usize) -> bool {
        linecount::as_cpu(i, || self.summary.0.load(Relaxed) != 0)
    }
}

/// The exact summary's accesses, replayed: transfers, and writes to the summary's line.
#[derive(Default)]
struct ExactReplay {
    coherence: Coherence,
}

impl ExactReplay {
    fn drain(&mut self, summary_line: usize) -> (u64, u64) {
        let (mut transfers, mut summary_writes) = (0, 0);
        for a in linecount::take() {
            transfers += u64::from(self.coherence.access(a));
            summary_writes += u64::from(a.write && a.line == summary_line);
        }
        (transfers, summary_writes)
    }
}

const WARM: usize = 8;
const ROUNDS: u64 = 1000;

/// Lines and transfers of CPU 0's pairs, CPU 1 pairing too.
struct PairCounts {
    /// CPU 0's last measured enter and exit, their reads narrowed to lines whose value moves.
    enter: Touch,
    exit: Touch,
    /// Machine-wide lines enter and exit read that never change after init (masks, tables).
    enter_fixed: usize,
    exit_fixed: usize,
    /// Transfers per CPU-0 pair when the CPUs alternate whole pairs (the cost model's
    /// one-transfer flat pair) ...
    by_pair: f64,
    /// ... and when CPU 1's enter and exit fall between CPU 0's (the worst interleaving).
    by_op: f64,
}

fn pair_counts<P: Policy>() -> PairCounts {
    let mut r = Rig::<P>::new(2);
    let (mut by_pair, mut by_op) = (0, 0);
    let (mut enter, mut exit) = (Touch::default(), Touch::default());
    for round in 0..WARM as u64 + ROUNDS {
        let e = r.enter(0);
        let x = r.exit(0);
        r.enter(1);
        r.exit(1);
        if round >= WARM as u64 {
            by_pair += e.transfers + x.transfers;
        }
    }
    for round in 0..WARM as u64 + ROUNDS {
        let e = r.enter(0);
        r.enter(1);
        let x = r.exit(0);
        r.exit(1);
        if round >= WARM as u64 {
            by_op += e.transfers + x.transfers;
            (enter, exit) = (e, x);
        }
    }
    let (enter_fixed, exit_fixed) = (
        enter.read.len() - r.moving(&enter.read),
        exit.read.len() - r.moving(&exit.read),
    );
    enter.read.retain(|l| r.ever_written.contains(l));
    exit.read.retain(|l| r.ever_written.contains(l));
    PairCounts {
        enter,
        exit,
        enter_fixed,
        exit_fixed,
        by_pair: by_pair as f64 / ROUNDS as f64,
        by_op: by_op as f64 / ROUNDS as f64,
    }
}

/// CPU 1's tick test between CPU 0's enter and exit: (the test's touch, transfers per test).
fn tick_counts<P: Policy>() -> (Touch, f64) {
    let mut r = Rig::<P>::new(2);
    let mut transfers = 0;
    let mut test = Touch::default();
    for round in 0..WARM as u64 + ROUNDS {
        r.enter(0);
        let t = r.tick_test(1);
        r.exit(0);
        if round >= WARM as u64 {
            transfers += t.transfers;
            test = t;
        }
    }
    test.read.retain(|l| r.ever_written.contains(l));
    (test, transfers as f64 / ROUNDS as f64)
}

/// The exact summary's transfers per CPU-0 pair in the two interleavings of [`pair_counts`],
/// and per tick test (CPU 1's, between CPU 0's enter and exit) as [`tick_counts`] drives it.
fn exact_counts() -> (f64, f64, f64) {
    let (pair, tick) = (Exact::new(), Exact::new());
    let (mut replay, mut tick_replay) = (ExactReplay::default(), ExactReplay::default());
    let (mut by_pair, mut by_op, mut tick_transfers) = (0, 0, 0);
    let measured = |round: usize, n: u64, into: &mut u64| {
        if round >= WARM {
            *into += n;
        }
    };
    for round in 0..WARM + ROUNDS as usize {
        pair.enter(0);
        measured(round, replay.drain(0).0, &mut by_pair);
        pair.exit(0);
        measured(round, replay.drain(0).0, &mut by_pair);
        pair.enter(1);
        pair.exit(1);
        replay.drain(0);
    }
    for round in 0..WARM + ROUNDS as usize {
        pair.enter(0);
        measured(round, replay.drain(0).0, &mut by_op);
        pair.enter(1);
        replay.drain(0);
        pair.exit(0);
        measured(round, replay.drain(0).0, &mut by_op);
        pair.exit(1);
        replay.drain(0);
        tick.enter(0);
        tick_replay.drain(0);
        tick.anyone(1);
        measured(round, tick_replay.drain(0).0, &mut tick_transfers);
        tick.exit(0);
        tick_replay.drain(0);
    }
    let per = |n: u64| n as f64 / ROUNDS as f64;
    (per(by_pair), per(by_op), per(tick_transfers))
}

/// The ILB pass over 64 CPUs in 8 shards, CPU 0 busy, the rest registered idle: the
/// machine-wide lines whose value moves that the pass reads or writes, and all it touches.
fn ilb_pass_counts() -> (usize, usize, usize, usize) {
    let mut r = Rig::<EightShards>::new(N);
    assert_eq!(r.m.nr_shards(), 8);
    for i in 1..N {
        r.enter(i);
    }
    let (_, t) = r.run(1, |m, c, p| {
        m.nohz_idle_balance_pass(c, NohzFlags::STATS, p)
    });
    let all: BTreeSet<usize> = t.read.union(&t.written).copied().collect();
    (r.moving(&all), all.len(), t.read.len(), t.written.len())
}

/// CPUs of the scale run (a 768-CPU machine: 12 mask words, 2 lines of the flat mask).
const BIG: usize = 768;
/// Its mask words.
const BIG_W: usize = nohz::mask_words(BIG);
/// Its sharded layout: 48 shards of 16 (an LLC of 16 CPUs each, as a CCX).
type BigSharded = Sharded<48, Contiguous<16>>;
/// Transitions of the scale run.
const SCALE_TRANSITIONS: u64 = 100_000;

/// What the scale run found for one policy.
struct Scale {
    /// The machine-wide line most transitions wrote: its share of the transitions ...
    busiest_share: f64,
    /// ... and how many CPUs wrote it.
    busiest_writers: usize,
    /// Machine-wide lines any transition wrote.
    lines: usize,
    /// Coherence transfers per transition.
    transfers: f64,
}

/// Spec §3.3's logical-CPU run at 768 CPUs: random idle transitions (each step a CPU, chosen
/// by a fixed pseudo-random sequence, enters or leaves idle), and per machine-wide line, how
/// many transitions wrote it and which CPUs. The transfer count per transition is about 1 for
/// every design (consecutive transitions are by different CPUs); what sharding changes is how
/// many CPUs queue on one line and what share of all transitions it serialises.
fn scale_counts<P: Policy>() -> Scale {
    let mut r = Rig::<P, BIG, BIG_W>::new(BIG);
    let mut idle = vec![false; BIG];
    let mut writes: HashMap<usize, (u64, BTreeSet<usize>)> = HashMap::new();
    let mut transfers = 0;
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..SCALE_TRANSITIONS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let i = (x % BIG as u64) as usize;
        let t = if idle[i] { r.exit(i) } else { r.enter(i) };
        idle[i] = !idle[i];
        transfers += t.transfers;
        for line in t.written {
            let e = writes.entry(line).or_default();
            e.0 += 1;
            e.1.insert(i);
        }
    }
    let (n, writers) = writes
        .values()
        .max_by_key(|(n, _)| *n)
        .map_or((0, 0), |(n, w)| (*n, w.len()));
    Scale {
        busiest_share: n as f64 / SCALE_TRANSITIONS as f64,
        busiest_writers: writers,
        lines: writes.len(),
        transfers: transfers as f64 / SCALE_TRANSITIONS as f64,
    }
}

/// 10^6 idle transitions of CPUs 0 and 1 (each its own shard) in a fixed pseudo-random order,
/// CPU 2 busy and ticking every 1,000 transitions (one jiffy each), a kicked CPU taking its
/// kick: writes to the `nohz` scalar line (which holds the summary) against the exact summary's
/// writes on the same transitions.
fn summary_writes() -> (u64, u64, u64) {
    let mut r = Rig::<Sticky>::new(3);
    // The scalar line: the one line the `Hint` tick test reads (the summary's).
    let test = r.tick_test(2);
    assert_eq!(test.read.len(), 1, "the Hint test reads one line");
    let scalar = *test.read.first().expect("one line");
    let e = Exact::new();
    let exact_line = linecount::line_of(&e.summary);
    let mut replay = ExactReplay::default();
    let (mut sticky_writes, mut exact_writes, mut kicks) = (0, 0, 0);
    let mut idle = [false; 2];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    const TRANSITIONS: u64 = 1_000_000;
    for n in 0..TRANSITIONS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let i = (x & 1) as usize;
        if idle[i] {
            e.exit(i);
        } else {
            e.enter(i);
        }
        exact_writes += replay.drain(exact_line).1;
        let t = if idle[i] { r.exit(i) } else { r.enter(i) };
        idle[i] = !idle[i];
        sticky_writes += u64::from(t.written.contains(&scalar));
        if n % 1000 == 999 {
            r.p.jiffies.fetch_add(1, Relaxed);
            let (d, t) = r.run(2, |m, c, p| m.nohz_balancer_kick(c, p));
            sticky_writes += u64::from(t.written.contains(&scalar));
            if let KickDecision::Kick {
                outcome: KickOutcome::Sent(ilb),
                ..
            } = d
            {
                kicks += 1;
                let j = ilb.index();
                let (_, t) = r.run(j, |m, c, p| m.nohz_csd_ipi(c, p));
                sticky_writes += u64::from(t.written.contains(&scalar));
                let (_, t) = r.run(j, |m, c, p| m.sched_balance_softirq(c, p));
                sticky_writes += u64::from(t.written.contains(&scalar));
            }
        }
    }
    (sticky_writes, exact_writes, kicks)
}

fn verdict(ok: bool) -> &'static str {
    if ok { "pass" } else { "fail" }
}

/// Transfers over [`ROUNDS`] turns of CPU 0 then CPU 1 running `f`, after a warm-up.
fn turns(replay: &mut ExactReplay, f: impl Fn(usize)) -> u64 {
    for _ in 0..WARM {
        f(0);
        f(1);
    }
    replay.drain(0);
    let mut n = 0;
    for _ in 0..ROUNDS {
        f(0);
        f(1);
        n += replay.drain(0).0;
    }
    n
}

/// The replay itself, on counted words: two CPUs taking turns at an RMW move the line on
/// every turn; two CPUs only reading it share it and move nothing; a CPU writing its own line
/// while the other reads a different one moves nothing.
fn replay_checks() -> (u64, u64, u64) {
    let (a, b) = (Line::default(), Line::default());
    let mut replay = ExactReplay::default();
    let ping_pong = turns(&mut replay, |i| {
        linecount::as_cpu(i, || {
            let _ = a.0.fetch_add(1, Relaxed);
        })
    });
    let shared_reads = turns(&mut replay, |i| {
        linecount::as_cpu(i, || {
            let _ = b.0.load(Relaxed);
        })
    });
    let private = turns(&mut replay, |i| {
        linecount::as_cpu(i, || {
            if i == 0 {
                let _ = a.0.fetch_add(1, Relaxed);
            } else {
                let _ = b.0.load(Relaxed);
            }
        })
    });
    (ping_pong, shared_reads, private)
}

/// Prints the T8f lines; false if a bound is missed.
pub fn run() -> bool {
    let mut ok = true;
    let (ping_pong, shared_reads, private) = replay_checks();
    let good = ping_pong == 2 * ROUNDS && shared_reads == 0 && private == 0;
    println!(
        "T8f replay check over {ROUNDS} rounds: RMW ping-pong {ping_pong} transfers (one per turn), \
         shared reads {shared_reads}, a private writer beside a reader {private}; target {} / 0 / 0 -> {}",
        2 * ROUNDS,
        verdict(good)
    );
    ok &= good;
    let sticky = pair_counts::<Sticky>();
    let flat = pair_counts::<Scalable>();
    let patched = pair_counts::<Patched>();
    let same = pair_counts::<SameShard>();
    let (exact_by_pair, exact_by_op, exact_tick) = exact_counts();
    let lines = |p: &PairCounts| {
        format!(
            "enter {}w+{}r, exit {}w+{}r",
            p.enter.written.len(),
            p.enter.read.len(),
            p.exit.written.len(),
            p.exit.read.len()
        )
    };
    let good = sticky.enter.written.len() == 1
        && sticky.enter.read.len() == 1
        && sticky.exit.written.len() == 1
        && sticky.exit.read.is_empty();
    println!(
        "T8f pair lines, machine-wide lines whose value moves: sharded {} (and {}/{} fixed lines read: \
         masks, tables); flat Scalable {}; Patched {}; target sharded enter 1w+1r, exit 1w+0r -> {}",
        lines(&sticky),
        sticky.enter_fixed,
        sticky.exit_fixed,
        lines(&flat),
        lines(&patched),
        verdict(good)
    );
    ok &= good;
    let good = sticky.by_pair == 0.0
        && sticky.by_op == 0.0
        && flat.by_pair == 1.0
        && same.by_pair == flat.by_pair
        && same.by_op == flat.by_op
        && exact_by_pair >= 1.0;
    println!(
        "T8f pair transfers per CPU-0 pair, whole pairs alternating (CPU 1's enter and exit between \
         CPU 0's): sticky {:.2} ({:.2}), flat Scalable {:.2} ({:.2}), Patched {:.2} ({:.2}), \
         same-shard control {:.2} ({:.2}), exact summary {exact_by_pair:.2} ({exact_by_op:.2}); \
         target sticky 0, flat 1, the control equal to flat, exact >= 1 -> {}",
        sticky.by_pair,
        sticky.by_op,
        flat.by_pair,
        flat.by_op,
        patched.by_pair,
        patched.by_op,
        same.by_pair,
        same.by_op,
        verdict(good)
    );
    ok &= good;
    let (hint, hint_x) = tick_counts::<Sticky>();
    let (validated, validated_x) = tick_counts::<StickyValidated>();
    let (flat_t, flat_x) = tick_counts::<Scalable>();
    let good = hint.read.len() == 1
        && hint.written.is_empty()
        && hint_x == 0.0
        && flat_x == 1.0
        && exact_tick == 1.0;
    println!(
        "T8f tick test (nohz_anyone_tickless on busy CPU 1, CPU 0 pairing): Hint reads {} line(s) \
         with {hint_x:.2} transfers; Validated {} with {validated_x:.2}; flat {} with {flat_x:.2}; \
         exact summary 1 with {exact_tick:.2}; target Hint 1 line and 0 transfers, flat and exact 1 -> {}",
        hint.read.len(),
        validated.read.len(),
        flat_t.read.len(),
        verdict(good)
    );
    ok &= good;
    let (moving, all, read, written) = ilb_pass_counts();
    let good = moving == 8 + 1;
    println!(
        "T8f ILB pass (64 CPUs, 8 shards of 8, 63 idle, STATS): {moving} machine-wide lines whose \
         value moves ({all} touched: {read} read, {written} written; the others never change after \
         init); target S + 1 = 9 -> {}",
        verdict(good)
    );
    ok &= good;
    let sharded = scale_counts::<BigSharded>();
    let flat = scale_counts::<Scalable>();
    let patched = scale_counts::<Patched>();
    let good = sharded.busiest_writers <= 16
        && sharded.busiest_share <= 2.0 * 16.0 / BIG as f64
        && flat.busiest_share >= 0.5;
    println!(
        "T8f at scale ({BIG} CPUs, {SCALE_TRANSITIONS} random transitions): the busiest \
         machine-wide line takes {:.1} % of the transitions with {} writers under Sharded (48 \
         shards of 16; {} lines written), {:.1} % with {} under flat Scalable ({} lines), {:.1} % \
         with {} under Patched; transfers per transition {:.2} / {:.2} / {:.2}; target sharded \
         <= 16 writers and <= 2 x 16/{BIG} of the transitions on any line -> {}",
        100.0 * sharded.busiest_share,
        sharded.busiest_writers,
        sharded.lines,
        100.0 * flat.busiest_share,
        flat.busiest_writers,
        flat.lines,
        100.0 * patched.busiest_share,
        patched.busiest_writers,
        sharded.transfers,
        flat.transfers,
        patched.transfers,
        verdict(good)
    );
    ok &= good;
    let (sticky_w, exact_w, kicks) = summary_writes();
    let ratio = sticky_w as f64 / exact_w as f64;
    let good = ratio <= 0.01;
    println!(
        "T8f summary writes over 10^6 transitions (2 CPUs, one per shard; a tick each 1,000, \
         {kicks} kicks sent): writes to the scalar line {sticky_w} (an upper bound on the \
         summary's: the line holds the flags and next_balance too), the exact summary's {exact_w}: \
         ratio {ratio:.4}; target <= 0.01 -> {}",
        verdict(good)
    );
    ok &= good;
    ok
}
