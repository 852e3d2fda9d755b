//! A trace of placement and balancing decisions, for following one collision from start to
//! end: set `NOHZ_ENGINE_TRACE=FROM_US-TO_US` (simulated microseconds of each run) and every
//! wakeup's placement, every kick decision and every task a balancer moves within that window
//! is printed to stderr, one line each:
//!
//! - `wake T waker=W prev=P -> C nr=N idle_in_cpuset=I`: task T, woken from CPU W, last ran on
//!   P, queued on C, which then holds N tasks, while I CPUs of C's cpuset are idle.
//! - `kick cpu=C flags=F outcome=O idle_mask=M idle_mask_hk=H idle=I idle_hk=J`: the busy
//!   tick on C asked for balancing (F) and `kick_ilb` did O (`NoIlb`: `find_new_ilb` found no
//!   idle housekeeping CPU); M CPUs were in `nohz.idle_cpus_mask`, H of them housekeeping; I
//!   CPUs were idle, J of them housekeeping.
//! - `newidle cpu=C avg_idle=A cost=K pulled=B waiting_in_cpuset=W queued_on=[(CPU, N)..]`:
//!   C's newidle walk (K ns of it; none when `avg_idle` A is below the domain's
//!   `max_newidle_lb_cost`) pulled a task or not, while W tasks waited on run queues of C's
//!   cpuset (N on each CPU listed): `pulled=false` with W > 0 is a CPU going idle while a task
//!   waits.
//! - `pull BY src=S -> dst=D tasks=[..] by_cpu=B`: a balancer (`newidle`, `periodic`, or
//!   `ilb` when the CPU running it is not D) moved the tasks from S to D.
//!
//! Off (the default) it costs one load per hook. Lines carry `at=NS`; runs of a `--runs`
//! loop each print theirs, so trace one run (`--runs 1 --policy legacy`).

use super::{CAP, Engine, cost};
use nohz::{KickDecision, Policy};
use std::sync::OnceLock;

/// The window of simulated time, in ns, from `NOHZ_ENGINE_TRACE`.
fn window() -> Option<(u64, u64)> {
    static W: OnceLock<Option<(u64, u64)>> = OnceLock::new();
    *W.get_or_init(|| {
        let v = std::env::var("NOHZ_ENGINE_TRACE").ok()?;
        let (a, b) = v.split_once('-')?;
        let from = a.trim().parse::<u64>().ok()?;
        let to = b.trim().parse::<u64>().ok()?;
        Some((from * 1_000, to * 1_000))
    })
}

/// Whether `now` (ns) is inside the trace window.
pub(super) fn on(now: u64) -> bool {
    window().is_some_and(|(a, b)| (a..=b).contains(&now))
}

/// Prints one trace line at `now`.
pub(super) fn line(now: u64, text: std::fmt::Arguments<'_>) {
    eprintln!("trace at={now} {text}");
}

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// CPUs of `c`'s cpuset that are idle now.
    pub(super) fn idle_in_cpuset(&self, c: usize) -> usize {
        self.shape.cpuset(c).filter(|&o| self.idle_cpu(o)).count()
    }

    /// A kick decision's trace line (`trace.rs`).
    pub(super) fn trace_kick(&self, c: usize, decision: Option<KickDecision<CAP>>) {
        let Some(KickDecision::Kick { flags, outcome }) = decision else {
            return;
        };
        let (mask, mask_hk) = cost::unrecorded(|| {
            self.m.nohz_idle_cpus().fold((0, 0), |(n, h), cpu| {
                (
                    n + 1,
                    h + usize::from(!self.shape.is_nohz_full(cpu.index())),
                )
            })
        });
        let idle: Vec<usize> = (0..self.shape.cpus).filter(|&o| self.idle_cpu(o)).collect();
        let idle_hk = idle
            .iter()
            .filter(|&&o| !self.shape.is_nohz_full(o))
            .count();
        line(
            self.now(),
            format_args!(
                "kick cpu={c} flags={flags:?} outcome={outcome:?} idle_mask={mask} \
                 idle_mask_hk={mask_hk} idle={} idle_hk={idle_hk}",
                idle.len()
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn off_without_the_variable() {
        // The test environment does not set it; the window parses once.
        if std::env::var("NOHZ_ENGINE_TRACE").is_err() {
            assert!(!super::on(0));
        }
    }
}
