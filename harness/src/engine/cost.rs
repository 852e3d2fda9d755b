//! The contention cost model: what the crate's memory accesses cost each CPU, in virtual time,
//! and in which kernel function.
//!
//! The counting build (`RUSTFLAGS='--cfg nohz_linecount'`) records every atomic access the
//! crate makes: the logical CPU, the 64-byte line and whether the line was needed
//! exclusively. The engine runs each event's crate code as that event's CPU and hands each
//! access, as it happens, to this model:
//!
//! - Each line is held by one CPU exclusively, or shared by some CPUs (MSI, no E/O states).
//! - An access the CPU's copy can serve (a read of a line it shares or owns, a write of a line
//!   it owns) costs [`CostParams::t_hit`] (a load or a store) or [`CostParams::t_rmw`] (a locked RMW).
//! - Any other access needs a transfer, of `t_x` from the nearest holder:
//!   [`CostParams::t_local`] within a socket, [`CostParams::t_remote`] across sockets. A write
//!   leaves the writer the only holder; a read adds the reader to the sharers.
//! - A line serves one ownership transfer at a time: a write, and a read of a line a core owns
//!   (which takes it from that core), wait until the line is free (queueing). A read of a line
//!   no core owns is served by the shared cache, in parallel with other such reads: 480 CPUs
//!   reading a flag nobody writes pay one `t_x` each, not 480 in a row.
//! - The core a transfer takes the line from keeps using it until the request reaches it,
//!   half a transfer after it was sent ([`CostParams::leave_pct`]). A transfer for a locked
//!   RMW may cost more than one for a load or store ([`CostParams::rmw_transfer_pct`]).
//! - Events run one at a time, each to its end, while its CPU's clock runs on through its
//!   accesses: a transfer an earlier-run event reserved later in time does not hold up an
//!   access that comes before it (it takes the gap before), and the holders are updated in
//!   the order the accesses run, not in their time order (the approximation of running each
//!   event whole).
//! - Every access stalls its CPU until it completes (stores included: the crate's contended
//!   writes are locked RMWs, and a blind store's line is still taken from the others).
//!
//! The CPU's clock runs through its event's accesses; the time the event's crate code took
//! is charged to the CPU (a running task finishes that much later) and to the kernel function
//! that made each access. The function is found as perf finds a symbol: from a backtrace of
//! the access, the innermost frame (inlined frames included) whose function is one of
//! [`KERNEL_FNS`]; the crate's own helpers the kernel inlines into those (`kick_ilb`,
//! `find_new_ilb`, `update_nohz_stats`, the mask and rq accessors) fold into their caller. Every
//! transfer is attributed; hits, which cost a nanosecond, by a sample of one in
//! [`HIT_SAMPLE`], weighted. What is not modelled: instructions other than the atomic
//! accesses, the platform's own memory (the engine's run queues), prefetch, the store buffer.
//!
//! Only the counting build has the model; in other builds [`available`] is false and runs
//! report no kernel-function time.

use std::collections::HashMap;

/// The transfer and hit costs, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CostParams {
    /// A transfer between two cores of one socket (about 70 ns; 56-74 measured on this host).
    pub t_local: u64,
    /// A transfer between sockets (about 200 ns).
    pub t_remote: u64,
    /// A load or a plain store the CPU's own copy serves (0 by default: an L1 hit overlaps
    /// the work around it). On the AMD EPYC host of 2026-12-06 a quiet Sharded pair's 23 loads
    /// and stores, with its branches and calls, cost the bench about 5 ns beside its two locked
    /// RMWs; the validation (`super::validate`) adds such work per pair, measured by the
    /// bench's T2, rather than per access.
    pub t_hit: u64,
    /// A read-modify-write the CPU's own copy serves: a locked instruction, about 5.5-6 ns on
    /// the host the defaults come from even on an owned line, about 10 on an AMD EPYC one
    /// (`ci/engine-validate.sh` fits it to the bench's `rmw-local`).
    pub t_rmw: u64,
    /// How long an ownership transfer keeps the line from the next one, in per cent of its
    /// `t_x`: the rest of `t_x` is the request's and the data's travel, which overlaps the
    /// next request's. 100 would serialize whole transfers (two cores trading a line would
    /// each wait out the other's transfer on every pair: twice what the bench measures).
    pub occupancy_pct: u64,
    /// What a transfer for a locked RMW costs, in per cent of `t_x` (100 by default: the
    /// same). The calibration patterns (`ci/engine-validate.sh`) put it near 125 on this host:
    /// a locked RMW that takes a line from the other core costs more than the load/store round
    /// trip `t_x` is measured from.
    pub rmw_transfer_pct: u64,
    /// When a request reaches the core the line is taken from, in per cent of `t_x` after the
    /// transfer starts (50 by default: half a transfer); until then that core keeps using the
    /// line. Longer lets a core run more accesses on a line it is about to lose.
    pub leave_pct: u64,
    /// Where the plain irq-time flag sits, which the kernels before seed 003 (`Legacy`,
    /// `Seed000`) read; the others read a static key instead.
    pub flag_line: FlagLine,
}

