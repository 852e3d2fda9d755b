//! The cpuidle governor: whether an idle pass stops the tick, from the idle periods the CPU
//! has had.
//!
//! C source: drivers/cpuidle/governors/menu.c (`menu_select`, `menu_update`).
//!
//! Simplified to the tick decision: the prediction is the shorter of the time to the CPU's
//! next timer and the plain mean of its last [`IDLE_HISTORY`] idle periods (the menu
//! governor's typical interval also drops outliers), and the tick stops when it is at least a
//! tick long; no idle states to choose among. The platform's `cpuidle_select`
//! (`engine/mod.rs`) asks it; the history is kept whichever governor runs.

use super::Engine;
use nohz::Policy;

/// The cpuidle governor the engine's platform runs (`cpuidle_select`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Governor {
    /// No cpuidle driver: every idle pass stops the tick (`cpuidle_select` answers `None`,
    /// the default idle path).
    #[default]
    None,
    /// A menu-like governor: it predicts the coming idle period as the shorter of the time to
    /// the CPU's next timer and the mean of its last [`IDLE_HISTORY`] idle periods, and asks
    /// to stop the tick only when that is at least a tick long (the menu governor's
    /// `predicted_ns < TICK_NSEC` rule; the crate keeps a tick stopped once it is).
    Menu,
}

impl Governor {
    /// The governor's name (`none`, `menu`).
    pub fn name(self) -> &'static str {
        match self {
            Governor::None => "none",
            Governor::Menu => "menu",
        }
    }
}

/// How many past idle periods the menu-like governor averages.
pub const IDLE_HISTORY: usize = 8;

/// The longest idle period the menu-like governor learns (the menu governor's 9/10 of
/// `MAX_INTERESTING`, 50 ms).
const MENU_MAX_NS: u64 = 45_000_000;

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// The menu-like governor's prediction of `c`'s coming idle period: the time to its next
    /// timer, or the mean of its last idle periods if that is shorter (until it has a full
    /// history, the timer alone).
    pub(super) fn predicted_idle(&self, c: usize) -> u64 {
        let s = &self.cpus[c];
        let timer = s
            .timers
            .borrow()
            .first()
            .map_or(u64::MAX, |&(at, _)| at.saturating_sub(self.now()));
        if s.idle_seen.get() < IDLE_HISTORY as u64 {
            return timer;
        }
        let typical = s.idle_hist.get().iter().sum::<u64>() / IDLE_HISTORY as u64;
        timer.min(typical)
    }

    /// `menu_update`: `c` slept `slept` ns in its idle state; `by_kept_tick`: the tick the
    /// governor kept woke it. The history learns the idle period, as the menu governor
    /// measures it.
    pub(super) fn menu_update(&self, c: usize, by_kept_tick: bool, slept: u64) {
        let s = &self.cpus[c];
        // The menu governor's rule for a wakeup by the tick it kept: the idle period would
        // have lasted until the CPU's next timer, so that (capped) is what it learns.
        let measured = if by_kept_tick {
            let next = s.timers.borrow().first().map(|&(at, _)| at);
            next.map_or(MENU_MAX_NS, |at| at.saturating_sub(s.halted_at.get()))
                .min(MENU_MAX_NS)
        } else {
            slept
        };
        let mut hist = s.idle_hist.get();
        hist[(s.idle_seen.get() % IDLE_HISTORY as u64) as usize] = measured;
        s.idle_hist.set(hist);
        s.idle_seen.set(s.idle_seen.get() + 1);
    }
}