impl Default for CostParams {
    fn default() -> Self {
        CostParams {
            t_local: 70,
            t_remote: 200,
            t_hit: 0,
            t_rmw: 6,
            occupancy_pct: 25,
            rmw_transfer_pct: 100,
            leave_pct: 50,
            flag_line: FlagLine::Nohz,
        }
    }
}

impl CostParams {
    /// What one transfer of a line costs: `t_x` within a socket or across, and for a locked
    /// RMW [`rmw_transfer_pct`](Self::rmw_transfer_pct) of it.
    fn transfer_ns(&self, remote: bool, rmw: bool) -> u64 {
        let tx = if remote { self.t_remote } else { self.t_local };
        if rmw {
            tx * self.rmw_transfer_pct / 100
        } else {
            tx
        }
    }
}

/// Where the plain irq-time flag (`int sched_clock_irqtime`, which `Legacy` and `Seed000` read
/// before seed 003 made it a static key) sits. The code does not decide it; the kernel build's
/// link order does. Seed 003 found it in the `nohz` line of an x86 build; another build puts it
/// elsewhere.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub enum FlagLine {
    /// In the `nohz` line, as in the x86 build seed 003 profiled (the crate's own layout):
    /// every interrupt reads the line that idle entries and exits write.
    #[default]
    Nohz,
    /// On a line of its own, written only at boot: its reads hit.
    Own,
}

impl FlagLine {
    /// The name the command line and the run's notes use.
    pub fn name(self) -> &'static str {
        match self {
            FlagLine::Nohz => "nohz-line",
            FlagLine::Own => "own-line",
        }
    }
}

/// The kernel functions time is attributed to: each a symbol of its own in a kernel build
/// (the static helpers the kernel inlines are not listed, so their accesses count for the
/// listed function that calls them). The crate's `nohz_idle_balance` and
/// `nohz_idle_balance_pass` together are the kernel's `_nohz_idle_balance`.
pub const KERNEL_FNS: [&str; 22] = [
    "irqtime_account_irq",
    "nohz_balance_exit_idle",
    "nohz_balance_enter_idle",
    "nohz_balancer_kick",
    "nohz_csd_func",
    "_nohz_idle_balance",
    "nohz_run_idle_balance",
    "nohz_newidle_balance",
    "sched_balance_newidle",
    "sched_balance_softirq",
    "sched_tick",
    "tick_sched_timer",
    "tick_nohz_idle_enter",
    "tick_nohz_idle_stop_tick",
    "tick_nohz_idle_exit",
    "tick_nohz_irq_enter",
    "tick_nohz_irq_exit",
    "tick_nohz_next_event",
    "tick_nohz_stop_tick",
    "tick_nohz_restart_sched_tick",
    "tick_nohz_full_update_tick",
    "other",
];

/// Index of "other" in [`KERNEL_FNS`]: accesses under none of the listed functions.
const OTHER: usize = KERNEL_FNS.len() - 1;

/// Hits are attributed by a sample of one in this many (weighted by it).
pub const HIT_SAMPLE: u64 = 16;

/// Whether this build has the model (the counting build).
pub const fn available() -> bool {
    cfg!(nohz_linecount)
}

/// Which listed kernel function a demangled symbol name is, if any.
pub fn kernel_fn_of(name: &str) -> Option<usize> {
    // `path::Type<..>::function::{{closure}}::{{closure}}` -> `function`.
    let mut rest = name;
    loop {
        let trimmed = rest.trim_end_matches("::{{closure}}");
        if trimmed.len() == rest.len() {
            break;
        }
        rest = trimmed;
    }
    let last = rest.rsplit("::").next().unwrap_or(rest);
    let last = last.split('<').next().unwrap_or(last);
    let last = match last {
        "nohz_idle_balance" | "nohz_idle_balance_pass" => "_nohz_idle_balance",
        "tick_irq_enter" => "tick_nohz_irq_enter",
        // The crate tests the irqtime switch before calling in; the kernel tests it first
        // thing inside `irqtime_account_irq` (the read seed 003 is about).
        "account_irq_time" => "irqtime_account_irq",
        other => other,
    };
    KERNEL_FNS[..OTHER].iter().position(|&f| f == last)
}

/// One line's coherence state.
#[derive(Debug, Clone, Default)]
struct LineSt {
    /// The CPU holding it exclusively (modified), if any.
    owner: Option<usize>,
    /// The CPUs sharing it (when no owner).
    sharers: Vec<usize>,
    /// Its transfers not yet over, as `(start, end)` in time order.
    busy: Vec<(u64, u64)>,
    /// The owner the last transfer took it from, and until when that core still has it: the
    /// request reaches it [`CostParams::leave_pct`] of a transfer after it was sent.
    leaving: Option<(usize, u64)>,
    /// Hits on the line while it was busy, which an event run later may yet turn into misses
    /// (see [`Model::steal`]): `(time, cpu, kernel function, locked RMW, write)`.
    hits: Vec<HitRec>,
    /// When each core last got the line (the start of its transfer).
    taken: Vec<(usize, u64)>,
}

impl LineSt {
    fn taken_by(&self, cpu: usize) -> u64 {
        self.taken
            .iter()
            .find(|&&(c, _)| c == cpu)
            .map_or(0, |&(_, at)| at)
    }

    fn set_taken(&mut self, cpu: usize, at: u64) {
        match self.taken.iter_mut().find(|(c, _)| *c == cpu) {
            Some(e) => e.1 = at,
            None => self.taken.push((cpu, at)),
        }
    }
}

/// A hit a later-run event may turn into a miss.
#[derive(Debug, Clone, Copy)]
struct HitRec {
    at: u64,
    /// When the hitting core had got the line.
    since: u64,
    cpu: usize,
    f: usize,
    rmw: bool,
    write: bool,
}

/// The model's state for one run.
#[derive(Debug)]
pub struct Model {
    params: CostParams,
    socket: Vec<usize>,
    lines: HashMap<usize, LineSt>,
    /// The running CPU's clock within its event.
    clock: u64,
    /// The time of the event being run: no later access can come before it, so transfers
    /// that ended by then are forgotten.
    horizon: u64,
    /// Time per kernel function per CPU: `[function][cpu]`.
    by_fn: Vec<Vec<u64>>,
    /// Transfers and waiting per kernel function.
    fn_transfers: Vec<u64>,
    fn_wait: Vec<u64>,
    /// The last access's wait for its line.
    last_wait: u64,
    /// The line of the hit just recorded, whose kernel function the observer fills in.
    pending_hit: Option<usize>,
    /// Hits turned into misses by a later-run event's transfer.
    stolen: u64,
    transfers: u64,
    remote_transfers: u64,
    wait_ns: u64,
    hits: u64,
    /// Return address -> the listed function it is in (the attribution's cache).
    #[cfg_attr(not(nohz_linecount), allow(dead_code))]
    ips: HashMap<usize, Option<usize>>,
}

/// What the model found over a run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CostReport {
    /// The parameters used.
    pub params: CostParams,
    /// Nanoseconds per kernel function, all CPUs together, in [`KERNEL_FNS`] order.
    pub fn_ns: Vec<u64>,
    /// For each function, the most any one CPU spent in it.
    pub fn_max_cpu_ns: Vec<u64>,
    /// Line transfers made in each function, in [`KERNEL_FNS`] order.
    pub fn_transfers: Vec<u64>,
    /// Nanoseconds each function's accesses waited for a busy line.
    pub fn_wait_ns: Vec<u64>,
    /// Line transfers.
    pub transfers: u64,
    /// Of those, across sockets.
    pub remote_transfers: u64,
    /// Nanoseconds accesses waited for a line busy with another transfer.
    pub wait_ns: u64,
    /// Accesses their CPU's copy served.
    pub hits: u64,
    /// Of those, hits an event run later turned into transfers (counted in `transfers`).
    pub stolen: u64,
    /// The time the counts cover: the run after its warm-up, in nanoseconds.
    pub measured_ns: u64,
}

/// Reserves the first gap of `occupy` at or after `t` among a line's transfers (`busy`, in time
/// order): an access that comes, in time, before a transfer reserved by an event run earlier
/// (whose CPU's clock had run on) goes first; one that overlaps a transfer waits for it.
/// Returns the reservation's start.
fn reserve(busy: &mut Vec<(u64, u64)>, t: u64, occupy: u64) -> u64 {
    let mut start = t;
    let mut at = busy.len();
    for (k, &(s, e)) in busy.iter().enumerate() {
        if e <= start {
            continue;
        }
        if s >= start + occupy {
            at = k;
            break;
        }
        start = e;
    }
    busy.insert(at, (start, start + occupy));
    start
}

impl Model {
    /// A model for a machine whose CPU `c` sits on socket `socket[c]`.
    pub fn new(params: CostParams, socket: Vec<usize>) -> Model {
        let n = socket.len();
        Model {
            params,
            socket,
            lines: HashMap::new(),
            clock: 0,
            horizon: 0,
            by_fn: vec![vec![0; n]; KERNEL_FNS.len()],
            fn_transfers: vec![0; KERNEL_FNS.len()],
            fn_wait: vec![0; KERNEL_FNS.len()],
            last_wait: 0,
            pending_hit: None,
            stolen: 0,
            transfers: 0,
            remote_transfers: 0,
            wait_ns: 0,
            hits: 0,
            ips: HashMap::new(),
        }
    }

    /// One access by `cpu` at the model's clock: its cost (waiting included), the clock moved
    /// on by it, and whether it was a hit.
    pub fn access(&mut self, cpu: usize, line: usize, write: bool, rmw: bool) -> (u64, bool) {
        let t = self.clock;
        let p = self.params;
        self.last_wait = 0;
        let horizon = self.horizon;
        let st = self.lines.entry(line).or_default();
        st.hits.retain(|h| h.at > horizon);
        st.busy.retain(|&(_, end)| end > horizon);
        // A hit while the line is busy with transfers may be one an event run later takes the
        // line away before: recorded, for `steal`.
        let record = |st: &mut LineSt| {
            if !st.busy.is_empty() {
                let since = st.taken_by(cpu);
                st.hits.push(HitRec {
                    at: t,
                    since,
                    cpu,
                    f: OTHER,
                    rmw,
                    write,
                });
                true
            } else {
                false
            }
        };
        if st.leaving.is_some_and(|(o, until)| o == cpu && t < until) {
            // The line is on its way out, but the request has not reached this core yet.
            let cost = if rmw { p.t_rmw } else { p.t_hit };
            self.hits += 1;
            self.clock = t + cost;
            if record(st) {
                self.pending_hit = Some(line);
            }
            return (cost, true);
        }
        let held = st.owner == Some(cpu) || (st.owner.is_none() && st.sharers.contains(&cpu));
        let hit = if write { st.owner == Some(cpu) } else { held };
        let cost = if hit {
            if rmw { p.t_rmw } else { p.t_hit }
        } else {
            let mine = self.socket[cpu];
            let holders: &[usize] = match &st.owner {
                Some(o) => std::slice::from_ref(o),
                None => &st.sharers,
            };
            let remote =
                !holders.is_empty() && holders.iter().all(|&h| h != cpu && self.socket[h] != mine);
            let tx = p.transfer_ns(remote, rmw);
            let reaches = tx * p.leave_pct / 100;
            if !write && st.owner.is_none() {
                // A read of a line no core owns: the shared cache serves it, in parallel with
                // other such reads; only a transfer from or to an owner takes the line.
                self.transfers += 1;
                self.remote_transfers += u64::from(remote);
                st.sharers.push(cpu);
                st.set_taken(cpu, t);
                self.clock = t + tx;
                return (tx, false);
            }
            // The first gap of `tx` at or after `t` between the line's transfers: an access
            // that comes, in time, before a transfer reserved by an event run earlier (whose
            // CPU's clock had run on) goes first; one that overlaps a transfer waits for it.
            let occupy = (tx * p.occupancy_pct / 100).max(1);
            let start = reserve(&mut st.busy, t, occupy);
            st.set_taken(cpu, start);
            if let Some(o) = st.owner.filter(|&o| o != cpu) {
                st.leaving = Some((o, start + reaches));
            }
            self.wait_ns += start - t;
            self.last_wait = start - t;
            self.transfers += 1;
            self.remote_transfers += u64::from(remote);
            self.steal(line, cpu, write, start + reaches);
            let st = self.lines.get_mut(&line).expect("the line is there");
            if write {
                st.owner = Some(cpu);
                st.sharers.clear();
            } else {
                if let Some(o) = st.owner.take() {
                    st.sharers.push(o);
                }
                st.sharers.push(cpu);
            }
            self.clock = t + (start + tx - t);
            return (start + tx - t, false);
        };
        if write {
            st.owner = Some(cpu);
            st.sharers.clear();
        }
        self.hits += 1;
        if record(st) {
            self.pending_hit = Some(line);
        }
        self.clock = t + cost;
        (cost, true)
    }

    /// The kernel function of the hit `access` just recorded (the observer attributes it).
    pub fn note_hit_fn(&mut self, f: usize) {
        if let Some(line) = self.pending_hit.take()
            && let Some(h) = self.lines.get_mut(&line).and_then(|st| st.hits.last_mut())
        {
            h.f = f;
        }
    }

    /// Whether the last access recorded a hit whose function the observer must fill in.
    pub fn hit_pending(&self) -> bool {
        self.pending_hit.is_some()
    }

    /// `by` took `line` with a request that reached the other cores at `reached` (a write:
    /// from every holder; a read: from its owner, whose later writes then need it back). A
    /// hit another core made on the line after that, in an event run earlier (events run
    /// whole, so it could not see this one coming), was a miss: the first such hit of each
    /// core is charged to its kernel function again as a transfer, queued behind the line's
    /// transfers as they are now. The CPU's clock and the holders are not rewound.
    fn steal(&mut self, line: usize, by: usize, write: bool, reached: u64) {
        let p = self.params;
        let Some(st) = self.lines.get_mut(&line) else {
            return;
        };
        let owner = st.owner;
        let mut victims: Vec<HitRec> = Vec::new();
        st.hits.retain(|h| {
            let hit_by_other = h.cpu != by && h.at >= reached && reached > h.since;
            let taken = write || (owner == Some(h.cpu) && h.write);
            if hit_by_other && taken && !victims.iter().any(|v| v.cpu == h.cpu) {
                victims.push(*h);
                return false;
            }
            true
        });
        for h in victims {
            let remote = self.socket[h.cpu] != self.socket[by];
            let tx = p.transfer_ns(remote, h.rmw);
            let occupy = (tx * p.occupancy_pct / 100).max(1);
            let st = self.lines.get_mut(&line).expect("the line is there");
            let start = reserve(&mut st.busy, h.at, occupy);
            let was = if h.rmw { p.t_rmw } else { p.t_hit };
            self.by_fn[h.f][h.cpu] += (start - h.at + tx).saturating_sub(was);
            self.fn_transfers[h.f] += 1;
            self.fn_wait[h.f] += start - h.at;
            self.wait_ns += start - h.at;
            self.transfers += 1;
            self.remote_transfers += u64::from(remote);
            self.stolen += 1;
        }
    }

    /// Charges `ns` of `cpu`'s time to kernel function `f` (an index of [`KERNEL_FNS`]);
    /// `miss`: the last access was a transfer, whose wait is charged to `f` too.
    pub fn charge(&mut self, f: usize, cpu: usize, ns: u64, miss: bool) {
        self.by_fn[f][cpu] += ns;
        if miss {
            self.fn_transfers[f] += 1;
            self.fn_wait[f] += self.last_wait;
        }
    }

    /// Sets the time the next access happens at, and the horizon (no later access comes
    /// before it), for a driver that steps the CPUs itself.
    pub fn set_time(&mut self, clock: u64, horizon: u64) {
        self.clock = clock;
        self.horizon = horizon;
    }

    /// Forgets the counts so far (the line states stay): the end of the warm-up.
    pub fn reset_counts(&mut self) {
        for v in &mut self.by_fn {
            v.iter_mut().for_each(|x| *x = 0);
        }
        self.fn_transfers.iter_mut().for_each(|x| *x = 0);
        self.fn_wait.iter_mut().for_each(|x| *x = 0);
        self.transfers = 0;
        self.remote_transfers = 0;
        self.wait_ns = 0;
        self.hits = 0;
        self.stolen = 0;
    }

    /// The run's totals, over `measured_ns` of it.
    pub fn report(&self, measured_ns: u64) -> CostReport {
        CostReport {
            params: self.params,
            fn_ns: self.by_fn.iter().map(|v| v.iter().sum()).collect(),
            fn_max_cpu_ns: self
                .by_fn
                .iter()
                .map(|v| v.iter().copied().max().unwrap_or(0))
                .collect(),
            fn_transfers: self.fn_transfers.clone(),
            fn_wait_ns: self.fn_wait.clone(),
            transfers: self.transfers,
            remote_transfers: self.remote_transfers,
            wait_ns: self.wait_ns,
            hits: self.hits,
            stolen: self.stolen,
            measured_ns,
        }
    }
}

#[cfg(nohz_linecount)]
mod live {
    //! The model as the counting build's observer: one per thread (the engine's).

    use super::{HIT_SAMPLE, Model, OTHER, kernel_fn_of};
    use nohz::sync::linecount::{self, Access};
    use std::cell::{Cell, RefCell};

    std::thread_local! {
        static MODEL: RefCell<Option<Model>> = const { RefCell::new(None) };
        static HITS_SEEN: Cell<u64> = const { Cell::new(0) };
    }
    /// Installs `m` as this thread's model and observes the crate's accesses.
    pub fn install(m: Model) {
        MODEL.with(|x| *x.borrow_mut() = Some(m));
        HITS_SEEN.with(|h| h.set(0));
        linecount::observe(Some(observer));
    }

    /// The end of the warm-up: the counts so far are forgotten.
    pub fn reset_counts() {
        MODEL.with(|x| {
            if let Some(m) = x.borrow_mut().as_mut() {
                m.reset_counts();
            }
        });
    }

    /// Records the accesses to the atomic at `addr` (the irq-time flag's, for
    /// [`super::FlagLine::Own`]) as made to a line of its own, until [`uninstall`].
    pub fn set_apart(addr: usize) {
        linecount::set_apart(Some(addr));
    }

    /// Stops observing and returns the model.
    pub fn uninstall() -> Option<Model> {
        linecount::observe(None);
        linecount::set_apart(None);
        MODEL.with(|x| x.borrow_mut().take())
    }

    /// Runs `f` as CPU `cpu` starting at time `now`; returns its result and the time its
    /// accesses took.
    pub fn on_cpu<R>(cpu: usize, now: u64, f: impl FnOnce() -> R) -> (R, u64) {
        MODEL.with(|x| {
            if let Some(m) = x.borrow_mut().as_mut() {
                m.clock = now;
                m.horizon = now;
            }
        });
        let r = linecount::as_cpu(cpu, f);
        let spent = MODEL.with(|x| x.borrow().as_ref().map_or(0, |m| m.clock - now));
        (r, spent)
    }

    fn observer(a: Access) {
        let (cost, hit) = MODEL.with(|x| {
            x.borrow_mut()
                .as_mut()
                .map_or((0, true), |m| m.access(a.cpu, a.line, a.write, a.rmw))
        });
        // A hit a later event may steal needs its function, sampled or not.
        let pending = MODEL.with(|x| x.borrow().as_ref().is_some_and(|m| m.hit_pending()));
        let weight = if hit {
            let seen = HITS_SEEN.with(|h| {
                h.set(h.get() + 1);
                h.get()
            });
            if seen.is_multiple_of(HIT_SAMPLE) {
                Some(cost * HIT_SAMPLE)
            } else {
                None
            }
        } else {
            Some(cost)
        };
        if weight.is_none() && !pending {
            return;
        }
        let f = attribute();
        MODEL.with(|x| {
            if let Some(m) = x.borrow_mut().as_mut() {
                if pending {
                    m.note_hit_fn(f);
                }
                if let Some(w) = weight {
                    m.charge(f, a.cpu, w, !hit);
                }
            }
        });
    }

    /// The innermost listed kernel function on the stack (inlined frames included).
    fn attribute() -> usize {
        let mut ips: [usize; 48] = [0; 48];
        let mut n = 0;
        backtrace::trace(|frame| {
            ips[n] = frame.ip() as usize;
            n += 1;
            n < ips.len()
        });
        for &ip in &ips[..n] {
            let known = MODEL.with(|x| x.borrow().as_ref().and_then(|m| m.ips.get(&ip).copied()));
            let found = match known {
                Some(found) => found,
                None => {
                    let mut found = None;
                    // `ip - 1`: the call instruction, not the return address.
                    backtrace::resolve((ip.saturating_sub(1)) as *mut std::ffi::c_void, |sym| {
                        if found.is_none()
                            && let Some(name) = sym.name()
                        {
                            found = kernel_fn_of(&format!("{name:#}"));
                        }
                    });
                    MODEL.with(|x| {
                        if let Some(m) = x.borrow_mut().as_mut() {
                            m.ips.insert(ip, found);
                        }
                    });
                    found
                }
            };
            if let Some(f) = found {
                return f;
            }
        }
        OTHER
    }
}

#[cfg(nohz_linecount)]
pub use live::{install, on_cpu, reset_counts, set_apart, uninstall};

/// Runs `f`, the engine's own reading of the crate's state, unrecorded (no kernel would
/// make it).
pub fn unrecorded<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(nohz_linecount)]
    return nohz::sync::linecount::unrecorded(f);
    #[cfg(not(nohz_linecount))]
    f()
}

/// Runs `f` as CPU `cpu` from time `now`: without the counting build, at no cost.
#[cfg(not(nohz_linecount))]
pub fn on_cpu<R>(_cpu: usize, _now: u64, f: impl FnOnce() -> R) -> (R, u64) {
    (f(), 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fold_to_the_kernel_symbol() {
        let exit = "nohz::fair::Fair<nohz::policy::Patched, 8, 1>::nohz_balance_exit_idle";
        assert_eq!(kernel_fn_of(exit), Some(1));
        let kick = "nohz::fair::kick::<impl nohz::fair::Fair<P, 8, 1>>::nohz_balancer_kick::{{closure}}::{{closure}}";
        assert_eq!(
            KERNEL_FNS[kernel_fn_of(kick).unwrap()],
            "nohz_balancer_kick"
        );
        let pass = "nohz::fair::balance::<impl Fair<P,N,W>>::nohz_idle_balance_pass";
        assert_eq!(
            KERNEL_FNS[kernel_fn_of(pass).unwrap()],
            "_nohz_idle_balance"
        );
        assert_eq!(kernel_fn_of("nohz::fair::kick::find_new_ilb"), None);
        assert_eq!(kernel_fn_of("core::sync::atomic::AtomicU64::load"), None);
    }

    #[test]
    fn a_line_serves_one_transfer_at_a_time() {
        let p = CostParams {
            occupancy_pct: 100,
            ..CostParams::default()
        };
        let mut m = Model::new(p, vec![0, 0, 1]);
        // CPU 0 takes the line (first touch: a local fetch), then hits.
        assert_eq!(m.access(0, 7, true, true), (p.t_local, false));
        m.clock = 1000;
        assert_eq!(m.access(0, 7, false, false), (p.t_hit, true));
        // CPU 1 reads it at 1000: one transfer from CPU 0, the line busy until 1070; CPU 0
        // keeps its copy until the request reaches it at 1035.
        m.clock = 1000;
        assert_eq!(m.access(1, 7, false, false), (p.t_local, false));
        m.clock = 1010;
        assert_eq!(m.access(0, 7, true, true), (p.t_rmw, true));
        // After that, CPU 0's write needs the line back and waits for the transfer.
        m.clock = 1040;
        assert_eq!(m.access(0, 7, true, true), (30 + p.t_local, false));
        assert_eq!(m.report(1).wait_ns, 30);
        // The line is busy 1000-1070 and 1070-1140. CPU 1, running earlier in time (at 900),
        // slips in before them. Its request reached CPU 0 at 935, so CPU 0's read hit at 1000
        // was in fact a transfer: charged as one, queued at 1140-1210 (140 ns of waiting). At
        // 1100 CPU 0 waits for the end of that.
        m.clock = 900;
        assert_eq!(m.access(1, 7, true, true), (p.t_local, false));
        let r = m.report(1);
        assert_eq!((r.stolen, r.wait_ns), (1, 30 + 140));
        m.clock = 1100;
        assert_eq!(m.access(0, 7, true, true), (110 + p.t_local, false));
        assert_eq!(m.report(1).wait_ns, 30 + 140 + 110);
        // CPU 2, on the other socket, takes it from CPU 0: a remote transfer.
        m.clock = 5000;
        assert_eq!(m.access(2, 7, true, true), (p.t_remote, false));
        let r = m.report(1);
        assert_eq!((r.transfers, r.remote_transfers, r.hits), (7, 1, 2));
    }

    #[test]
    fn a_transfer_holds_the_line_for_its_occupancy_only() {
        let p = CostParams::default();
        let occupy = p.t_local * p.occupancy_pct / 100;
        let mut m = Model::new(p, vec![0, 0, 0]);
        m.access(0, 3, true, true);
        // CPU 1 takes it at 100: 70 ns for CPU 1, the line busy for `occupy` from 100.
        m.clock = 100;
        assert_eq!(m.access(1, 3, true, true), (p.t_local, false));
        // CPU 2 asks at 110: it waits for the end of that, then its own 70.
        m.clock = 110;
        assert_eq!(
            m.access(2, 3, true, true),
            (100 + occupy - 110 + p.t_local, false)
        );
        // CPU 1 still has the line until CPU 2's request reaches it; CPU 0 does not.
        m.clock = 120;
        assert_eq!(m.access(1, 3, true, true), (p.t_rmw, true));
        m.clock = 1000;
        assert_eq!(m.access(0, 3, true, true), (p.t_local, false));
        // A locked RMW on an owned line costs more than a load or a plain store.
        m.clock = 2000;
        assert_eq!(m.access(0, 3, true, true), (p.t_rmw, true));
        assert_eq!(m.access(0, 3, true, false), (p.t_hit, true));
    }

    /// Events run whole, so a hit in an event run earlier can come after, in time, the
    /// request of an event run later: that hit was a miss, and is charged as one.
    #[test]
    fn a_hit_after_a_later_run_events_request_is_charged_as_a_transfer() {
        let p = CostParams::default();
        let run = |steal_at: u64| {
            let mut m = Model::new(p, vec![0, 0, 0]);
            m.access(0, 5, true, true);
            // CPU 1 takes the line at 1000 (busy 1000-1017) and reads it again at 1100, in
            // the same event: a hit, while the line is busy, so recorded.
            m.clock = 1000;
            assert_eq!(m.access(1, 5, true, false), (p.t_local, false));
            m.clock = 1100;
            assert_eq!(m.access(1, 5, false, false), (p.t_hit, true));
            m.note_hit_fn(3);
            // An event run later: CPU 2 writes the line at `steal_at`.
            m.clock = steal_at;
            m.access(2, 5, true, false);
            m.report(1)
        };
        // CPU 2's request reaches CPU 1 at 1050 + 35, before CPU 1's read at 1100: the read
        // needed the line back, a transfer charged to its function (3, `nohz_balancer_kick`).
        let stolen = run(1050);
        assert_eq!(stolen.stolen, 1);
        assert_eq!(stolen.fn_ns[3], p.t_local);
        assert_eq!(stolen.fn_transfers[3], 1);
        // At 1080 the request reaches CPU 1 at 1115, after its read: nothing changes.
        let late = run(1080);
        assert_eq!(late.stolen, 0);
        assert_eq!(late.fn_ns[3], 0);
    }

    #[test]
    fn reads_of_a_shared_line_do_not_queue() {
        let p = CostParams {
            occupancy_pct: 100,
            ..CostParams::default()
        };
        let mut m = Model::new(p, vec![0, 0, 0, 1]);
        m.access(0, 9, true, true);
        // CPU 1 takes the line from its owner: the line is busy 100-170.
        m.clock = 100;
        assert_eq!(m.access(1, 9, false, false), (p.t_local, false));
        // No core owns it now: CPU 2 and CPU 3 (the other socket, from the nearest copy, which
        // is remote) read it at once, in parallel.
        m.clock = 100;
        assert_eq!(m.access(2, 9, false, false), (p.t_local, false));
        m.clock = 100;
        assert_eq!(m.access(3, 9, false, false), (p.t_remote, false));
        // A write (after CPU 0's copy has gone) queues behind the ownership transfer, not
        // behind the shared reads.
        m.clock = 140;
        assert_eq!(m.access(0, 9, true, true), (30 + p.t_local, false));
        assert_eq!(m.report(1).wait_ns, 30);
    }
}
